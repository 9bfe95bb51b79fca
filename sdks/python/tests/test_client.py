"""LicenceClient against a local HTTP stand-in of the check API (DESIGN 2, 5, 6 and 12)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from client_fixtures import MY_FP, Clock
from conftest import VECTORS
from fake_service import BOUND_AT, CHECK_ID, CHECK_TOKEN, MAX_SECONDS, OTHER_KEY, PUBLIC_KEY, T0, FakeService, genuine, iso, lid_of, online_licence
from licensor import LicensorError, file_store, memory_store
from licensor._wire import fp_digest

OTHER_FP = VECTORS["fingerprints"][3]["fingerprint"]


def state_file(tmp_path: Path, licence: str) -> Path:
    return tmp_path / "state" / "acme" / "cad" / f"{lid_of(licence)}.json"


def test_sends_the_licence_this_machine_and_a_fresh_nonce(service: FakeService, make: Any) -> None:
    licence = online_licence()
    client = make(licence)
    client.check()
    client.check()
    first, second = (request for request in service.requests)
    assert first["path"] == f"/o/acme/api/public/license/{CHECK_ID}/check"
    assert first["headers"]["authorization"] == f"Bearer {CHECK_TOKEN}"
    assert first["headers"]["content-type"] == "application/json"
    assert set(first["body"]) == {"license", "fingerprint", "nonce"}
    assert (first["body"]["license"], first["body"]["fingerprint"]) == (licence, MY_FP)
    assert len(first["body"]["nonce"]) == 32 and first["body"]["nonce"] != second["body"]["nonce"]


def test_is_valid_on_a_verified_answer_that_grants_and_saves_it_in_the_shared_format(make: Any, tmp_path: Path) -> None:
    licence = online_licence()
    result = make(licence).check()
    assert (result.state, result.reasons, result.fresh, result.age_seconds, result.no_answer, result.clock_rollback) == ("VALID", [], True, 0, None, False)
    saved = json.loads(state_file(tmp_path, licence).read_text())
    assert saved == {
        "format": 1,
        "lid": lid_of(licence),
        "newestIat": int(T0) - 86_400 * 30,
        "offsetMs": 0,
        "answer": {
            "tag": "SVCR1",
            "lid": lid_of(licence),
            "status": "ACTIVE",
            "nonce": result.answer.nonce,
            "checkedAt": iso(T0),
            "boundAt": BOUND_AT,
            "fpDigest": fp_digest(MY_FP),
            "leaseEndsAt": "",
            "receipt": result.answer.receipt,
            "renewed": False,
            "converted": False,
        },
    }
    assert state_file(tmp_path, licence).stat().st_mode & 0o777 == 0o600
    assert state_file(tmp_path, licence).parent.stat().st_mode & 0o777 == 0o700
    assert not list(state_file(tmp_path, licence).parent.glob("*.lock"))


def test_accepts_a_receipt_signed_by_an_older_key_of_the_products_history(service: FakeService, make: Any) -> None:
    licence = online_licence(OTHER_KEY["privateKeyPem"])
    service.respond = lambda endpoint, body: (200, genuine(body, private_pem=OTHER_KEY["privateKeyPem"]))
    assert make(licence, public_keys=[PUBLIC_KEY, OTHER_KEY["publicKeyPem"]]).check().state == "VALID"


def test_surfaces_renewed_for_a_superseded_term_which_stays_licensed(service: FakeService, make: Any) -> None:
    service.respond = lambda endpoint, body: (200, genuine(body, valid=False, reason="SUPERSEDED", renewed=True))
    result = make(online_licence()).check()
    assert (result.state, result.renewed, result.server_reason) == ("VALID", True, "SUPERSEDED")


@pytest.mark.parametrize(
    ("status", "bound_at", "valid", "state", "reasons"),
    [
        ("REVOKED", BOUND_AT, True, "INVALID", ["REVOKED"]),
        ("ACTIVE", BOUND_AT, False, "VALID", []),
        ("ACTIVE", "", True, "INVALID", ["NO_SEAT"]),
        ("", "", True, "INVALID", ["UNKNOWN_LICENCE"]),
        ("EXPIRED", BOUND_AT, True, "INVALID", ["EXPIRED"]),
        ("PENDING", BOUND_AT, True, "INVALID", ["NOT_YET_VALID"]),
        ("GRACE", BOUND_AT, False, "VALID", []),
    ],
)
def test_takes_the_verdict_from_the_signed_fields_whatever_valid_says(service: FakeService, make: Any, status: str, bound_at: str, valid: bool, state: str, reasons: list[str]) -> None:
    service.respond = lambda endpoint, body: (200, {**genuine(body, status, bound_at), "valid": valid})
    result = make(online_licence()).check()
    assert (result.state, result.reasons) == (state, reasons)


def test_keeps_a_negative_verdict_whatever_its_age_until_a_later_answer_says_otherwise(service: FakeService, make: Any, clock: Clock) -> None:
    client = make(online_licence())
    service.respond = lambda endpoint, body: (200, genuine(body, "REVOKED"))
    assert client.check().state == "INVALID"
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    clock.now += 10 * MAX_SECONDS
    late = client.check()
    assert (late.state, late.reasons, late.fresh, late.no_answer.code, late.no_answer.status) == ("INVALID", ["REVOKED"], False, "HTTP_STATUS", 503)
    service.respond = lambda endpoint, body: (200, genuine(body, checked_at=clock.now))
    assert client.check().state == "VALID"


def test_sends_the_machine_label_only_when_one_is_chosen(service: FakeService, make: Any) -> None:
    make(online_licence(), machine_label="Ada's laptop").check()
    make(online_licence()).check()
    assert service.requests[0]["body"]["machineLabel"] == "Ada's laptop"
    assert "machineLabel" not in service.requests[1]["body"]


def test_refuses_a_licence_for_another_product_or_organisation_sending_nothing(service: FakeService, make: Any) -> None:
    assert make(online_licence(org="other")).check().reasons == ["WRONG_PRODUCT"]
    assert make(online_licence(), product_key="other").check().reasons == ["WRONG_PRODUCT"]
    assert make(online_licence(), product_key="cad").check().state == "VALID"
    assert len(service.requests) == 1


def test_refuses_a_stored_term_older_than_one_already_seen(service: FakeService, make: Any, tmp_path: Path) -> None:
    newer = online_licence()
    lid = lid_of(newer)
    assert make(newer).check().state == "VALID"
    older = online_licence(lid=lid, iat=int(T0) - 86_400 * 60)
    # Another process (a restart) with the older string: the state remembers the newer term.
    result = make(older).check()
    assert (result.state, result.reasons) == ("INVALID", ["OLDER_TERM"])
    assert len(service.requests) == 1


FORGERIES: dict[str, Any] = {
    "a 403 from a middlebox": lambda body: (403, {"error": "forbidden"}),
    "a 500": lambda body: (500, {"error": "boom"}),
    "a body that is not JSON": lambda body: (200, b"<html>"),
    "a JSON array": lambda body: (200, [1]),
    "a body with duplicate keys": lambda body: (200, b'{"status":"ACTIVE","status":"REVOKED"}'),
    "no receipt fields": lambda body: (200, {"valid": True}),
    "a receipt for another nonce (replay)": lambda body: (200, genuine(body, nonce="x" * 32)),
    "a receipt for another licence": lambda body: (200, genuine(body, lid="another")),
    "a receipt for another machine": lambda body: (200, genuine(body, fingerprint=OTHER_FP)),
    "a receipt signed by another key": lambda body: (200, genuine(body, private_pem=OTHER_KEY["privateKeyPem"])),
    "a genuine REVOKED receipt with status changed": lambda body: (200, {**genuine(body, "REVOKED"), "status": "ACTIVE"}),
    "an unparseable checkedAt": lambda body: (200, {**genuine(body), "checkedAt": "yesterday"}),
}


@pytest.mark.parametrize("name", FORGERIES)
def test_counts_a_forged_or_failed_answer_as_no_answer(service: FakeService, make: Any, name: str) -> None:
    service.respond = lambda endpoint, body: FORGERIES[name](body)
    result = make(online_licence()).check()
    assert (result.state, result.answer, result.fresh) == ("STALE", None, None)
    assert result.no_answer is not None and result.no_answer.code in ("HTTP_STATUS", "BAD_RESPONSE", "BAD_RECEIPT")


def test_a_service_that_cannot_be_reached_or_is_too_slow_is_no_answer(service: FakeService, make: Any) -> None:
    unreachable = make(online_licence(), base_url="http://127.0.0.1:9").check()
    assert unreachable.no_answer.code == "NETWORK"

    def slow(endpoint: str, body: Any) -> Any:
        time.sleep(1.5)
        return 200, genuine(body)

    service.respond = slow
    started = time.monotonic()
    result = make(online_licence(), timeout=0.3).check()
    assert (result.state, result.no_answer.code) == ("STALE", "TIMEOUT")
    assert time.monotonic() - started < 1.2


def test_turns_stale_once_max_passes_without_a_verified_answer(service: FakeService, make: Any, clock: Clock) -> None:
    client = make(online_licence())
    assert client.check().state == "VALID"
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    clock.now += MAX_SECONDS
    within = client.check()
    assert (within.state, within.fresh, within.age_seconds) == ("VALID", False, MAX_SECONDS)
    clock.now += 1
    assert client.check().state == "STALE"


def test_a_licence_without_max_is_valid_only_on_a_fresh_answer(service: FakeService, make: Any, clock: Clock) -> None:
    client = make(online_licence(max=None))
    assert client.check().state == "VALID"
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    clock.now += 1
    assert client.check().state == "STALE"


def test_detects_a_clock_rolled_back_before_the_last_verified_answer(service: FakeService, make: Any, clock: Clock) -> None:
    client = make(online_licence())
    client.check()
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    clock.now -= 59
    assert (client.check().state, client.check().clock_rollback) == ("VALID", False)
    clock.now -= 2
    rolled = client.check()
    assert (rolled.state, rolled.clock_rollback) == ("STALE", True)
    # A fresh answer proves itself by its nonce, rollback or not.
    service.respond = lambda endpoint, body: (200, genuine(body))
    fresh = client.check()
    assert (fresh.state, fresh.clock_rollback) == ("VALID", True)


def test_a_client_clock_hours_off_is_skew_not_rollback(service: FakeService, make: Any, clock: Clock) -> None:
    clock.now = T0 - 5 * 3600  # this machine runs five hours behind the service
    client = make(online_licence())
    assert client.check().state == "VALID"
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    clock.now += 600
    later = client.check()
    assert (later.state, later.clock_rollback, later.age_seconds) == ("VALID", False, 600)


def test_ignores_a_saved_answer_that_was_edited_or_belongs_to_another_machine(service: FakeService, make: Any, tmp_path: Path) -> None:
    licence = online_licence()
    service.respond = lambda endpoint, body: (200, genuine(body, "REVOKED"))
    assert make(licence).check().state == "INVALID"
    path = state_file(tmp_path, licence)
    saved = json.loads(path.read_text())
    saved["answer"]["status"] = "ACTIVE"
    path.write_text(json.dumps(saved))
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    edited = make(licence).check()
    assert (edited.state, edited.answer) == ("STALE", None)
    # Put back as signed: it counts again, but not on another machine.
    saved["answer"]["status"] = "REVOKED"
    path.write_text(json.dumps(saved))
    assert make(licence).check().state == "INVALID"
    assert make(licence, fingerprint=OTHER_FP).check().state == "STALE"


def test_a_corrupt_state_file_is_empty_but_keeps_its_newest_term_and_offset(service: FakeService, make: Any, tmp_path: Path) -> None:
    newer = online_licence()
    make(newer).check()
    path = state_file(tmp_path, newer)
    saved = json.loads(path.read_text())
    path.write_text(json.dumps({**saved, "answer": {"tag": "SVCR1"}}))
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    older = online_licence(lid=lid_of(newer), iat=int(T0) - 86_400 * 60)
    assert make(older).check().reasons == ["OLDER_TERM"]
    path.write_text("{not json")
    assert make(newer).check().state == "STALE"
    service.respond = lambda endpoint, body: (200, genuine(body))
    assert make(newer).check().state == "VALID"
    assert json.loads(path.read_text())["answer"]["status"] == "ACTIVE"


def test_a_state_that_cannot_be_written_is_reported_and_changes_nothing(make: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = make(online_licence(), store=file_store(blocker / "state")).check()
    assert result.state == "VALID" and isinstance(result.store_error, OSError)


def test_memory_store_keeps_answers_for_the_process(service: FakeService, make: Any, tmp_path: Path) -> None:
    store = memory_store()
    licence = online_licence()
    make(licence, store=store).check()
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    assert make(licence, store=store).check().state == "VALID"
    assert not (tmp_path / "state").exists()


def test_never_sends_a_licence_that_fails_offline(service: FakeService, make: Any) -> None:
    expired = make(online_licence(exp=int(T0) - 86_400 * 8)).check()
    assert (expired.state, expired.reasons, expired.no_answer) == ("INVALID", ["EXPIRED"], None)
    forged = make(online_licence(OTHER_KEY["privateKeyPem"])).check()
    assert forged.reasons == ["BAD_SIGNATURE"]
    bound = make(online_licence(fp=OTHER_FP)).check()
    assert bound.reasons == ["FINGERPRINT_MISMATCH"]
    assert service.requests == []


def test_refuses_options_it_cannot_work_with(make: Any) -> None:
    licence = online_licence()
    cases: list[tuple[dict[str, Any], str]] = [
        ({"check_token": "svcc_other_" + "a" * 64}, "INVALID_OPTIONS"),
        ({"slug": ""}, "INVALID_OPTIONS"),
        ({"timeout": 0}, "INVALID_OPTIONS"),
        ({"public_keys": []}, "INVALID_KEY"),
        ({"licence": online_licence(typ="OFFLINE", chk=None, max=None)}, "NOT_CHECKABLE"),
    ]
    for options, code in cases:
        with pytest.raises(LicensorError) as raised:
            make(**{"licence": licence, **options})
        assert raised.value.code == code, options


def test_fetch_is_never_called_by_check(service: FakeService, make: Any) -> None:
    service.respond = lambda endpoint, body: (200, genuine(body, renewed=True))
    make(online_licence()).check()
    assert [request["path"].rsplit("/", 1)[1] for request in service.requests] == ["check"]


def test_fetch_returns_the_new_term_after_verifying_it_and_uses_it_from_then_on(service: FakeService, make: Any, tmp_path: Path) -> None:
    current = online_licence()
    renewed = online_licence(lid=lid_of(current), iat=int(T0) - 3600)
    service.respond = lambda endpoint, body: (200, {"license": renewed} if endpoint == "fetch" else genuine(body))
    client = make(current)
    assert client.fetch() == renewed and client.licence == renewed
    assert service.requests[0]["body"] == {"license": current, "fingerprint": MY_FP}
    client.check()
    assert service.requests[1]["body"]["license"] == renewed
    # The newer term is remembered: the old string is now refused, even by a new client.
    assert json.loads(state_file(tmp_path, current).read_text())["newestIat"] == int(T0) - 3600
    assert make(current).check().reasons == ["OLDER_TERM"]


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        (lambda current: {"license": online_licence(lid=lid_of(current), iat=int(T0) - 86_400 * 60)}, "OLDER_TERM"),
        (lambda current: {"license": online_licence()}, "LID_MISMATCH"),
        (lambda current: {"license": online_licence(OTHER_KEY["privateKeyPem"], lid=lid_of(current))}, "BAD_LICENCE"),
        (lambda current: {"license": online_licence(lid=lid_of(current), prd="other")}, "BAD_LICENCE"),
        (lambda current: {"nothing": True}, "BAD_RESPONSE"),
    ],
)
def test_fetch_refuses_what_is_not_a_newer_term_of_this_licence(service: FakeService, make: Any, answer: Any, code: str) -> None:
    current = online_licence()
    service.respond = lambda endpoint, body: (200, answer(current))
    client = make(current, product_key="cad")
    with pytest.raises(LicensorError) as raised:
        client.fetch()
    assert raised.value.code == code
    assert client.licence == current


def test_fetch_failures_carry_the_http_status(service: FakeService, make: Any) -> None:
    service.respond = lambda endpoint, body: (404, {"error": "fetch is off"})
    with pytest.raises(LicensorError) as raised:
        make(online_licence()).fetch()
    assert (raised.value.code, raised.value.status) == ("HTTP_STATUS", 404)


def test_release_frees_the_seat_and_forgets_the_answer_but_not_the_term_or_offset(service: FakeService, make: Any, tmp_path: Path, clock: Clock) -> None:
    clock.now = T0 - 120
    licence = online_licence()
    client = make(licence)
    client.check()

    def respond(endpoint: str, body: Any) -> Any:
        if endpoint == "release":
            return 200, {"lid": lid_of(licence), "released": True, "releasedAt": iso(T0), "nonce": body["nonce"]}
        return 503, {"error": "down"}

    service.respond = respond
    assert client.release().released is True
    release = service.requests[-1]
    assert release["path"].endswith("/release") and set(release["body"]) == {"license", "fingerprint", "nonce"}
    saved = json.loads(state_file(tmp_path, licence).read_text())
    assert (saved["answer"], saved["offsetMs"], saved["newestIat"]) == (None, 120_000, int(T0) - 86_400 * 30)
    assert client.check().state == "STALE"


def test_release_answers_the_services_refusal_and_raises_for_anything_else(service: FakeService, make: Any) -> None:
    licence = online_licence()
    service.respond = lambda endpoint, body: (200, {"lid": lid_of(licence), "released": False, "reason": "AT_ISSUE", "nonce": body["nonce"]})
    result = make(licence).release()
    assert (result.released, result.reason) == (False, "AT_ISSUE")
    service.respond = lambda endpoint, body: (200, {"lid": lid_of(licence), "released": True, "nonce": "replayed"})
    with pytest.raises(LicensorError) as bad:
        make(licence).release()
    assert bad.value.code == "BAD_RESPONSE"
    service.respond = lambda endpoint, body: (403, {"error": "self-service release limit reached"})
    with pytest.raises(LicensorError) as limit:
        make(licence).release()
    assert (limit.value.code, limit.value.status) == ("HTTP_STATUS", 403)


def test_licensor_error_carries_its_code_and_status() -> None:
    error = LicensorError("HTTP_STATUS", "the service answered 503", 503)
    assert (error.code, error.status, str(error)) == ("HTTP_STATUS", 503, "the service answered 503")
    assert isinstance(error, Exception)
