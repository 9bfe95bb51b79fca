"""record_usage() and usage() (DESIGN 19) against the stand-in service: the queue on disk, SVCU1."""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any, Callable

import pytest

from client_fixtures import Clock
from fake_service import KEY, OTHER_KEY, T0, FakeService, iso, lid_of, online_licence, usage_answer
from licensor import LicenceClient, LicensorError, UsageBalance, memory_store
from licensor.usage import usage_message

Make = Callable[..., LicenceClient]


def counting(service: FakeService, **options: Any) -> None:
    """The service counts every ACCEPTED event it is sent."""
    total = {"used": 0}

    def respond(endpoint: str, body: dict[str, Any]) -> tuple[int, Any]:
        decide = options.get("results") or (lambda e: "ACCEPTED")
        decided = {e["id"]: decide(e) for e in body["events"]}
        total["used"] += sum(e["amount"] for e in body["events"] if decided[e["id"]] == "ACCEPTED")
        return 200, usage_answer(body, total["used"], **{**options, "results": lambda e: decided[e["id"]]})

    service.respond = respond


def queue_of(tmp_path: Path, licence: str) -> Path:
    return tmp_path / "state" / "usage" / lid_of(licence)


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_the_message_is_designs_example() -> None:
    message = usage_message("L", "ACTIVE", "N", "2026-11-22T07:00:00.000Z", "2026-11-20T09:00:00.000Z", "D", [("e-1", "ACCEPTED")], [UsageBalance("exports", 3, 1_000_000_000_000, 0, 999_999_999_997, "2026-12-01T00:00:00.000Z")])
    assert message is not None and message.decode().replace("\x1f", "␟") == (
        "SVCU1␟L␟ACTIVE␟N␟2026-11-22T07:00:00.000Z␟2026-11-20T09:00:00.000Z␟D␟1␟e-1␟ACCEPTED␟1␟exports␟3␟1000000000000␟0␟999999999997␟2026-12-01T00:00:00.000Z"
    )
    assert usage_message("L", "", "N", "T", "", "D", [], [UsageBalance("seats", 0, None, None, None, None)]) == b"SVCU1\x1fL\x1f\x1fN\x1fT\x1f\x1fD\x1f0\x1f1\x1fseats\x1f0\x1f\x1f\x1f\x1f"
    assert usage_message("L\x1f", "", "N", "T", "", "D", [], []) is None


def test_the_event_is_queued_before_sending_and_removed_once_its_receipt_verifies(service: FakeService, make: Make, tmp_path: Path, clock: Clock) -> None:
    licence = online_licence()
    folder = queue_of(tmp_path, licence)
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    first = make(licence).record_usage("exports", 3)
    assert first.licensed is None and first.meters is None and first.fresh is None and first.no_answer.status == 503
    [event] = first.events
    assert event.result == "QUEUED" and len(event.id) == 22
    path = folder / f"{event.id}.json"
    assert json.loads(path.read_text()) == {"id": event.id, "meter": "exports", "amount": 3, "at": iso(T0)}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(folder.stat().st_mode) == 0o700

    # A restart: another client on the same state sends what the first queued, oldest first, then its own.
    counting(service)
    clock.now += 60
    report = make(licence).record_usage("exports", 2)
    sent = service.requests[-1]["body"]
    assert service.requests[-1]["path"].endswith("/usage") and sorted(sent) == ["events", "fingerprint", "license", "nonce"]
    assert sent["events"][0] == {"id": event.id, "meter": "exports", "amount": 3, "at": iso(T0)} and sent["events"][1]["amount"] == 2
    assert report.licensed is True and report.reason is None and report.fresh is True and report.no_answer is None and report.pending == 0
    assert [e.result for e in report.events] == ["ACCEPTED", "ACCEPTED"]
    assert report.meters == [UsageBalance("exports", 5, 1000, 0, 995, "2026-12-01T00:00:00.000Z", 0)]
    assert files(folder) == []
    again = make(licence).usage()
    assert again.events == [] and service.requests[-1]["body"]["events"] == []


@pytest.mark.parametrize(
    "forgery, code",
    [({"private_pem": OTHER_KEY["privateKeyPem"]}, "BAD_RECEIPT"), ({"nonce": "another-nonce-abcdefgh"}, "BAD_RECEIPT"), ({"ids": ["someone-else"]}, "BAD_RECEIPT")],
)
def test_an_answer_that_does_not_verify_keeps_the_event(service: FakeService, make: Make, tmp_path: Path, forgery: dict[str, Any], code: str) -> None:
    licence = online_licence()
    counting(service, **forgery)
    report = make(licence).record_usage("exports")
    assert report.no_answer.code == code and report.meters is None
    assert len(files(queue_of(tmp_path, licence))) == 1


def test_an_altered_balance_or_a_malformed_answer_is_no_answer(service: FakeService, make: Make, tmp_path: Path) -> None:
    licence = online_licence()

    def altered(endpoint: str, body: dict[str, Any]) -> tuple[int, Any]:
        answer = usage_answer(body, 1)
        answer["meters"][0]["used"] = 0
        return 200, answer

    service.respond = altered
    client = make(licence)
    assert client.record_usage("exports").no_answer.code == "BAD_RECEIPT"
    service.respond = lambda endpoint, body: (200, {"events": [], "meters": [{"key": "exports", "used": 1.5}], "checkedAt": iso(T0), "receipt": "x"})
    assert client.record_usage("exports").no_answer.code == "BAD_RESPONSE"
    assert len(files(queue_of(tmp_path, licence))) == 2


@pytest.mark.parametrize("meter, amount", [("1exports", 1), ("", 1), ("exports", 0), ("exports", -1), ("exports", 1.5), ("exports", 1_000_000_001), ("exports", True), ("exports", "1")])
def test_what_the_service_would_refuse_is_invalid_options(service: FakeService, make: Make, tmp_path: Path, meter: Any, amount: Any) -> None:
    licence = online_licence()
    with pytest.raises(LicensorError) as raised:
        make(licence).record_usage(meter, amount)
    assert raised.value.code == "INVALID_OPTIONS"
    assert service.requests == [] and files(queue_of(tmp_path, licence)) == []


def test_a_memory_store_cannot_queue_but_reads_balances(service: FakeService, make: Make) -> None:
    counting(service)
    client = make(online_licence(), store=memory_store())
    with pytest.raises(LicensorError) as raised:
        client.record_usage("exports")
    assert raised.value.code == "INVALID_OPTIONS" and service.requests == []
    assert client.usage().meters == [UsageBalance("exports", 0, 1000, 0, 1000, "2026-12-01T00:00:00.000Z", 0)]


def test_queue_full_at_1000(service: FakeService, make: Make, tmp_path: Path) -> None:
    licence = online_licence()
    folder = queue_of(tmp_path, licence)
    folder.mkdir(parents=True)
    for i in range(1000):
        (folder / f"event-{i:04}.json").write_text(json.dumps({"id": f"event-{i:04}", "meter": "exports", "amount": 1, "at": iso(T0)}))
    with pytest.raises(LicensorError) as raised:
        make(licence).record_usage("exports")
    assert raised.value.code == "QUEUE_FULL" and len(files(folder)) == 1000 and service.requests == []


def test_batches_of_100_oldest_first(service: FakeService, make: Make, tmp_path: Path) -> None:
    licence = online_licence()
    folder = queue_of(tmp_path, licence)
    folder.mkdir(parents=True)
    for i in range(150):
        event_id = f"e{149 - i:03}"
        (folder / f"{event_id}.json").write_text(json.dumps({"id": event_id, "meter": "exports", "amount": 1, "at": iso(T0 - i // 2)}))
    counting(service)
    report = make(licence).record_usage("exports")
    batches = [r["body"]["events"] for r in service.requests]
    assert [len(b) for b in batches] == [100, 51]
    sent = [e for b in batches for e in b]
    assert sent == sorted(sent, key=lambda e: (e["at"], e["id"])) and sent[0]["id"] == "e000"
    assert report.meters is not None and report.meters[0].used == 151 and files(folder) == []


def test_not_licensed_events_stay_and_other_results_are_final(service: FakeService, make: Make, tmp_path: Path) -> None:
    licence = online_licence()
    folder = queue_of(tmp_path, licence)
    counting(service, status="EXPIRED", results=lambda e: "NOT_LICENSED")
    client = make(licence)
    report = client.record_usage("exports", 4)
    assert report.licensed is False and report.reason == "EXPIRED" and report.events[0].result == "NOT_LICENSED"
    assert report.meters is not None and report.meters[0].pending == 4 and len(files(folder)) == 1
    results = iter(["ACCEPTED", "LIMIT_REACHED", "UNKNOWN_METER", "TOO_OLD", "EVENT_LIMIT", "ID_REUSED"])
    counting(service, results=lambda e: next(results))
    for _ in range(5):
        client.record_usage("exports")
    assert files(folder) == []


def test_nothing_is_sent_before_retry_after(service: FakeService, make: Make, clock: Clock) -> None:
    service.respond = lambda endpoint, body: (429, {"error": "too many"})
    service.headers = {"Retry-After": "30"}
    client = make(online_licence())
    assert client.record_usage("exports").no_answer.status == 429
    counting(service)
    clock.now += 20
    assert client.record_usage("exports").no_answer.status == 429 and len(service.requests) == 1
    clock.now += 11
    report = client.usage()
    assert report.no_answer is None and report.meters is not None and report.meters[0].used == 2


def test_the_last_balances_stand_while_the_service_is_down(service: FakeService, make: Make) -> None:
    counting(service)
    client = make(online_licence())
    client.record_usage("exports", 5)
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    report = client.record_usage("exports", 2)
    assert report.fresh is False and report.licensed is True and report.meters == [UsageBalance("exports", 5, 1000, 0, 995, "2026-12-01T00:00:00.000Z", 2)]


def test_other_licences_events_are_pending_and_never_sent(service: FakeService, make: Make, tmp_path: Path) -> None:
    trial = online_licence()
    service.respond = lambda endpoint, body: (503, {"error": "down"})
    make(trial).record_usage("exports")
    make(trial).record_usage("exports")
    counting(service)
    report = make(online_licence()).record_usage("exports")
    assert report.pending == 2 and len(service.requests[-1]["body"]["events"]) == 1
    assert len(files(queue_of(tmp_path, trial))) == 2


def test_meters_read_the_mtr_claim(make: Make) -> None:
    mtr = [{"k": "exports", "p": "MONTH", "l": 1000, "o": 0}, {"k": "renders", "p": "NONE", "l": None, "o": None}]
    client = make(online_licence(KEY["privateKeyPem"], mtr=mtr))
    assert [(m.key, m.period, m.limit, m.overage) for m in client.meters] == [("exports", "MONTH", 1000, 0), ("renders", "NONE", None, None)]
    assert make(online_licence()).meters == []
