"""Online checks for one licence on this machine (DESIGN 2, 5, 6 and 12)."""

from __future__ import annotations

import os
import secrets
import time
from dataclasses import dataclass, replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, cast
from urllib.parse import quote, urlencode

from ._http import get_json, post_json, post_json_status, stream
from .air_gap import AirGapFiles, accept_response, deactivate, dpk_of, end_activation, groups_of_five, make_request, usable_activation
from ._wire import MalformedError, b64u_encode, fp_digest, is_int, receipt_grants, receipt_tag, verify_receipt, verify_signature
from .errors import LicensorError
from .fingerprint import collect_fingerprint
from .keys import PublicKeys, read_public_keys
from .licence import LicenceRefusal, LicenceVerification, parse_licence, updates_until_of, verify_licence
from .store import EMPTY, FileStore, Record, StateKey, StateStore, file_store
from .updates import Download, FeedUrls, KeptFeed, Update, UpdateCheck, feed_of, keep_file, read_feed, read_update_check, update_file, update_query, verify_update, write_feed
from .usage import BATCH_SIZE, LicenceMeter, SignedUsage, UsageBalance, UsageEvent, UsageEventResult, UsageQueue, UsageReport, check_event, licence_meters, pending_elsewhere, read_signed, usage_message

#: ``VALID``: the latest verified answer says licensed here and is this call's or younger than the
#: licence's ``max``. ``STALE``: it said licensed but is older (or its age cannot be trusted: the
#: clock went back), or there is none. ``INVALID``: refused offline, or the latest verified
#: answer said not licensed here; that stands, whatever its age, until a later answer says otherwise.
CheckState = Literal["VALID", "STALE", "INVALID"]
InvalidReason = Literal[LicenceRefusal, "OLDER_TERM", "REVOKED", "UNKNOWN_LICENCE", "NO_SEAT", "NOT_LICENSED"]
NoAnswerCode = Literal["TIMEOUT", "NETWORK", "HTTP_STATUS", "BAD_RESPONSE", "BAD_RECEIPT"]
ReleaseRefusal = Literal["NO_SEAT", "AT_ISSUE", "UNKNOWN_LICENCE", "BORROWED"]

_NO_ANSWER_CODES = ("TIMEOUT", "NETWORK", "HTTP_STATUS", "BAD_RESPONSE", "BAD_RECEIPT")
DEFAULT_TIMEOUT_SECONDS = 10.0
#: How far a remembered clock offset is believed: an edited state file cannot stretch an answer's life by more.
MAX_OFFSET_MS = 24 * 3600_000
#: How far the remembered offset is believed when judging a lease end: a lease is short.
LEASE_OFFSET_MS = 60_000
#: Latency between the service signing checkedAt and the answer arriving is not a rollback.
ROLLBACK_TOLERANCE_MS = 60_000


@dataclass(frozen=True)
class VerifiedAnswer:
    """A check answer whose receipt verified against this licence, nonce and machine."""

    tag: str
    lid: str
    status: str
    nonce: str
    checked_at: str
    bound_at: str
    fp_digest: str
    lease_ends_at: str
    receipt: str
    #: The unsigned hint that a newer term exists.
    renewed: bool
    #: Licensed on this machine by the signed fields: status ACTIVE or GRACE and bound_at set.
    grants: bool
    #: True when it is this call's answer, False when it came from the saved state.
    fresh: bool
    #: The unsigned hint that this trial was converted to a paid licence (DESIGN 18).
    converted: bool = False

    def stored(self) -> dict[str, Any]:
        return {
            "tag": self.tag,
            "lid": self.lid,
            "status": self.status,
            "nonce": self.nonce,
            "checkedAt": self.checked_at,
            "boundAt": self.bound_at,
            "fpDigest": self.fp_digest,
            "leaseEndsAt": self.lease_ends_at,
            "receipt": self.receipt,
            "renewed": self.renewed,
            "converted": self.converted,
        }


@dataclass(frozen=True)
class NoAnswer:
    """Why this call's answer counted for nothing."""

    code: NoAnswerCode
    message: str
    status: int | None = None


@dataclass(frozen=True)
class TrialStatus:
    """A trial licence's end (DESIGN 18)."""

    #: The signed ``exp`` (ISO time).
    ends_at: str
    #: Whole seconds from the later of the service's time and the newest verified checkedAt to ``ends_at``; 0 once ended.
    seconds_left: int
    #: The last answer said the trial was converted to a paid licence (unsigned): ask the vendor for it.
    converted: bool


@dataclass(frozen=True)
class CheckResult:
    state: CheckState
    #: Why INVALID; empty otherwise.
    reasons: list[InvalidReason]
    #: The offline verification of the licence at this moment.
    licence: LicenceVerification
    #: The verified answer the state rests on: this call's, else the saved one, else None.
    answer: VerifiedAnswer | None
    #: Why this call got no verified answer; None when it got one or sent nothing (offline refusal).
    no_answer: NoAnswer | None
    #: Seconds since the answer's signed checkedAt, in the service's time; None without an answer.
    age_seconds: float | None
    #: The local clock is earlier than the last verified checkedAt: the answer's age cannot be trusted.
    clock_rollback: bool
    #: This call's answer says a newer term exists (an unsigned hint): call fetch().
    renewed: bool
    #: The service's unsigned ``reason``, for display only.
    server_reason: str | None
    #: Set when the verified answer could not be saved (the result still holds).
    store_error: Exception | None
    #: A floating licence's signed lease end (ISO time) of the answer the state rests on, else None.
    lease_ends_at: str | None = None
    #: VALID rests on an air-gapped activation of this machine (DESIGN 14), not on a check answer.
    air_gapped: bool = False
    #: For a trial licence (``trl``), its end as the service's clock judges it; None for any other.
    trial: TrialStatus | None = None

    @property
    def fresh(self) -> bool | None:
        """True for this call's answer, False for a saved one, None for none."""
        return None if self.answer is None else self.answer.fresh


@dataclass(frozen=True)
class ReleaseResult:
    released: bool
    #: When released.
    released_at: str | None = None
    #: Why not released: NO_SEAT, AT_ISSUE, UNKNOWN_LICENCE, or BORROWED (a floating lease
    #: borrowed until a time still ahead: only an operator frees it early).
    reason: ReleaseRefusal | None = None


@dataclass(frozen=True)
class TrialStart:
    """What start_trial() answers."""

    #: A client holding the trial licence, for check() and the rest.
    client: LicenceClient
    #: True when this call started the trial; False when the service gave this machine back its own.
    created: bool
    #: The trial licence string: keep it like any licence.
    licence: str
    #: The trial's end (its ``exp``, ISO time).
    ends_at: str
    #: The start's answer judged as check() judges one.
    result: CheckResult


@dataclass(frozen=True)
class AirGapRequest:
    #: The SVCA1 text, e.g. for a QR code.
    request: str
    #: The same text in groups of five characters, for typing.
    groups: str


@dataclass(frozen=True)
class AirGapActivation:
    #: When the activation ends (ISO time).
    until: str
    activation_id: str


@dataclass(frozen=True)
class AirGapDeactivation:
    #: The SVCD1 text the vendor's portal or console takes to free the seat.
    code: str
    groups: str


class LicenceClient:
    """Checks one licence with the service and keeps the last verified answer.

    ``check_token`` is the whole ``svcc_<checkId>_<secret>`` token: it identifies, it is not a
    secret. ``public_keys`` is the product's key or key history. ``store`` is where the client's
    state is kept (default ``file_store()``, under the user's configuration directory); ``clock`` returns seconds since the epoch (default
    ``time.time``); ``timeout`` is in seconds per request.
    """

    def __init__(
        self,
        *,
        base_url: str,
        slug: str,
        check_id: str,
        check_token: str,
        public_keys: PublicKeys,
        licence: str | None,
        store: StateStore | None = None,
        clock: Callable[[], float] = time.time,
        timeout: float = DEFAULT_TIMEOUT_SECONDS,
        fingerprint: str | None = None,
        stable_id: str | None = None,
        product_key: str | None = None,
        machine_label: str | None = None,
    ) -> None:
        # Only start_trial() builds a client without a licence, and it pins the product instead.
        last = ("licence", licence) if licence is not None else ("product_key", product_key)
        for name, value in (("base_url", base_url), ("slug", slug), ("check_id", check_id), ("check_token", check_token), last):
            if not isinstance(value, str) or value == "":
                raise LicensorError("INVALID_OPTIONS", f"{name} must be a non-empty string")
        if not check_token.startswith(f"svcc_{check_id}_"):
            raise LicensorError("INVALID_OPTIONS", "check_token must be the whole svcc_<checkId>_<secret> token for this check_id")
        if not isinstance(timeout, (int, float)) or not timeout > 0:
            raise LicensorError("INVALID_OPTIONS", "timeout must be a positive number of seconds")
        if licence is not None and _licence_type(licence) == "OFFLINE":
            raise LicensorError("NOT_CHECKABLE", "an OFFLINE licence has no check path: use verify_licence()")
        self._keys = read_public_keys(public_keys)
        self._base = f"{base_url.rstrip('/')}/o/{quote(slug, safe='')}/api/public"
        self._url = f"{self._base}/license/{quote(check_id, safe='')}"
        self._check_token = check_token
        self._store = store if store is not None else file_store()
        self._clock = clock
        self._timeout = float(timeout)
        self._fingerprint = fingerprint
        self._stable_id = stable_id
        self._slug = slug
        self._product_key = product_key
        self._machine_label = machine_label
        self._licence = licence or ""
        #: The newest term seen by this client, beside the one remembered in the state.
        self._newest_iat = 0
        #: This client's last verified usage answer and its lid; nothing is sent to the usage
        #: endpoint before _usage_retry_at (ms) after a 429 (DESIGN 19).
        self._usage: tuple[str, SignedUsage] | None = None
        self._usage_retry_at = 0
        #: The feed token this client holds (memory_store() keeps it nowhere else).
        self._feed: KeptFeed | None = None

    @classmethod
    def start_trial(
        cls,
        *,
        base_url: str,
        slug: str,
        check_id: str,
        check_token: str,
        public_keys: PublicKeys,
        product_key: str,
        email: str | None = None,
        **options: Any,
    ) -> TrialStart:
        """Starts a trial of the product on this machine (DESIGN 18), or gets this machine's own
        trial back (after a reinstall, or a retry): call it from the application's first run or a
        "Start trial" button, never from an installer. Takes a client's options without a
        licence; ``product_key`` is needed, and the file store (the installation's device key
        lives on disk: ``memory_store()`` raises INVALID_OPTIONS). ``email`` is optional and needs
        the user's consent. Raises LicensorError: TRIALS_OFF, TRIAL_USED (with ``matched``),
        HTTP_STATUS (a 429 with ``retry_after_seconds``), BAD_LICENCE (the licence does not verify,
        is not a trial, is for another product or machine), BAD_RECEIPT, OLDER_TERM."""
        if "licence" in options:
            raise LicensorError("INVALID_OPTIONS", "start_trial() takes no licence: the service makes it")
        client = cls(base_url=base_url, slug=slug, check_id=check_id, check_token=check_token, public_keys=public_keys, licence=None, product_key=product_key, **options)
        return client._start_trial(email)

    def _start_trial(self, email: str | None) -> TrialStart:
        if email is not None and (not isinstance(email, str) or email == ""):
            raise LicensorError("INVALID_OPTIONS", "email must be a non-empty string when given")
        if not isinstance(self._store, FileStore):
            raise LicensorError("INVALID_OPTIONS", "a trial counts installations by a device key kept on disk: it needs file_store(), not memory_store()")
        assert self._product_key is not None
        try:
            files = AirGapFiles(self._store.folder(StateKey(self._slug, self._product_key, "x")))
        except ValueError as error:
            raise LicensorError("INVALID_OPTIONS", str(error)) from None
        dpk = files.update(self.fingerprint, lambda _state, device: dpk_of(device()))
        now = self.now_ms()
        nonce = b64u_encode(secrets.token_bytes(24))
        sent = {"fingerprint": self.fingerprint, "nonce": nonce, "devicePublicKey": dpk}
        if email is not None:
            sent["email"] = email
        if self._machine_label:
            sent["machineLabel"] = self._machine_label
        status, body = post_json_status(f"{self._url}/trial", self._check_token, sent, self._timeout, trial=True)
        text = body.get("license")
        if not isinstance(text, str):
            raise LicensorError("BAD_RESPONSE", "the trial answer has no licence string")
        licence = self._verify(text, now)
        if licence.claims is None:
            raise LicensorError("BAD_LICENCE", f"the trial licence does not verify: {licence.message}")
        if not _is_trial(licence):
            raise LicensorError("BAD_LICENCE", "the licence answered is not a trial")
        if "WRONG_PRODUCT" in licence.reasons:
            raise LicensorError("BAD_LICENCE", "the trial licence is for another product")
        if licence.fingerprint_match is not True:
            raise LicensorError("BAD_LICENCE", "the trial licence is for another machine")
        if body.get("lid") != licence.claims["lid"]:
            raise LicensorError("BAD_LICENCE", "the answer is not the trial licence's")
        record = self._load(licence)
        newest_iat = max(self._newest_iat, record.newest_iat or 0)
        if licence.claims["iat"] < newest_iat:
            raise LicensorError("OLDER_TERM", "the trial term answered is older than one already seen")
        fresh, fresh_offset = self._verify_answer(body, licence, nonce, now)
        self._licence = text
        # Judged at the service's time, as check() judges a trial: an answered trial may have ended.
        judged = self._verify(text, _trial_now(fresh_offset, fresh, now))
        result = self._keep(judged, fresh, fresh_offset, body, now, False, newest_iat)
        if not judged.valid:
            result = replace(result, state="INVALID", reasons=list(judged.reasons))
        ends_at = _iso(datetime.fromtimestamp(licence.claims["exp"], timezone.utc))
        return TrialStart(self, status == 201, text, ends_at, result)

    @property
    def licence(self) -> str:
        """The licence string in use: the one given, or the term fetch() last returned."""
        return self._licence

    @property
    def fingerprint(self) -> str:
        """This machine's fingerprint, collected once."""
        if self._fingerprint is None:
            self._fingerprint = collect_fingerprint(stable_id=self._stable_id).fingerprint
        return self._fingerprint

    def check(self) -> CheckResult:
        """Asks the service about the licence with a fresh nonce and judges its answer by the
        signed fields only. Never raises for what the service does: a timeout, any non-200, an
        unparseable body or a receipt that does not verify is "no answer", and the state rests
        on the saved answer."""
        return self._ask("check", {})

    def borrow(self, until: datetime | str) -> CheckResult:
        """Borrows this machine's lease of a floating licence until ``until`` (a timezone-aware
        datetime or an ISO 8601 time, at most the licence's ``brw`` seconds ahead), for a laptop
        going offline (DESIGN 13). The machine must hold a live lease: check() first. Answers
        like check(); a refusal (403: no live lease, borrowing off, all borrowable seats
        borrowed; 400: too far ahead) is no answer, with its status. Raises ``INVALID_OPTIONS``
        for a licence that is not floating or a time that is not one."""
        if isinstance(until, datetime):
            if until.tzinfo is None:
                raise LicensorError("INVALID_OPTIONS", "until must be a timezone-aware datetime")
            until = _iso(until)
        if not isinstance(until, str) or _parse_time(until) is None:
            raise LicensorError("INVALID_OPTIONS", "until must be an ISO 8601 time with its offset")
        try:
            floating = parse_licence(self._licence).claims["v"] == 5
        except MalformedError:
            floating = True  # refused offline by _ask, never sent
        if not floating:
            raise LicensorError("INVALID_OPTIONS", "borrowing needs a floating licence (v 5)")
        return self._ask("borrow", {"until": until})

    def fetch(self) -> str:
        """Fetches the current term of this licence (after ``renewed``), verifies it offline with
        the product's key(s), checks that it is the same licence and not an older term, then uses
        it for later checks and returns it (store it for the next start). Raises LicensorError
        for any failure; never called by check()."""
        now = self.now_ms()
        current = self._verify(self._licence, now)
        if current.claims is None:
            raise LicensorError("BAD_LICENCE", f"the licence in use does not verify: {current.message}")
        body = self._post("fetch", {"license": self._licence, "fingerprint": self.fingerprint})
        text = body.get("license")
        if not isinstance(text, str):
            raise LicensorError("BAD_RESPONSE", "the fetch answer has no licence string")
        following = self._verify(text, now)
        if following.claims is None:
            raise LicensorError("BAD_LICENCE", f"the fetched licence does not verify: {following.message}")
        if following.claims["lid"] != current.claims["lid"]:
            raise LicensorError("LID_MISMATCH", "the fetched licence is another licence")
        if "WRONG_PRODUCT" in following.reasons:
            raise LicensorError("BAD_LICENCE", "the fetched licence is for another product")
        record = self._load(current)
        newest_iat = max(self._newest_iat, record.newest_iat or 0, current.claims["iat"])
        iat = following.claims["iat"]
        if iat < newest_iat:
            raise LicensorError("OLDER_TERM", "the fetched term is older than one already seen")
        self._newest_iat = iat
        self._save(current, lambda old: replace(old, newest_iat=max(old.newest_iat or 0, iat)))
        self._licence = text
        return text

    def release(self) -> ReleaseResult:
        """Frees this machine's seat ("Deactivate this computer", DESIGN 12); afterwards the
        saved answer is forgotten (never the newest term seen nor the clock offset), so the next
        check() starts fresh. Raises LicensorError for anything but the service's verdict:
        ``HTTP_STATUS`` 403 when the product's release limit is reached."""
        licence = self._verify(self._licence, self.now_ms())
        if licence.claims is None:
            raise LicensorError("BAD_LICENCE", f"the licence in use does not verify: {licence.message}")
        nonce = b64u_encode(secrets.token_bytes(24))
        body = self._post("release", {"license": self._licence, "fingerprint": self.fingerprint, "nonce": nonce})
        released = body.get("released")
        if body.get("nonce") != nonce or body.get("lid") != licence.claims["lid"] or not isinstance(released, bool):
            raise LicensorError("BAD_RESPONSE", "the release answer is not for this licence and request")
        if released:
            self._forget(licence)
            return ReleaseResult(True, released_at=str(body.get("releasedAt")))
        return ReleaseResult(False, reason=cast(ReleaseRefusal, str(body.get("reason"))))

    def clear_cache(self) -> None:
        """Forgets the saved answer for this licence (never the newest term seen nor the clock offset)."""
        licence = self._verify(self._licence, self.now_ms())
        if licence.claims is not None:
            self._forget(licence)

    def create_air_gap_request(self) -> AirGapRequest:
        """Starts an air-gapped activation (DESIGN 14) on a machine that never reaches the service:
        a request signed by this installation's device key (made once per product and machine,
        kept with the state), replacing any pending one. Show ``groups`` for typing or ``request``
        as a QR code; the vendor's portal or console answers it with a response for
        activate_air_gapped(). Needs file state: with memory_store() it raises INVALID_OPTIONS."""
        lid, files = self._air_gap()
        request = make_request(files, lid, self.fingerprint, self.now_ms() // 1000)
        return AirGapRequest(request, groups_of_five(request))

    def activate_air_gapped(self, response: str) -> AirGapActivation:
        """Accepts the response to the pending request (pasted or typed: whitespace is ignored).
        From then until ``until`` check() is VALID on this machine with no network
        (``air_gapped``). Raises BAD_ACTIVATION for a response not for this installation, machine,
        pending request or product, for an activation deactivated here, or one that does not verify."""
        lid, files = self._air_gap()
        if not isinstance(response, str):
            raise LicensorError("BAD_ACTIVATION", "the response must be a string")
        fields = accept_response(files, response, lid, self.fingerprint, self._keys)
        return AirGapActivation(_iso(datetime.fromtimestamp(fields["until"], timezone.utc)), fields["aid"])

    def deactivate_air_gapped(self) -> AirGapDeactivation:
        """Ends this machine's air-gapped activation: forgets it here first (it is never accepted
        again), then answers the code this installation's key signs, for the vendor's portal or
        console to free the seat. Raises BAD_ACTIVATION when there is no activation to end."""
        lid, files = self._air_gap()
        code = deactivate(files, lid, self.fingerprint, self.now_ms() // 1000)
        return AirGapDeactivation(code, groups_of_five(code))

    @property
    def meters(self) -> list[LicenceMeter]:
        """The licence's signed meters (``mtr``, DESIGN 19); none when it does not verify or has none."""
        licence = self._verify(self._licence, self.now_ms())
        return [] if licence.claims is None else licence_meters(licence.claims)

    def updates_until(self) -> datetime | None:
        """The end of the update window (DESIGN 20), offline from the newest verified term: its ``upd``,
        else its grace end (a trial's end), else None (every release); None too when the licence does not
        verify. Means nothing for a product whose parameter is named ``upd``."""
        licence = self._verify(self._licence, self.now_ms())
        return None if licence.claims is None else updates_until_of(licence.claims)

    def check_for_update(self, current_version: str, platform: str | None = None, arch: str | None = None, channel: str | None = None) -> UpdateCheck:
        """Asks the licence's ``latest.json`` feed (DESIGN 20) for the highest release above
        ``current_version`` that this licence may download, with files for this platform and arch
        (default: this machine's), and for the highest one above it that it may not (``blocked``:
        its window ended, or it does not meet the release's ``requires``). The feed token is asked
        for once and kept per licence; a 403 forgets it and asks again, once. An update is kept only
        when its manifest verifies with one of the keys given to this client and says this product,
        its version and channel, and a version above ``current_version``: else BAD_MANIFEST.
        Raises INVALID_OPTIONS for what the feed would refuse, BAD_LICENCE for a licence that does
        not verify, and the service's failures (TIMEOUT, NETWORK, HTTP_STATUS with ``reason``,
        BAD_RESPONSE)."""
        query = update_query(current_version, platform, arch, channel)
        licence = self._signed()
        kept = self._kept_feed(licence)
        try:
            answer = self._latest(kept or self._ask_feed(licence), query)
        except LicensorError as error:
            if error.status != 403:
                raise
            # A reset, a new seat or a revocation: the kept token is worth nothing now.
            self._forget_feed(licence)
            if kept is None:
                raise
            answer = self._latest(self._ask_feed(licence), query)
        checked = read_update_check(answer)
        if checked.update is None:
            return checked
        assert licence.claims is not None
        product_key = self._product_key or licence.claims["prd"]
        return UpdateCheck(verify_update(checked.update, self._keys, self._slug, product_key, current_version), checked.blocked)

    def download(self, update: Update, filename: str, to: str | os.PathLike[str]) -> Download:
        """Downloads ``filename`` of an update check_for_update() answered into the folder ``to``
        (made if missing), streaming its feed URL to a temporary file there, and keeps it as
        ``to/filename`` only when its size and SHA-256 are the signed manifest's; else the file is
        deleted and DIGEST_MISMATCH raised. INVALID_OPTIONS for a filename the update does not
        list; HTTP_STATUS (with ``reason``) when the service refuses the file; TIMEOUT when no bytes
        come for the client's timeout."""
        file = update_file(update, filename, self._keys)
        if not isinstance(to, (str, os.PathLike)) or str(to) == "":
            raise LicensorError("INVALID_OPTIONS", "to must be the folder to download into")
        return keep_file(stream(file.url, self._timeout), to, file)

    def feed_urls(self) -> FeedUrls:
        """The licence's feed URLs for this machine (electron-updater, Tauri, Sparkle,
        ``latest.json``): asked for on each call (the same until a reset or a new seat) and kept;
        the kept ones when no answer comes (TIMEOUT, NETWORK). They are secrets: they download the
        licence's releases."""
        licence = self._signed()
        try:
            return self._ask_feed(licence).urls
        except LicensorError as error:
            kept = self._kept_feed(licence) if error.code in ("TIMEOUT", "NETWORK") else None
            if kept is None:
                raise
            return kept.urls

    def record_usage(self, meter: str, amount: int = 1) -> UsageReport:
        """Counts ``amount`` (an integer from 1 to 10^9) of ``meter`` (DESIGN 19): the event is
        written to this machine's queue (``<stateDir>/usage/<lid>/``) before anything is sent, then
        the queue is sent oldest first, and an event leaves it only when a verified receipt gives it
        a final result, so a crash or an unreachable service loses nothing and a resend counts
        nothing twice. Raises, adding nothing, ``INVALID_OPTIONS`` (a meter that is not a key, an
        amount out of range, memory_store()), ``NOT_CHECKABLE`` (OFFLINE), ``QUEUE_FULL`` (1,000
        queued events); the service's failures are ``no_answer``, never raised."""
        check_event(meter, amount)
        licence, queue = self._usage_queue()
        if queue is None:
            raise LicensorError("INVALID_OPTIONS", "usage events are queued on disk before they are sent: record_usage needs file_store(), not memory_store()")
        record = self._load(licence)
        queue.add(meter, amount, _iso(datetime.fromtimestamp(_service_now(record.offset_ms, self.now_ms()) / 1000, timezone.utc)))
        return self._send_usage(licence, queue)

    def usage(self) -> UsageReport:
        """Sends this licence's queued events (or none, to read the balances) and reports as record_usage() does."""
        licence, queue = self._usage_queue()
        return self._send_usage(licence, queue)

    # --- internals ------------------------------------------------------------------------------

    def _usage_queue(self) -> tuple[LicenceVerification, UsageQueue | None]:
        """The signed licence in use and its usage queue (None with a memory-only store)."""
        licence = self._verify(self._licence, self.now_ms())
        if licence.claims is None:
            raise LicensorError("BAD_LICENCE", f"the licence in use does not verify: {licence.message}")
        if licence.claims.get("typ") == "OFFLINE":
            raise LicensorError("NOT_CHECKABLE", "an OFFLINE licence has no meters and no check path")
        if not isinstance(self._store, FileStore):
            return licence, None
        try:
            self._store.folder(self._key(licence))
        except ValueError as error:
            raise LicensorError("INVALID_OPTIONS", str(error)) from None
        return licence, UsageQueue(self._store.root / "usage" / licence.claims["lid"])

    def _send_usage(self, licence: LicenceVerification, queue: UsageQueue | None) -> UsageReport:
        """Sends the queue in batches until it is empty, an answer is missing or an event is NOT_LICENSED."""
        assert licence.claims is not None
        lid = licence.claims["lid"]
        queued = queue.events() if queue is not None else []
        results: dict[str, str] = {}
        no_answer: NoAnswer | None = None
        fresh = False
        store_error: Exception | None = None
        if self.now_ms() < self._usage_retry_at:
            no_answer = NoAnswer("HTTP_STATUS", "the service asked to wait before sending usage again", 429)
        else:
            offset = 0
            while offset == 0 or offset < len(queued):
                batch = queued[offset : offset + BATCH_SIZE]
                offset += BATCH_SIZE
                try:
                    answer = self._post_usage(licence, batch)
                except LicensorError as error:
                    if error.code not in _NO_ANSWER_CODES:
                        raise
                    no_answer = NoAnswer(cast(NoAnswerCode, error.code), error.message, error.status)
                    if error.status == 429:
                        wait = error.retry_after_seconds
                        self._usage_retry_at = self.now_ms() + (60 if wait is None else wait) * 1000
                    break
                fresh = True
                self._usage = (lid, answer)
                for event_id, result in answer.events:
                    results[event_id] = result
                    # Every verified result is final but NOT_LICENSED (DESIGN 19).
                    if result != "NOT_LICENSED" and queue is not None:
                        try:
                            queue.remove(event_id)
                        except OSError as error:
                            store_error = error
                if any(result == "NOT_LICENSED" for _, result in answer.events):
                    break
        events = [UsageEvent(e["id"], e["meter"], e["amount"], cast(UsageEventResult, results.get(e["id"], "QUEUED"))) for e in queued]
        waiting: dict[str, int] = {}
        for event in events:
            if event.result in ("QUEUED", "NOT_LICENSED"):
                waiting[event.meter] = waiting.get(event.meter, 0) + event.amount
        kept = self._usage[1] if self._usage is not None and self._usage[0] == lid else None
        licensed = None if kept is None else receipt_grants(kept.status, kept.bound_at)
        return UsageReport(
            licensed=licensed,
            reason=None if kept is None or licensed else _signed_reason(kept.status),
            events=events,
            meters=None if kept is None else [replace(m, pending=waiting.get(m.key, 0)) for m in kept.meters],
            fresh=None if kept is None else fresh,
            pending=0 if queue is None else pending_elsewhere(queue.folder.parent, lid),
            no_answer=no_answer,
            store_error=store_error,
        )

    def _post_usage(self, licence: LicenceVerification, events: list[dict[str, Any]]) -> SignedUsage:
        """One usage request with a fresh nonce; its signed part once the SVCU1 receipt verifies,
        rebuilt from the licence's lid, the nonce sent, this machine's fpDigest and the ids sent in
        order, so an answer to another licence, request, machine or batch cannot verify."""
        assert licence.claims is not None
        nonce = b64u_encode(secrets.token_bytes(24))
        body = self._post("usage", {"license": self._licence, "fingerprint": self.fingerprint, "nonce": nonce, "events": events})
        status, checked_at, bound_at, receipt = body.get("status", ""), body.get("checkedAt"), body.get("boundAt", ""), body.get("receipt")
        signed = read_signed(body)
        if signed is None or not all(isinstance(value, str) for value in (status, checked_at, bound_at, receipt)):
            raise LicensorError("BAD_RESPONSE", "the usage answer lacks the receipt fields")
        pairs, meters = signed
        message = usage_message(licence.claims["lid"], status, nonce, checked_at, bound_at, fp_digest(self.fingerprint), pairs, meters)
        same_ids = [event_id for event_id, _ in pairs] == [event["id"] for event in events]
        if not same_ids or message is None or _parse_time(checked_at) is None or not verify_signature(message, receipt, self._keys):
            raise LicensorError("BAD_RECEIPT", "the usage receipt does not verify for this licence, nonce, machine and events")
        return SignedUsage(status, bound_at, pairs, meters)

    def _ask(self, endpoint: str, extra: Mapping[str, str]) -> CheckResult:
        now = self.now_ms()
        if self._licence == "":
            raise LicensorError("INVALID_OPTIONS", "this client holds no licence")
        licence = self._verify(self._licence, now)
        record = self._load(licence)
        cached = self._verified(record.answer, licence, fresh=False) if record.answer is not None else None
        offset = record.offset_ms
        if _is_trial(licence):
            # A trial ends by the service's time, never by a clock set back (DESIGN 18).
            licence = self._verify(self._licence, _trial_now(offset, cached, now))
        # Measured against the answer known before this call: a fresh answer proves itself by its nonce.
        clock_rollback = cached is not None and _service_now(offset, now) < _time(cached.checked_at) - ROLLBACK_TOLERANCE_MS
        newest_iat = max(self._newest_iat, record.newest_iat or 0)
        older_term = licence.claims is not None and licence.claims["iat"] < newest_iat

        # SPEC 4.4 rule 5: a licence that fails locally is never sent.
        if not licence.valid or older_term:
            reasons: list[InvalidReason] = list(licence.reasons)
            if older_term:
                reasons.append("OLDER_TERM")
            refused = replace(_judge(cached, offset, now, clock_rollback, 0), state="INVALID", reasons=reasons)
            return _result(licence, refused, clock_rollback, trial=_trial_status(licence, cached, offset, now))

        assert licence.claims is not None
        nonce = b64u_encode(secrets.token_bytes(24))
        sent = {"license": self._licence, "fingerprint": self.fingerprint, "nonce": nonce, **extra}
        if self._machine_label:
            sent["machineLabel"] = self._machine_label
        try:
            body = self._post(endpoint, sent)
            fresh, fresh_offset = self._verify_answer(body, licence, nonce, now)
        except LicensorError as error:
            if error.code not in _NO_ANSWER_CODES:
                raise
            no_answer = NoAnswer(cast(NoAnswerCode, error.code), error.message, error.status)
            judged = _judge(cached, offset, now, clock_rollback, _max_seconds(licence))
            kept = _result(licence, judged, clock_rollback, no_answer=no_answer, trial=_trial_status(licence, cached, offset, now))
            return self._or_air_gapped(kept, now)
        return self._keep(licence, fresh, fresh_offset, body, now, clock_rollback, newest_iat)

    def _keep(
        self, licence: LicenceVerification, fresh: VerifiedAnswer, fresh_offset: int, body: Mapping[str, Any], now: int, clock_rollback: bool, newest_iat: int
    ) -> CheckResult:
        """Saves a fresh verified answer and judges it (check(), borrow() and start_trial())."""
        assert licence.claims is not None
        files = self._air_gap_files(licence)
        if not fresh.grants and files is not None:
            # A later verified answer that says not licensed ends an air-gapped activation here (DESIGN 14).
            try:
                end_activation(files, licence.claims["lid"], self.fingerprint)
            except Exception:  # noqa: S110 - the answer still holds, and it outranks the activation anyway
                pass

        self._newest_iat = max(newest_iat, licence.claims["iat"])
        newest = self._newest_iat
        store_error = self._save(
            licence,
            lambda old: Record(max(old.newest_iat or 0, newest), fresh_offset, fresh.stored()),
        )
        reason = body.get("reason")
        judged = _judge(fresh, fresh_offset, now, clock_rollback, _max_seconds(licence))
        server_reason = reason if isinstance(reason, str) else None
        trial = _trial_status(licence, fresh, fresh_offset, now)
        return _result(licence, judged, clock_rollback, server_reason=server_reason, store_error=store_error, trial=trial)

    def now_ms(self) -> int:
        """This client's clock (the ``clock`` option), in milliseconds since the epoch."""
        return int(self._clock() * 1000)

    def _verify(self, licence: str, now_ms: int) -> LicenceVerification:
        return verify_licence(
            licence, self._keys, now=now_ms / 1000, fingerprint=self.fingerprint, product_key=self._product_key, organisation=self._slug
        )

    def _key(self, licence: LicenceVerification) -> StateKey:
        assert licence.claims is not None
        # A licence's state lives under its own signed organisation and product.
        return StateKey(licence.claims["org"], licence.claims["prd"], licence.claims["lid"])

    def _load(self, licence: LicenceVerification) -> Record:
        if licence.claims is None:
            return EMPTY
        try:
            return self._store.load(self._key(licence))
        except Exception:  # a state that cannot be read is empty
            return EMPTY

    def _save(self, licence: LicenceVerification, change: Callable[[Record], Record]) -> Exception | None:
        """Writes the state; a failure is reported, never raised (the answer still holds)."""
        try:
            self._store.update(self._key(licence), change)
            return None
        except Exception as error:
            return error

    def _forget(self, licence: LicenceVerification) -> None:
        self._store.update(self._key(licence), lambda old: replace(old, answer=None))

    def _air_gap_files(self, licence: LicenceVerification) -> AirGapFiles | None:
        """The air-gap files of the licence's product folder; None with a memory-only store."""
        if licence.claims is None or not isinstance(self._store, FileStore):
            return None
        try:
            return AirGapFiles(self._store.folder(self._key(licence)))
        except ValueError:  # names that never become a path
            return None

    def _air_gap(self) -> tuple[str, AirGapFiles]:
        """The licence's lid and its product's air-gap files; the device key needs a state folder."""
        licence = self._verify(self._licence, self.now_ms())
        if licence.claims is None:
            raise LicensorError("BAD_LICENCE", f"the licence in use does not verify: {', '.join(licence.reasons)}")
        files = self._air_gap_files(licence)
        if files is None:
            raise LicensorError("INVALID_OPTIONS", "air-gapped activation keeps a device key on disk: it needs file_store(), not memory_store()")
        return licence.claims["lid"], files

    def _or_air_gapped(self, result: CheckResult, now: int) -> CheckResult:
        """Without a verified answer that says licensed, a kept air-gapped activation of this
        machine makes the state VALID until its ``until``, unless a verified answer signed after it
        said not licensed; a local clock earlier than its ``iat`` is a rollback (STALE)."""
        files = self._air_gap_files(result.licence)
        if result.state == "VALID" or files is None:
            return result
        try:
            activation = usable_activation(files, self._key(result.licence).lid, self.fingerprint, self._keys)
        except Exception:  # unreadable files hold no activation
            activation = None
        if activation is None:
            return result
        answer = result.answer
        if answer is not None and not answer.grants and _time(answer.checked_at) >= activation["iat"] * 1000:
            return result
        if now < activation["iat"] * 1000 - ROLLBACK_TOLERANCE_MS:
            return replace(result, state="STALE", reasons=[], clock_rollback=True)
        if now >= activation["until"] * 1000:
            return result
        return replace(result, state="VALID", reasons=[], air_gapped=True)

    def _signed(self) -> LicenceVerification:
        licence = self._verify(self._licence, self.now_ms())
        if licence.claims is None:
            raise LicensorError("BAD_LICENCE", f"the licence in use does not verify: {licence.message}")
        return licence

    def _feed_file(self, licence: LicenceVerification) -> Path | None:
        if not isinstance(self._store, FileStore):
            return None
        key = self._key(licence)
        try:
            return self._store.folder(key) / f"{key.lid}.feed.json"
        except ValueError:  # names that never become a path
            return None

    def _kept_feed(self, licence: LicenceVerification) -> KeptFeed | None:
        lid = self._key(licence).lid
        path = self._feed_file(licence)
        if path is not None:
            self._feed = read_feed(path, lid)
        return self._feed if self._feed is not None and self._feed.lid == lid else None

    def _ask_feed(self, licence: LicenceVerification) -> KeptFeed:
        """POSTs ``feed-token`` and keeps the answer; a failure to save it is no failure (it is asked for again)."""
        feed = feed_of(self._key(licence).lid, self._post("feed-token", {"license": self._licence, "fingerprint": self.fingerprint}))
        self._feed = feed
        path = self._feed_file(licence)
        if path is not None:
            try:
                write_feed(path, feed)
            except OSError:
                pass
        return feed

    def _forget_feed(self, licence: LicenceVerification) -> None:
        self._feed = None
        path = self._feed_file(licence)
        if path is not None:
            try:
                path.unlink(missing_ok=True)
            except OSError:
                pass

    def _latest(self, feed: KeptFeed, query: Mapping[str, str]) -> dict[str, Any]:
        """``GET …/feeds/{token}/latest.json``: no credential header, the token is the path."""
        return get_json(f"{self._base}/feeds/{feed.token}/latest.json?{urlencode(query)}", self._timeout)

    def _post(self, endpoint: str, body: Mapping[str, Any]) -> dict[str, Any]:
        return post_json(f"{self._url}/{endpoint}", self._check_token, body, self._timeout)

    def _verify_answer(self, body: Mapping[str, Any], licence: LicenceVerification, nonce: str, now: int) -> tuple[VerifiedAnswer, int]:
        """Rebuilds the receipt from the answer's status, checkedAt and boundAt and from what this
        client knows itself (the licence's lid, the nonce it sent, this machine's fpDigest), so a
        receipt for another licence, nonce or machine cannot verify. ``valid`` and ``reason`` are
        unsigned and never read for the verdict."""
        assert licence.claims is not None
        tag = receipt_tag(licence.claims)
        status, checked_at, bound_at, receipt = body.get("status", ""), body.get("checkedAt"), body.get("boundAt", ""), body.get("receipt")
        # Only SVCR2 signs a lease end; under SVCR1 the field, if any, is not read.
        lease_ends_at = body.get("leaseEndsAt", "") if tag == "SVCR2" else ""
        if not all(isinstance(value, str) for value in (status, checked_at, bound_at, receipt, lease_ends_at)):
            raise LicensorError("BAD_RESPONSE", "the answer lacks the receipt fields")
        stored = {
            "tag": tag,
            "lid": licence.claims["lid"],
            "status": status,
            "nonce": nonce,
            "checkedAt": checked_at,
            "boundAt": bound_at,
            "fpDigest": fp_digest(self.fingerprint),
            "leaseEndsAt": lease_ends_at,
            "receipt": receipt,
            "renewed": body.get("renewed") is True,
            "converted": body.get("converted") is True,
        }
        verified = self._verified(stored, licence, fresh=True)
        if verified is None:
            raise LicensorError("BAD_RECEIPT", "the receipt does not verify for this licence, nonce and machine")
        return verified, _time(verified.checked_at) - now

    def _verified(self, stored: Mapping[str, Any], licence: LicenceVerification, fresh: bool) -> VerifiedAnswer | None:
        """The answer if its receipt verifies for this licence and machine, else None (a saved
        answer edited by hand, or copied from another machine, is worth nothing)."""
        assert licence.claims is not None
        tag = receipt_tag(licence.claims)
        if stored["tag"] != tag or stored["lid"] != licence.claims["lid"] or stored["fpDigest"] != fp_digest(self.fingerprint):
            return None
        if _parse_time(stored["checkedAt"]) is None or (stored["leaseEndsAt"] != "" and _parse_time(stored["leaseEndsAt"]) is None):
            return None
        if not verify_receipt(stored, stored["receipt"], self._keys, tag):
            return None
        return VerifiedAnswer(
            tag=stored["tag"],
            lid=stored["lid"],
            status=stored["status"],
            nonce=stored["nonce"],
            checked_at=stored["checkedAt"],
            bound_at=stored["boundAt"],
            fp_digest=stored["fpDigest"],
            lease_ends_at=stored["leaseEndsAt"],
            receipt=stored["receipt"],
            renewed=stored["renewed"],
            grants=receipt_grants(stored["status"], stored["boundAt"], stored["leaseEndsAt"], tag),
            fresh=fresh,
            converted=stored.get("converted") is True,
        )


def _licence_type(licence: str) -> str | None:
    try:
        return parse_licence(licence).claims.get("typ")
    except MalformedError:
        return None


def _is_trial(licence: LicenceVerification) -> bool:
    """A licence is a trial exactly when ``trl`` is the boolean True (DESIGN 18)."""
    return licence.claims is not None and licence.claims.get("trl") is True and is_int(licence.claims.get("exp"))


def _trial_now(offset_ms: int | None, answer: VerifiedAnswer | None, now: int) -> int:
    """The time a trial is judged at (ms): the later of the service's time and the newest verified checkedAt."""
    service = _service_now(offset_ms, now)
    return service if answer is None else max(service, _time(answer.checked_at))


def _trial_status(licence: LicenceVerification, answer: VerifiedAnswer | None, offset_ms: int | None, now: int) -> TrialStatus | None:
    if not _is_trial(licence):
        return None
    assert licence.claims is not None
    end = licence.claims["exp"] * 1000
    left = max(0, (end - _trial_now(offset_ms, answer, now)) // 1000)
    return TrialStatus(_iso(datetime.fromtimestamp(licence.claims["exp"], timezone.utc)), left, answer is not None and answer.converted)


def _max_seconds(licence: LicenceVerification) -> int:
    """The signed offline window; a licence without ``max`` gets none, so only a fresh answer is VALID."""
    return licence.claims.get("max", 0) if licence.claims is not None else 0


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _iso(moment: datetime) -> str:
    """As JavaScript's toISOString(): UTC, milliseconds, Z."""
    return moment.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _parse_time(text: str) -> int | None:
    """Milliseconds since the epoch of an ISO 8601 time with its offset (``...Z``), else None."""
    try:
        moment = datetime.fromisoformat(text)
    except (ValueError, TypeError):
        return None
    if moment.tzinfo is None:
        return None
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def _time(text: str) -> int:
    """_parse_time of a time already known to parse (a verified answer's)."""
    moment = _parse_time(text)
    assert moment is not None
    return moment


def _service_now(offset_ms: int | None, now: int, bound: int = MAX_OFFSET_MS) -> int:
    """The service's time now, as this machine's clock and the offset seen with the answer tell it."""
    return now + max(-bound, min(bound, offset_ms or 0))


@dataclass(frozen=True)
class _Judgement:
    state: CheckState
    reasons: list[InvalidReason]
    answer: VerifiedAnswer | None
    age_seconds: float | None
    renewed: bool
    lease_ends_at: str | None


def _judge(answer: VerifiedAnswer | None, offset_ms: int | None, now: int, clock_rollback: bool, max_seconds: int) -> _Judgement:
    """The state from the latest verified answer (the licence already verified offline). A
    floating licence's answer (SVCR2) is licensed until its signed lease end, whatever ``max``
    says, judged with the remembered offset believed only up to a minute (DESIGN 13)."""
    if answer is None:
        return _Judgement("STALE", [], None, None, False, None)
    age = (_service_now(offset_ms, now) - _time(answer.checked_at)) / 1000
    state: CheckState
    if not answer.grants:
        state = "INVALID"
    elif answer.fresh:
        state = "VALID"
    elif clock_rollback:
        state = "STALE"
    elif answer.tag == "SVCR2":
        state = "STALE" if _service_now(offset_ms, now, LEASE_OFFSET_MS) >= _time(answer.lease_ends_at) else "VALID"
    else:
        state = "STALE" if age > max_seconds else "VALID"
    reasons: list[InvalidReason] = [_signed_reason(answer.status)] if state == "INVALID" else []
    return _Judgement(state, reasons, answer, age, answer.fresh and answer.renewed, answer.lease_ends_at or None)


def _result(
    licence: LicenceVerification,
    judged: _Judgement,
    clock_rollback: bool,
    *,
    no_answer: NoAnswer | None = None,
    server_reason: str | None = None,
    store_error: Exception | None = None,
    trial: TrialStatus | None = None,
) -> CheckResult:
    return CheckResult(
        state=judged.state,
        reasons=judged.reasons,
        licence=licence,
        answer=judged.answer,
        no_answer=no_answer,
        age_seconds=judged.age_seconds,
        clock_rollback=clock_rollback,
        renewed=judged.renewed,
        server_reason=server_reason,
        store_error=store_error,
        lease_ends_at=judged.lease_ends_at,
        trial=trial,
    )


def _signed_reason(status: str) -> InvalidReason:
    reasons: dict[str, InvalidReason] = {
        "": "UNKNOWN_LICENCE",
        "REVOKED": "REVOKED",
        "PENDING": "NOT_YET_VALID",
        "EXPIRED": "EXPIRED",
        "ACTIVE": "NO_SEAT",
        "GRACE": "NO_SEAT",
    }
    return reasons.get(status, "NOT_LICENSED")
