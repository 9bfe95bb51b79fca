"""start_trial() and a trial's judgement (DESIGN 18) against a fake trial endpoint whose answers
are built as the service builds them: the trial licence plus a check of that term."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pytest

from client_fixtures import MY_FP, Clock
from conftest import VECTORS
from fake_service import CHECK_ID, CHECK_TOKEN, KEY, OTHER_KEY, PUBLIC_KEY, T0, FakeService, genuine, online_licence
from licensor import LicenceClient, LicensorError, TrialStart, file_store, memory_store

DAY = 86_400
OTHER_FP = VECTORS["fingerprints"][1]["fingerprint"]
LID = "0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01"


def trial_licence(private_pem: str = KEY["privateKeyPem"], **overrides: Any) -> str:
    """A trial as the service signs it: ONLINE, grace 0, this machine's fp, ``trl`` after ``max``."""
    claims = {"lid": LID, "iat": int(T0), "exp": int(T0) + 14 * DAY, "grace": 0, "fp": MY_FP, "fpn": 3, "mm": 1, "chk": 3600, "max": DAY, "trl": True}
    claims.update(overrides)
    return online_licence(private_pem, **claims)


def trial_answer(body: dict[str, Any], licence: str | None = None, **signed: Any) -> dict[str, Any]:
    """The start's answer: the term, and a check of it with the request's fingerprint and nonce."""
    licence = licence or trial_licence()
    return {"license": licence, **genuine({**body, "license": licence}, **signed)}


@pytest.fixture
def start(service: FakeService, clock: Clock, tmp_path: Path) -> Callable[..., TrialStart]:
    def start(email: str | None = None, **options: Any) -> TrialStart:
        settings: dict[str, Any] = {
            "base_url": service.url,
            "slug": "acme",
            "product_key": "cad",
            "check_id": CHECK_ID,
            "check_token": CHECK_TOKEN,
            "public_keys": [PUBLIC_KEY],
            "store": file_store(tmp_path / "state"),
            "clock": clock,
            "fingerprint": MY_FP,
            "timeout": 2,
        }
        settings.update(options)
        return LicenceClient.start_trial(email=email, **settings)

    return start


def refused(start: Callable[..., TrialStart], **options: Any) -> LicensorError:
    with pytest.raises(LicensorError) as caught:
        start(**options)
    return caught.value


def test_sends_this_machine_and_holds_the_trial(service: FakeService, start: Callable[..., TrialStart]) -> None:
    service.respond = lambda endpoint, body: (201, trial_answer(body))
    trial = start("ada@example.com")
    sent = service.requests[0]
    assert sent["path"] == f"/o/acme/api/public/license/{CHECK_ID}/trial"
    assert sent["headers"]["authorization"] == f"Bearer {CHECK_TOKEN}"
    assert sorted(sent["body"]) == ["devicePublicKey", "email", "fingerprint", "nonce"]
    assert sent["body"]["fingerprint"] == MY_FP and sent["body"]["email"] == "ada@example.com" and len(sent["body"]["devicePublicKey"]) == 43
    assert trial.created and trial.licence == trial_licence() and trial.client.licence == trial.licence
    # ``trl`` is the trial's claim, not a product parameter.
    assert trial.result.licence.claims is not None and trial.result.licence.claims["trl"] is True and "trl" not in trial.result.licence.params
    assert trial.ends_at == "2026-12-06T07:00:00.000Z"
    assert trial.result.state == "VALID" and trial.result.trial is not None
    assert (trial.result.trial.seconds_left, trial.result.trial.converted, trial.result.trial.ends_at) == (14 * DAY, False, trial.ends_at)

    service.respond = lambda endpoint, body: (200, trial_answer(body))
    again = start()
    assert not again.created and "email" not in service.requests[1]["body"]
    assert service.requests[1]["body"]["devicePublicKey"] == sent["body"]["devicePublicKey"]


@pytest.mark.parametrize(
    ("status", "body", "headers", "expected"),
    [
        (403, {"error": "no trials", "reason": "TRIALS_OFF"}, {}, ("TRIALS_OFF", None, None, None, None)),
        (403, {"error": "used", "reason": "TRIAL_USED", "matched": ["machine", "disk"]}, {}, ("TRIAL_USED", None, ["machine", "disk"], None, None)),
        (429, {"error": "limit", "reason": "TRIAL_LIMIT"}, {"retry-after": "3600"}, ("HTTP_STATUS", 429, None, 3600, "TRIAL_LIMIT")),
        (403, {"error": "product inactive"}, {}, ("HTTP_STATUS", 403, None, None, None)),
    ],
)
def test_refusals_have_their_codes(service: FakeService, start: Callable[..., TrialStart], status: int, body: Any, headers: Any, expected: Any) -> None:
    service.respond = lambda endpoint, sent: (status, body, headers)
    error = refused(start)
    assert (error.code, error.status, error.matched, error.retry_after_seconds, error.reason) == expected


@pytest.mark.parametrize(
    "licence",
    [
        pytest.param(lambda: trial_licence(trl=None), id="no trl"),
        pytest.param(lambda: trial_licence(trl="true"), id="trl not true"),
        pytest.param(lambda: trial_licence(fp=OTHER_FP, fpn=5), id="another machine"),
        pytest.param(lambda: trial_licence(prd="cam"), id="another product"),
        pytest.param(lambda: trial_licence(OTHER_KEY["privateKeyPem"]), id="another key"),
    ],
)
def test_refuses_what_is_not_this_machines_trial(service: FakeService, start: Callable[..., TrialStart], licence: Callable[[], str]) -> None:
    service.respond = lambda endpoint, body: (201, trial_answer(body, licence()))
    assert refused(start).code == "BAD_LICENCE"


def test_refuses_a_forged_receipt_and_an_older_term(service: FakeService, start: Callable[..., TrialStart]) -> None:
    service.respond = lambda endpoint, body: (201, trial_answer(body, nonce="x" * 32))
    assert refused(start).code == "BAD_RECEIPT"
    service.respond = lambda endpoint, body: (200, trial_answer(body, trial_licence(iat=int(T0) + 60)))
    start()
    service.respond = lambda endpoint, body: (200, trial_answer(body))
    assert refused(start).code == "OLDER_TERM"


def test_needs_the_file_store_and_the_product_key(start: Callable[..., TrialStart]) -> None:
    assert refused(start, store=memory_store()).code == "INVALID_OPTIONS"
    assert refused(start, product_key="").code == "INVALID_OPTIONS"


def test_a_clock_set_back_never_revives_an_ended_trial(service: FakeService, start: Callable[..., TrialStart], clock: Clock) -> None:
    service.respond = lambda endpoint, body: (200, trial_answer(body))
    client = start().client
    # This machine's clock says two days before the end; the service signs that it has ended.
    clock.now = T0 + 12 * DAY
    service.respond = lambda endpoint, body: (200, genuine(body, "EXPIRED", checked_at=T0 + 15 * DAY, converted=True))
    ended = client.check()
    assert (ended.state, ended.reasons, ended.clock_rollback) == ("INVALID", ["EXPIRED"], False)
    assert ended.trial is not None and ended.trial.seconds_left == 0 and ended.trial.converted
    clock.now = T0 + DAY
    rolled_back = client.check()
    assert (rolled_back.state, rolled_back.reasons, rolled_back.clock_rollback) == ("INVALID", ["EXPIRED"], True)
    assert len(service.requests) == 2


def test_the_end_is_judged_by_the_service_time(service: FakeService, start: Callable[..., TrialStart], clock: Clock) -> None:
    # The service's clock is twelve hours ahead of this machine's.
    service.respond = lambda endpoint, body: (200, trial_answer(body, checked_at=T0 + DAY / 2))
    trial = start()
    assert trial.result.trial is not None and trial.result.trial.seconds_left == 13.5 * DAY
    clock.now = T0 + 13.75 * DAY
    result = trial.client.check()
    assert (result.state, result.reasons, result.clock_rollback) == ("INVALID", ["EXPIRED"], False)
    assert len(service.requests) == 1


def test_converted_is_kept_with_the_answer(service: FakeService, start: Callable[..., TrialStart], clock: Clock, tmp_path: Path) -> None:
    service.respond = lambda endpoint, body: (200, trial_answer(body, converted=True))
    trial = start()
    assert trial.result.trial is not None and trial.result.trial.converted
    clock.now = T0 + 3600
    service.respond = lambda endpoint, body: (503, {})
    down = LicenceClient(
        base_url=service.url, slug="acme", check_id=CHECK_ID, check_token=CHECK_TOKEN, public_keys=[PUBLIC_KEY],
        licence=trial.licence, store=file_store(tmp_path / "state"), clock=clock, fingerprint=MY_FP, timeout=2,
    )
    result = down.check()
    assert result.state == "VALID" and result.no_answer is not None and result.trial is not None
    assert (result.trial.converted, result.trial.seconds_left) == (True, 14 * DAY - 3600)


def test_other_licences_have_no_trial_block(make: Callable[..., LicenceClient]) -> None:
    assert make(online_licence()).check().trial is None
