"""Usage metering on the client (DESIGN 19): the queue of events on disk and the SVCU1 receipt."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Mapping, Sequence

from ._wire import b64u_encode, is_int, strict_json
from .errors import LicensorError
from .store import make_folders, write_atomically

#: The largest amount one event may carry.
MAX_AMOUNT = 1_000_000_000
#: Queued events of one licence beyond which record_usage() raises QUEUE_FULL.
QUEUE_LIMIT = 1000
#: Events per usage request at most.
BATCH_SIZE = 100

METER_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
_EVENT_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
_AT = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z")
_ASCII = re.compile(r"[\x20-\x7e]*")

#: An event's result, or ``QUEUED``: still on disk (no answer yet; ``NOT_LICENSED`` stays too).
UsageEventResult = Literal["ACCEPTED", "LIMIT_REACHED", "UNKNOWN_METER", "NOT_LICENSED", "TOO_OLD", "EVENT_LIMIT", "ID_REUSED", "QUEUED"]


@dataclass(frozen=True)
class LicenceMeter:
    """One of the licence's signed meters (``mtr``): ``limit`` None is unlimited, ``overage`` None no ceiling."""

    key: str
    period: Literal["NONE", "DAY", "MONTH", "YEAR"]
    limit: int | None
    overage: int | None


@dataclass(frozen=True)
class UsageBalance:
    """A meter's balance as the last verified usage receipt signed it, and what is queued for it here."""

    key: str
    used: int
    limit: int | None
    overage: int | None
    remaining: int | None
    #: When the period's count starts again (ISO time); None for a NONE period.
    resets_at: str | None
    #: The amount queued on this machine for this meter and not counted yet.
    pending: int = 0


@dataclass(frozen=True)
class UsageEvent:
    """A queued event and what became of it."""

    id: str
    meter: str
    amount: int
    result: UsageEventResult


@dataclass(frozen=True)
class UsageReport:
    """What record_usage() and usage() answer."""

    #: Licensed on this machine by the signed fields of this client's last verified usage answer; None before one.
    licensed: bool | None
    #: Why not licensed, as for a check; None when licensed or without an answer.
    reason: str | None
    #: This licence's queued events this call dealt with, oldest first.
    events: list[UsageEvent]
    #: The last verified balances of every meter of the licence; None before any.
    meters: list[UsageBalance] | None
    #: True for this call's answer, False for an earlier one of this client, None for none.
    fresh: bool | None
    #: Events queued here for other licences (a converted trial's): never sent for this one.
    pending: int
    #: Why this call got no verified answer (``NoAnswer``).
    no_answer: Any
    #: Set when a counted event's file could not be removed (it is sent again and answered as a duplicate).
    store_error: Exception | None = None


@dataclass(frozen=True)
class SignedUsage:
    """The signed part of a usage answer whose receipt verified."""

    status: str
    bound_at: str
    events: list[tuple[str, str]]
    meters: list[UsageBalance]


def licence_meters(claims: Mapping[str, Any]) -> list[LicenceMeter]:
    """The signed meters (``mtr``) in signed order; none when absent or not of that form."""
    mtr = claims.get("mtr")
    if not isinstance(mtr, list):
        return []
    meters = []
    for entry in mtr:
        if not isinstance(entry, dict) or set(entry) != {"k", "p", "l", "o"} or not isinstance(entry["k"], str) or entry["p"] not in ("NONE", "DAY", "MONTH", "YEAR"):
            return []
        if not all(value is None or (is_int(value) and value >= 0) for value in (entry["l"], entry["o"])):
            return []
        meters.append(LicenceMeter(entry["k"], entry["p"], entry["l"], entry["o"]))
    return meters


def check_event(meter: object, amount: object) -> None:
    """Refuses (INVALID_OPTIONS, nothing queued) what the service would answer 400."""
    if not isinstance(meter, str) or not METER_KEY.fullmatch(meter):
        raise LicensorError("INVALID_OPTIONS", 'meter must be a meter key: a letter, then up to 63 letters, digits, "_", "." or "-"')
    if not is_int(amount) or not 1 <= amount <= MAX_AMOUNT:
        raise LicensorError("INVALID_OPTIONS", f"amount must be an integer from 1 to {MAX_AMOUNT}")


def _count(value: object, nullable: bool = True) -> bool:
    return (nullable and value is None) or (is_int(value) and value >= 0)


def read_signed(body: Mapping[str, Any]) -> tuple[list[tuple[str, str]], list[UsageBalance]] | None:
    """The answer's events as (id, result) and meters as their signed fields, or None when not of that form."""
    events, meters = body.get("events"), body.get("meters")
    if not isinstance(events, list) or not isinstance(meters, list):
        return None
    pairs = []
    for event in events:
        if not isinstance(event, dict) or not isinstance(event.get("id"), str) or not isinstance(event.get("result"), str):
            return None
        pairs.append((event["id"], event["result"]))
    balances = []
    for meter in meters:
        if not isinstance(meter, dict) or not isinstance(meter.get("key"), str) or not _count(meter.get("used"), nullable=False):
            return None
        limit, overage, remaining, resets_at = (meter.get(name) for name in ("limit", "overage", "remaining", "resetsAt"))
        if not (_count(limit) and _count(overage) and _count(remaining) and (resets_at is None or isinstance(resets_at, str))):
            return None
        balances.append(UsageBalance(meter["key"], meter["used"], limit, overage, remaining, resets_at))
    return pairs, balances


def usage_message(lid: str, status: str, nonce: str, checked_at: str, bound_at: str, digest: str, events: Sequence[tuple[str, str]], meters: Sequence[UsageBalance]) -> bytes | None:
    """UTF-8 of SVCU1 (DESIGN 19): ``SVCU1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest␟E␟(id␟result)…␟M␟
    (key␟used␟limit␟overage␟remaining␟resetsAt)…``, None as empty, integers as their decimal
    digits (Python ints are exact); None when a field is not printable ASCII."""
    text = lambda value: "" if value is None else str(value)  # noqa: E731
    fields = ["SVCU1", lid, status, nonce, checked_at, bound_at, digest, str(len(events))]
    for event_id, result in events:
        fields += [event_id, result]
    fields.append(str(len(meters)))
    for m in meters:
        fields += [m.key, str(m.used), text(m.limit), text(m.overage), text(m.remaining), text(m.resets_at)]
    if not all(_ASCII.fullmatch(field) for field in fields):
        return None
    return "\x1f".join(fields).encode("utf-8")


def _is_event_file(path: Path) -> bool:
    return path.suffix == ".json" and _EVENT_ID.fullmatch(path.stem) is not None


class UsageQueue:
    """One licence's queued events, ``<stateDir>/usage/<lid>/<id>.json``, each written before any
    send and removed only once a verified answer gives it a final result."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _files(self) -> list[Path]:
        try:
            return [path for path in self.folder.iterdir() if _is_event_file(path)]
        except OSError:
            return []

    def add(self, meter: str, amount: int, at: str) -> None:
        if len(self._files()) >= QUEUE_LIMIT:
            raise LicensorError("QUEUE_FULL", f"{QUEUE_LIMIT} usage events are waiting to be sent for this licence")
        event_id = b64u_encode(secrets.token_bytes(16))
        make_folders(self.folder)
        write_atomically(self.folder / f"{event_id}.json", json.dumps({"id": event_id, "meter": meter, "amount": amount, "at": at}) + "\n")

    def events(self) -> list[dict[str, Any]]:
        """The readable events, oldest first (by ``at``, then ``id``); an unreadable file is never sent."""
        events = []
        for path in self._files():
            try:
                event = strict_json(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if not isinstance(event, dict) or set(event) != {"id", "meter", "amount", "at"} or event["id"] != path.stem:
                continue
            try:
                check_event(event["meter"], event["amount"])
            except LicensorError:
                continue
            at = event["at"]
            if not isinstance(at, str) or not _AT.fullmatch(at):
                continue
            try:
                when = datetime.fromisoformat(at.replace("Z", "+00:00"))
            except ValueError:
                continue
            events.append((when, event["id"], event))
        return [event for _, _, event in sorted(events, key=lambda item: (item[0], item[1]))]

    def remove(self, event_id: str) -> None:
        (self.folder / f"{event_id}.json").unlink(missing_ok=True)


def pending_elsewhere(root: Path, lid: str) -> int:
    """How many events wait in the other licences' folders of ``<stateDir>/usage/``."""
    try:
        folders = [path for path in root.iterdir() if path.is_dir() and path.name != lid]
    except OSError:
        return 0
    return sum(len(UsageQueue(folder).events()) for folder in folders)
