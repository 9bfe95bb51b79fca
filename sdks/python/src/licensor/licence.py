"""Licence strings (DESIGN 2) and their offline verification (DESIGN 6)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Mapping

from ._wire import (
    CalendarStatus,
    MalformedError,
    PublicKey,
    b64u_decode,
    calendar_status,
    fingerprints_match,
    grace_ends_at,
    is_int,
    parse_fingerprint,
    strict_json,
    verify_bytes,
)
from .fingerprint import collect_fingerprint
from .keys import PublicKeys, read_public_keys

#: Why a licence string is refused offline.
LicenceRefusal = Literal["MALFORMED", "BAD_SIGNATURE", "WRONG_PRODUCT", "NOT_YET_VALID", "EXPIRED", "FINGERPRINT_MISMATCH"]

#: The issuer's claims in wire order; every other key is a product parameter.
CLAIM_NAMES = ("v", "lid", "prd", "org", "typ", "act", "lic", "iat", "nbf", "exp", "grace", "fp", "fpn", "mm", "chk", "max")
#: What a floating licence (``v`` 5, DESIGN 13) adds after ``max``; in ``v`` 3 and 4 they are parameters.
FLOATING_CLAIM_NAMES = ("lse", "brw")


def is_updates_claim(value: Any) -> bool:
    """``upd`` is the update window's claim (DESIGN 20) exactly when it is a whole number of Unix
    seconds; a product's parameter that kept the name ``upd`` (DESIGN 2) stays a parameter otherwise."""
    return is_int(value) and value >= 0


def updates_until_of(claims: Mapping[str, Any]) -> datetime | None:
    """The end of the update window (DESIGN 20): ``upd``, else the grace end (a trial's end), else None."""
    if is_updates_claim(claims.get("upd")):
        return _date(claims["upd"])
    return _date(grace_ends_at(claims.get("exp"), claims["grace"]))


def is_meter_claim(value: object) -> bool:
    """``mtr`` is the meters claim (DESIGN 19) exactly when it is a non-empty list of objects, which
    no parameter's value is; a product's parameter that kept the name stays a parameter."""
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


LEASE_SECONDS_RANGE = (60, 3_600)
BORROW_SECONDS_MAX = 2_592_000
#: The service's default fingerprintNeed, used when a licence signs ``fp`` without ``fpn``.
DEFAULT_FINGERPRINT_NEED = 3


@dataclass(frozen=True)
class ParsedLicence:
    payload_part: str
    claims: dict[str, Any]
    signature: bytes


def _text(value: object) -> bool:
    return isinstance(value, str) and value != ""


def _claims_problem(c: Mapping[str, Any]) -> str | None:
    """Describes the first claim that is missing or of the wrong type, or None when all are right."""
    fp_is_list = isinstance(c.get("fp"), list)
    v = c.get("v")
    if not is_int(v) or v not in (3, 4, 5):
        return 'claim "v" must be 3, 4 or 5'
    for name in ("lid", "prd", "org"):
        if not _text(c.get(name)):
            return f'claim "{name}" must be a non-empty string'
    if "typ" in c and c["typ"] not in ("OFFLINE", "ONLINE", "HYBRID"):
        return 'claim "typ" must be OFFLINE, ONLINE or HYBRID'
    if "act" in c and c["act"] not in ("ONLINE", "OFFLINE"):
        return 'claim "act" must be ONLINE or OFFLINE'
    if "lic" in c and not isinstance(c["lic"], str):
        return 'claim "lic" must be a string'
    if not is_int(c.get("iat")):
        return 'claim "iat" must be an integer'
    for name in ("nbf", "exp"):
        if name in c and not is_int(c[name]):
            return f'claim "{name}" must be an integer'
    if not is_int(c.get("grace")) or c["grace"] < 0:
        return 'claim "grace" must be an integer of at least 0'
    if "fp" in c:
        fp = c["fp"]
        ok = len(fp) > 1 and all(_text(item) for item in fp) if fp_is_list else _text(fp)
        if not ok:
            return 'claim "fp" must be a fingerprint or a list of several fingerprints'
    # A verifier that predates multi-machine binding must refuse a list, hence the version.
    if v != 5 and (v == 4) != fp_is_list:
        return 'claim "v" must be 4 exactly when "fp" is a list'
    if "fpn" in c and (not is_int(c["fpn"]) or not 1 <= c["fpn"] <= 5):
        return 'claim "fpn" must be an integer from 1 to 5'
    if not is_int(c.get("mm")) or c["mm"] < 1:
        return 'claim "mm" must be an integer of at least 1'
    for name in ("chk", "max"):
        if name in c and (not is_int(c[name]) or c[name] < 0):
            return f'claim "{name}" must be an integer of at least 0'
    return _floating_problem(c) if v == 5 else None


def _floating_problem(c: Mapping[str, Any]) -> str | None:
    """A floating licence: ONLINE, no at-issue fingerprints, a lease length, maybe a borrow limit."""
    low, high = LEASE_SECONDS_RANGE
    if not is_int(c.get("lse")) or not low <= c["lse"] <= high:
        return f'claim "lse" must be an integer from {low} to {high} when "v" is 5'
    if "brw" in c and (not is_int(c["brw"]) or not 1 <= c["brw"] <= BORROW_SECONDS_MAX):
        return f'claim "brw" must be an integer from 1 to {BORROW_SECONDS_MAX}'
    if c.get("typ") != "ONLINE":
        return 'claim "typ" must be ONLINE when "v" is 5'
    if "fp" in c:
        return 'claim "fp" is not allowed when "v" is 5'
    return None


def parse_licence(text: str) -> ParsedLicence:
    """Strict structural parse; the signature is not checked here. Raises MalformedError."""
    if not isinstance(text, str):
        raise MalformedError("licence is not a string")
    pieces = text.split(".")
    if len(pieces) != 2:
        raise MalformedError('licence must have exactly two parts separated by "."')
    payload_part, signature_part = pieces
    signature = b64u_decode(signature_part, "licence signature")
    payload = b64u_decode(payload_part, "licence payload")
    try:
        decoded = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise MalformedError("licence payload is not UTF-8 JSON") from None
    # The reference verifier's UTF-8 decoder drops a leading byte order mark; so does this one.
    claims = strict_json(decoded.removeprefix("\ufeff"), integers_only=True)
    if not isinstance(claims, dict):
        raise MalformedError("licence payload is not a JSON object")
    problem = _claims_problem(claims)
    if problem is not None:
        raise MalformedError(f"licence {problem}")
    return ParsedLicence(payload_part, claims, signature)


def signed_by(parsed: ParsedLicence, keys: list[PublicKey]) -> PublicKey | None:
    """The key whose signature the licence carries (over the payload's base64url text), or None."""
    data = parsed.payload_part.encode("ascii")
    for key in keys:
        if verify_bytes(key, data, parsed.signature):
            return key
    return None


@dataclass(frozen=True)
class LicenceVerification:
    """The offline verdict. ``signed`` False (``MALFORMED``, ``BAD_SIGNATURE``) means nothing in
    the string can be trusted: ``claims`` is None. Otherwise the claims are the signed ones,
    whatever the verdict."""

    signed: bool
    #: True exactly when ``reasons`` is empty.
    valid: bool
    #: Every refusal that applies (calendar and machine), empty when valid.
    reasons: list[LicenceRefusal]
    claims: dict[str, Any] | None
    #: Why a string that is not signed was refused.
    message: str = ""
    #: The product's parameters, in signed order.
    params: dict[str, Any] = field(default_factory=dict)
    #: The term's calendar status now (DESIGN 3); revocation is known only online.
    status: CalendarStatus | None = None
    starts_at: datetime | None = None
    #: None for a perpetual licence.
    expires_at: datetime | None = None
    #: ``exp + grace × 86,400 s`` exactly; None for a perpetual licence.
    grace_ends_at: datetime | None = None
    #: Whether this machine matches a signed ``fp`` by ``fpn``; None when none is signed in.
    fingerprint_match: bool | None = None


def _date(seconds: int | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, timezone.utc)


def verify_licence(
    licence: str,
    public_keys: PublicKeys,
    *,
    now: datetime | float | None = None,
    fingerprint: str | None = None,
    stable_id: str | None = None,
    product_key: str | None = None,
    organisation: str | None = None,
) -> LicenceVerification:
    """Verifies a licence string offline with the product's public key or key history: form,
    signature, calendar (``nbf``, ``exp`` plus exact grace) and machine. Never touches the network.

    ``now`` is a datetime or seconds since the epoch (default: the current time). ``fingerprint``
    is this machine's (collected, with ``stable_id``, only when the licence signs one in).
    ``product_key`` and ``organisation`` pin the licence to this application (``WRONG_PRODUCT``).
    Raises LicensorError ``INVALID_KEY`` only for keys that cannot be read.
    """
    keys = read_public_keys(public_keys)
    try:
        parsed = parse_licence(licence)
    except MalformedError as error:
        return LicenceVerification(False, False, ["MALFORMED"], None, message=str(error))
    if signed_by(parsed, keys) is None:
        return LicenceVerification(False, False, ["BAD_SIGNATURE"], None, message="licence signature does not verify")

    claims = parsed.claims
    if now is None:
        now = time.time()
    now_seconds = int(now.timestamp() // 1) if isinstance(now, datetime) else int(now // 1)
    status = calendar_status(claims, now_seconds)
    reasons: list[LicenceRefusal] = []
    if (product_key is not None and claims["prd"] != product_key) or (organisation is not None and claims["org"] != organisation):
        reasons.append("WRONG_PRODUCT")
    if status == "PENDING":
        reasons.append("NOT_YET_VALID")
    if status == "EXPIRED":
        reasons.append("EXPIRED")

    fingerprint_match: bool | None = None
    if "fp" in claims:
        mine = parse_fingerprint(fingerprint if fingerprint is not None else collect_fingerprint(stable_id=stable_id).fingerprint)
        need = claims.get("fpn", DEFAULT_FINGERPRINT_NEED)
        signed = claims["fp"] if isinstance(claims["fp"], list) else [claims["fp"]]
        fingerprint_match = any(_matches(fp, mine, need) for fp in signed)
        if not fingerprint_match:
            reasons.append("FINGERPRINT_MISMATCH")

    reserved = CLAIM_NAMES + FLOATING_CLAIM_NAMES if claims["v"] == 5 else CLAIM_NAMES
    return LicenceVerification(
        signed=True,
        valid=not reasons,
        reasons=reasons,
        claims=claims,
        # A trial's ``trl`` is its claim (DESIGN 18); a product whose parameter kept the name has no trials.
        params={key: value for key, value in claims.items() if key not in reserved and not (key == "trl" and claims["trl"] is True) and not (key == "mtr" and is_meter_claim(value)) and not (key == "upd" and is_updates_claim(value))},
        status=status,
        starts_at=_date(claims.get("nbf")),
        expires_at=_date(claims.get("exp")),
        grace_ends_at=_date(grace_ends_at(claims.get("exp"), claims["grace"])),
        fingerprint_match=fingerprint_match,
    )


def _matches(signed: str, mine: Mapping[str, str], need: int) -> bool:
    try:
        return fingerprints_match(parse_fingerprint(signed), mine, need)
    except MalformedError:
        # A signed-in fingerprint the service should never have accepted matches nothing.
        return False


def read_licence_file(path: str | os.PathLike[str]) -> str:
    """The licence string in a ``.lic`` file, without what an editor or a download puts around it:
    a byte-order mark and surrounding spaces, tabs and line breaks. ``verify_licence`` itself stays
    strict (a string with a trailing newline is MALFORMED), so read files through this."""
    return Path(path).read_text(encoding="utf-8").removeprefix("\ufeff").strip(" \t\r\n\f\v")
