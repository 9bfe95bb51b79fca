"""Floating licences (DESIGN 13): SVCR2 receipts, licensed until the signed lease end, borrowing."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from client_fixtures import Clock
from fake_service import T0, FakeService, floating_licence, genuine, iso, lid_of, online_licence
from licensor import LeaseKeeper, LicensorError

def down(endpoint: str, body: Any) -> Any:
    return 503, {"error": "down"}


def test_a_lease_is_verified_under_svcr2_and_kept_with_its_end(make: Any, tmp_path: Path) -> None:
    licence = floating_licence()
    result = make(licence).check()
    assert (result.state, result.fresh, result.lease_ends_at) == ("VALID", True, iso(T0 + 900))
    saved = json.loads((tmp_path / "state" / "acme" / "cad" / f"{lid_of(licence)}.json").read_text())["answer"]
    assert (saved["tag"], saved["leaseEndsAt"]) == ("SVCR2", iso(T0 + 900))


def test_a_kept_lease_is_licensed_until_its_signed_end_whatever_max_says(service: FakeService, make: Any, clock: Clock) -> None:
    client = make(floating_licence(max=86_400))
    client.check()
    service.respond = down
    clock.now = T0 + 899
    assert client.check().state == "VALID"
    clock.now = T0 + 900
    lapsed = client.check()
    assert (lapsed.state, lapsed.reasons, lapsed.lease_ends_at) == ("STALE", [], iso(T0 + 900))


def test_a_borrowed_lease_outlives_max(service: FakeService, make: Any, clock: Clock) -> None:
    client = make(floating_licence())
    client.check()
    until = iso(T0 + 3 * 86_400)
    borrowed = client.borrow(until)
    request = service.requests[-1]
    assert request["path"].endswith("/borrow") and request["body"]["until"] == until
    assert set(request["body"]) == {"license", "fingerprint", "nonce", "until"}
    assert (borrowed.state, borrowed.lease_ends_at) == ("VALID", until)
    service.respond = down
    clock.now = T0 + 2 * 86_400  # far beyond max (1,800 s)
    assert client.check().state == "VALID"
    clock.now = T0 + 3 * 86_400
    assert client.check().state == "STALE"


def test_the_lease_end_is_judged_with_the_offset_believed_only_up_to_a_minute(service: FakeService, make: Any, clock: Clock) -> None:
    # This machine runs 30 s fast: the offset is believed whole.
    clock.now = T0 + 30
    client = make(floating_licence())
    client.check()
    service.respond = down
    clock.now = T0 + 30 + 899
    assert client.check().state == "VALID"
    clock.now = T0 + 30 + 900
    assert client.check().state == "STALE"
    # Two hours fast: only a minute of it is believed, so the kept lease has lapsed at once.
    service.respond = lambda endpoint, body: (200, genuine(body))
    clock.now = T0 + 7200
    fresh = client.check()
    assert fresh.state == "VALID"
    service.respond = down
    clock.now = T0 + 7200 + 1
    assert client.check().state == "STALE"


@pytest.mark.parametrize(
    ("respond", "state", "reasons", "no_answer"),
    [
        (lambda body: genuine(body, bound_at="", lease_ends_at=""), "INVALID", ["NO_SEAT"], None),
        (lambda body: genuine(body, "EXPIRED", lease_ends_at=""), "INVALID", ["EXPIRED"], None),
        (lambda body: genuine(body, lease_ends_at=""), "INVALID", ["NO_SEAT"], None),
        (lambda body: genuine(body, tag="SVCR1"), "STALE", [], "BAD_RECEIPT"),
        (lambda body: {**genuine(body), "leaseEndsAt": iso(T0 + 86_400)}, "STALE", [], "BAD_RECEIPT"),
        (lambda body: {**genuine(body), "leaseEndsAt": 5}, "STALE", [], "BAD_RESPONSE"),
    ],
    ids=["seats full", "expired", "no lease end signed", "an SVCR1 receipt", "lease end moved later", "lease end not a string"],
)
def test_only_a_signed_lease_end_licenses(service: FakeService, make: Any, respond: Any, state: str, reasons: list[str], no_answer: str | None) -> None:
    service.respond = lambda endpoint, body: (200, respond(body))
    result = make(floating_licence()).check()
    assert (result.state, result.reasons) == (state, reasons)
    assert (result.no_answer.code if result.no_answer else None) == no_answer


def test_a_node_locked_answer_never_carries_a_lease(service: FakeService, make: Any) -> None:
    service.respond = lambda endpoint, body: (200, {**genuine(body), "leaseEndsAt": iso(T0 + 900)})
    result = make(online_licence()).check()
    assert (result.state, result.lease_ends_at, result.answer.tag) == ("VALID", None, "SVCR1")


def test_a_refused_borrow_is_no_answer_with_its_status(service: FakeService, make: Any) -> None:
    client = make(floating_licence())
    client.check()
    service.respond = lambda endpoint, body: (403, {"error": "no live lease on this machine: check first"})
    refused = client.borrow(iso(T0 + 86_400))
    assert (refused.state, refused.fresh, refused.no_answer.code, refused.no_answer.status) == ("VALID", False, "HTTP_STATUS", 403)


def test_borrowing_needs_a_floating_licence_and_a_time(make: Any, service: FakeService) -> None:
    for licence, until in [(online_licence(), iso(T0 + 60)), (floating_licence(), "tomorrow")]:
        with pytest.raises(LicensorError) as raised:
            make(licence).borrow(until)
        assert raised.value.code == "INVALID_OPTIONS"
    assert service.requests == []


def test_release_of_a_borrowed_lease_is_refused_as_borrowed(service: FakeService, make: Any) -> None:
    licence = floating_licence()
    service.respond = lambda endpoint, body: (200, {"lid": lid_of(licence), "released": False, "reason": "BORROWED", "nonce": body["nonce"]})
    result = make(licence).release()
    assert (result.released, result.reason) == (False, "BORROWED")


def wait_for(condition: Any, seconds: float = 5) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def endpoints(service: FakeService) -> list[str]:
    return [request["path"].rsplit("/", 1)[1] for request in service.requests]


def test_the_lease_keeper_renews_until_stopped_then_releases(service: FakeService, make: Any) -> None:
    licence = floating_licence()
    results: list[Any] = []

    def respond(endpoint: str, body: Any) -> Any:
        if endpoint == "release":
            return 200, {"lid": lid_of(licence), "released": True, "releasedAt": iso(T0), "nonce": body["nonce"]}
        return 200, genuine(body)

    service.respond = respond
    keeper = LeaseKeeper(make(licence), on_result=results.append, interval=0.02, handle_signals=False)
    assert keeper.start().state == "VALID"
    wait_for(lambda: len(results) >= 3)
    keeper.stop()
    assert endpoints(service)[-1] == "release" and set(endpoints(service)[:-1]) == {"check"}
    assert all(result.state == "VALID" for result in results)


def test_the_lease_keeper_fetches_a_renewed_term(service: FakeService, make: Any) -> None:
    current = floating_licence()
    renewed = floating_licence(lid=lid_of(current), iat=int(T0) - 60)
    service.respond = lambda endpoint, body: (200, {"license": renewed} if endpoint == "fetch" else genuine(body, renewed=body["license"] == current))
    client = make(current)
    keeper = LeaseKeeper(client, interval=0.02, handle_signals=False)
    keeper.start()
    wait_for(lambda: client.licence == renewed)
    keeper.stop()


def test_the_lease_keeper_retries_at_once_warns_before_the_lease_is_lost_and_reports_the_loss(service: FakeService, make: Any, clock: Clock) -> None:
    at_risk: list[Any] = []
    lost: list[Any] = []
    keeper = LeaseKeeper(make(floating_licence()), on_at_risk=at_risk.append, on_lost=lost.append, interval=0.05, handle_signals=False)
    keeper.start()
    service.respond = down
    clock.now = T0 + 900 - 0.01
    wait_for(lambda: at_risk)
    assert at_risk[0].state == "VALID" and lost == []
    checks = endpoints(service)
    assert checks.count("check") >= 3  # the first lease, then a failed renewal and its retry
    clock.now = T0 + 900
    wait_for(lambda: lost)
    assert lost[0].state == "STALE"
    keeper.stop()
    assert "release" not in endpoints(service)


def test_a_borrowed_lease_is_never_released_on_stop(service: FakeService, make: Any) -> None:
    client = make(floating_licence())
    client.check()
    client.borrow(iso(T0 + 86_400))
    service.respond = lambda endpoint, body: (200, genuine(body, lease_ends_at=iso(T0 + 86_400)))
    keeper = LeaseKeeper(client, interval=60, handle_signals=False)
    keeper.start()
    keeper.stop()
    assert "release" not in endpoints(service)


def test_sigint_releases_the_lease_then_interrupts_as_before(service: FakeService, make: Any) -> None:
    licence = floating_licence()
    service.respond = lambda endpoint, body: (
        200,
        {"lid": lid_of(licence), "released": True, "releasedAt": iso(T0), "nonce": body["nonce"]} if endpoint == "release" else genuine(body),
    )
    before = signal.getsignal(signal.SIGINT)
    keeper = LeaseKeeper(make(licence), interval=60)
    keeper.start()
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
    assert endpoints(service)[-1] == "release"
    assert signal.getsignal(signal.SIGINT) is before
