"""The driver (DESIGN 16) as the shared harness drives it: one JSON line in, one JSON line out."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from conftest import VECTORS
from fake_service import CHECK_ID, CHECK_TOKEN, PUBLIC_KEY, T0, FakeService, floating_licence, genuine, iso, lid_of, online_licence

DRIVER = Path(__file__).resolve().parents[1] / "driver"
OTHER_FP = VECTORS["fingerprints"][3]["fingerprint"]


class Session:
    def __init__(self) -> None:
        self.process = subprocess.Popen([str(DRIVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def send(self, request: dict[str, Any] | str) -> Any:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write((request if isinstance(request, str) else json.dumps(request)) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        return self.process.wait(timeout=10)


@pytest.fixture
def session() -> Iterator[Session]:
    driver = Session()
    yield driver
    driver.close()


def configure(session: Session, service: FakeService, licence: str, state_dir: Path) -> Any:
    return session.send(
        {"op": "configure", "baseUrl": service.url, "slug": "acme", "productKey": "cad", "checkId": CHECK_ID, "checkToken": CHECK_TOKEN,
         "publicKeys": [PUBLIC_KEY], "licence": licence, "stateDir": str(state_dir), "timeoutMs": 2000}
    )


def test_a_session_checks_releases_and_survives_a_restart(session: Session, service: FakeService, tmp_path: Path) -> None:
    licence = online_licence()
    now = T0 + 0
    service.respond = lambda endpoint, body: (200, genuine(body, checked_at=now))
    assert configure(session, service, licence, tmp_path) == {"ok": True, "result": {}}
    assert session.send({"op": "setClock", "offsetMs": round((T0 - time.time()) * 1000)})["ok"]
    checked = session.send({"op": "check"})
    assert checked["ok"] and checked["result"]["state"] == "VALID" and checked["result"]["fresh"] is True
    assert set(checked["result"]) == {"state", "reasons", "fresh", "clockRollback", "ageSeconds", "noAnswer", "renewed", "airGapped", "leaseEndsAt", "trial"}
    verified = session.send({"op": "verify"})["result"]
    assert (verified["valid"], verified["claims"]["lid"]) == (True, lid_of(licence))

    service.respond = lambda endpoint, body: (503, {"error": "down"})
    restarted = Session()
    try:
        configure(restarted, service, licence, tmp_path)
        restarted.send({"op": "setClock", "offsetMs": round((T0 + 60 - time.time()) * 1000)})
        cached = restarted.send({"op": "check"})["result"]
        assert (cached["state"], cached["fresh"], cached["noAnswer"]) == ("VALID", False, {"code": "HTTP_STATUS", "status": 503})
        assert restarted.send({"op": "setFingerprint", "fingerprint": OTHER_FP}) == {"ok": True, "result": {}}
        elsewhere = restarted.send({"op": "check"})["result"]
        assert (elsewhere["state"], elsewhere["fresh"]) == ("STALE", None)
    finally:
        assert restarted.close() == 0


def test_errors_are_answered_with_the_sdks_codes(session: Session, service: FakeService, tmp_path: Path) -> None:
    assert session.send("not json")["error"]["code"] == "INVALID_OPTIONS"
    assert session.send({"op": "launch"})["error"]["code"] == "INVALID_OPTIONS"
    assert session.send({"op": "activationRequest"})["error"] == {"code": "INVALID_OPTIONS", "message": "send configure first"}
    configure(session, service, online_licence(), tmp_path)
    assert session.send({"op": "borrow", "until": "2026-12-01T00:00:00.000Z"})["error"]["code"] == "INVALID_OPTIONS"
    service.respond = lambda endpoint, body: (404, {"error": "fetch is off"})
    assert session.send({"op": "fetch"}) == {"ok": False, "error": {"code": "HTTP_STATUS", "message": "the service answered 404", "status": 404}}
    offline = online_licence(typ="OFFLINE", chk=None, max=None)
    assert configure(session, service, offline, tmp_path)["error"]["code"] == "NOT_CHECKABLE"
    assert session.send({"op": "verify"})["result"]["valid"] is True
    assert session.send({"op": "fingerprint"})["result"]["fingerprint"].startswith("SVC1.")


def test_a_floating_licence_answers_its_lease_end_and_borrows(session: Session, service: FakeService, tmp_path: Path) -> None:
    configure(session, service, floating_licence(), tmp_path)
    session.send({"op": "setClock", "offsetMs": round((T0 - time.time()) * 1000)})
    checked = session.send({"op": "check"})["result"]
    assert (checked["state"], checked["leaseEndsAt"]) == ("VALID", iso(T0 + 900))
    until = iso(T0 + 86_400)
    borrowed = session.send({"op": "borrow", "until": until})["result"]
    assert (borrowed["state"], borrowed["fresh"], borrowed["leaseEndsAt"]) == ("VALID", True, until)
    assert service.requests[-1]["body"]["until"] == until
