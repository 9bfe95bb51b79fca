"""DESIGN 2's strict encodings: canonical base64url, strict JSON, receipts, fingerprints, calendar."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any, Literal, Mapping, TypeGuard

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa

PublicKey = ed25519.Ed25519PublicKey | rsa.RSAPublicKey | ec.EllipticCurvePublicKey


class MalformedError(ValueError):
    """Wire input that is not exactly in the agreed form; the SDK reports it as ``MALFORMED``."""


_B64U = re.compile(r"[A-Za-z0-9_-]*")


def b64u_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64u_decode(text: str, what: str = "value", allow_empty: bool = False) -> bytes:
    """Decodes only the canonical unpadded form: Python's decoder alone accepts padding, stray
    characters and non-zero trailing bits, so the result must re-encode to the input."""
    if not isinstance(text, str):
        raise MalformedError(f"{what} is not a string")
    if text == "" and not allow_empty:
        raise MalformedError(f"{what} is empty")
    if not _B64U.fullmatch(text) or len(text) % 4 == 1:
        raise MalformedError(f"{what} is not canonical unpadded base64url")
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if b64u_encode(data) != text:
        raise MalformedError(f"{what} is not canonical unpadded base64url")
    return data


# JavaScript's exact integers: beyond them the service's own numbers would already be wrong.
MAX_SAFE_INTEGER = 2**53 - 1


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise MalformedError(f'duplicate key "{key}"')
        result[key] = value
    return result


def _constant(name: str) -> Any:
    raise MalformedError(f"{name} is not JSON")


def _integer(text: str) -> int:
    value = int(text)
    if abs(value) > MAX_SAFE_INTEGER:
        raise MalformedError(f"number {text} is out of range")
    return value


def _fraction(text: str) -> Any:
    raise MalformedError(f"number {text} is not an integer")


def strict_json(text: str, integers_only: bool = False) -> Any:
    """JSON with duplicate keys, NaN and Infinity refused (and, for licence payloads, any
    number that is not written as an integer)."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_pairs,
            parse_constant=_constant,
            parse_int=_integer,
            parse_float=_fraction if integers_only else float,
        )
    except MalformedError:
        raise
    except (ValueError, RecursionError) as error:
        raise MalformedError(f"not JSON: {error}") from None


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and abs(value) <= MAX_SAFE_INTEGER


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --- signatures (DESIGN 2: Ed25519, RSA PKCS#1 v1.5 with SHA-256, DER ECDSA with SHA-256/384) ---


def verify_bytes(key: PublicKey, data: bytes, signature: bytes) -> bool:
    """False for any signature that does not verify, and for keys that are none of the six algorithms."""
    try:
        if isinstance(key, ed25519.Ed25519PublicKey):
            key.verify(signature, data)
        elif isinstance(key, rsa.RSAPublicKey):
            if key.key_size not in (2048, 3072, 4096):
                return False
            key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
        elif isinstance(key, ec.EllipticCurvePublicKey):
            if isinstance(key.curve, ec.SECP256R1):
                key.verify(signature, data, ec.ECDSA(hashes.SHA256()))
            elif isinstance(key.curve, ec.SECP384R1):
                key.verify(signature, data, ec.ECDSA(hashes.SHA384()))
            else:
                return False
        else:
            return False
    except (InvalidSignature, ValueError):
        return False
    return True


# --- receipts -----------------------------------------------------------------------------------

RECEIPT_FIELDS = ("lid", "status", "nonce", "checkedAt", "boundAt", "fpDigest")
_SEPARATOR = "\x1f"


def receipt_tag(claims: Mapping[str, Any]) -> str:
    """The presented term's ``v`` alone decides: SVCR2 for a floating licence (``v`` 5), else SVCR1."""
    return "SVCR2" if claims["v"] == 5 else "SVCR1"


def _field(fields: Mapping[str, str | None], name: str) -> str:
    value = fields.get(name) or ""
    if not isinstance(value, str):
        raise MalformedError(f'receipt field "{name}" must be a string')
    if _SEPARATOR in value:
        raise MalformedError(f'receipt field "{name}" contains the separator 0x1F')
    return value


def receipt_message(fields: Mapping[str, str | None], tag: str = "SVCR1") -> bytes:
    """UTF-8 of ``SVCR1␟lid␟status␟nonce␟checkedAt␟boundAt␟fpDigest``, or for SVCR2 the same
    with ``␟leaseEndsAt``; an absent field is the empty string. SVCR1 cannot vouch for a lease end."""
    text = tag + "".join(_SEPARATOR + _field(fields, name) for name in RECEIPT_FIELDS)
    lease_ends_at = _field(fields, "leaseEndsAt")
    if tag == "SVCR2":
        text += _SEPARATOR + lease_ends_at
    elif tag != "SVCR1":
        raise MalformedError(f"unknown receipt tag {tag!r}")
    elif lease_ends_at != "":
        raise MalformedError('an SVCR1 receipt does not sign "leaseEndsAt"')
    return text.encode("utf-8")


def verify_receipt(fields: Mapping[str, str | None], receipt: str, keys: list[PublicKey], tag: str = "SVCR1") -> bool:
    """True when one of the keys signed exactly these fields; false for anything malformed."""
    try:
        message = receipt_message(fields, tag)
    except (MalformedError, UnicodeEncodeError):
        return False
    return verify_signature(message, receipt, keys)


def verify_signature(message: bytes, receipt: str, keys: list[PublicKey]) -> bool:
    """True when one of the keys signed the message, ``receipt`` its strict base64url signature."""
    try:
        signature = b64u_decode(receipt, "receipt")
    except (MalformedError, UnicodeEncodeError):
        return False
    return any(verify_bytes(key, message, signature) for key in keys)


def receipt_grants(status: str, bound_at: str, lease_ends_at: str = "", tag: str = "SVCR1") -> bool:
    """Licensed on this machine by the signed fields alone: ACTIVE or GRACE, and a seat bound
    (under SVCR2 a lease end signed too, which the caller judges against its clock)."""
    return status in ("ACTIVE", "GRACE") and bound_at != "" and (tag == "SVCR1" or lease_ends_at != "")


# --- fingerprints -------------------------------------------------------------------------------

COMPONENTS = ("machine", "host", "mac", "cpu", "disk")
MISSING = "-"
_PREFIX = "SVC1"
_MAX_LENGTH = 256
_PART = re.compile(r"[0-9a-f]{16}|-")
_CHECKSUM = re.compile(r"[0-9a-f]{8}")

FingerprintProblem = Literal["PREFIX", "STRUCTURE", "ENCODING", "COMPONENTS", "COMPONENT_VALUE", "CHECKSUM"]


class FingerprintError(MalformedError):
    def __init__(self, problem: FingerprintProblem, message: str) -> None:
        super().__init__(message)
        self.problem: FingerprintProblem = problem


def hash_component(raw: str) -> str:
    return sha256_hex(raw)[:16]


def _checksum(body: str) -> str:
    return sha256_hex(f"{_PREFIX}.{body}")[:8]


def fingerprint_from_parts(parts: Mapping[str, str]) -> str:
    fields = []
    for name in COMPONENTS:
        value = parts[name]
        if not _PART.fullmatch(value):
            raise ValueError(f'fingerprint part "{name}" must be 16 lowercase hex characters or "-"')
        fields.append(f"{name}={value}")
    body = b64u_encode(";".join(fields).encode("utf-8"))
    return f"{_PREFIX}.{body}.{_checksum(body)}"


def build_fingerprint(raw: Mapping[str, str | None]) -> str:
    """Hashes raw component values; a missing or empty value counts as unreadable."""
    parts = {}
    for name in COMPONENTS:
        value = raw.get(name)
        parts[name] = hash_component(value) if value else MISSING
    return fingerprint_from_parts(parts)


def parse_fingerprint(text: str) -> dict[str, str]:
    """The five hashed parts of an exact ``SVC1.<body>.<checksum>``; anything else raises FingerprintError."""
    if not isinstance(text, str):
        raise FingerprintError("STRUCTURE", "fingerprint must be a string")
    if not text.startswith(f"{_PREFIX}."):
        raise FingerprintError("PREFIX", f'fingerprint must start with "{_PREFIX}."')
    if len(text) > _MAX_LENGTH:
        raise FingerprintError("STRUCTURE", "fingerprint is too long")
    pieces = text.split(".")
    if len(pieces) != 3:
        raise FingerprintError("STRUCTURE", "fingerprint must have three dot-separated parts: SVC1.<body>.<checksum>")
    body, checksum = pieces[1], pieces[2]
    try:
        decoded = b64u_decode(body, "fingerprint body")
    except MalformedError:
        raise FingerprintError("ENCODING", "fingerprint body is not canonical unpadded base64url") from None
    if not _CHECKSUM.fullmatch(checksum):
        raise FingerprintError("STRUCTURE", "fingerprint checksum must be 8 lowercase hex characters")
    fields = decoded.decode("latin-1").split(";")
    if len(fields) != len(COMPONENTS):
        raise FingerprintError("COMPONENTS", f"fingerprint body must list exactly {', '.join(COMPONENTS)}")
    parts: dict[str, str] = {}
    for name, field in zip(COMPONENTS, fields):
        if not field.startswith(f"{name}="):
            raise FingerprintError("COMPONENTS", f"fingerprint body must list exactly {', '.join(COMPONENTS)}, in that order")
        value = field[len(name) + 1 :]
        if not _PART.fullmatch(value):
            raise FingerprintError("COMPONENT_VALUE", f'fingerprint component "{name}" must be 16 lowercase hex characters or "-"')
        parts[name] = value
    if _checksum(body) != checksum:
        raise FingerprintError("CHECKSUM", "fingerprint checksum does not match its body")
    return parts


def match_score(a: Mapping[str, str], b: Mapping[str, str]) -> int:
    return sum(1 for name in COMPONENTS if a[name] != MISSING and a[name] == b[name])


def fingerprints_match(a: Mapping[str, str], b: Mapping[str, str], need: int) -> bool:
    """Same machine when at least ``need`` (1 to 5) components are present in both and equal."""
    if not is_int(need) or not 1 <= need <= len(COMPONENTS):
        raise ValueError("fingerprint need must be an integer from 1 to 5")
    return match_score(a, b) >= need


def fp_digest(fingerprint: str) -> str:
    """First 32 lowercase hex characters of SHA-256 over the fingerprint exactly as sent."""
    return sha256_hex(fingerprint)[:32]


# --- calendar (DESIGN 3) ------------------------------------------------------------------------

CalendarStatus = Literal["PENDING", "ACTIVE", "GRACE", "EXPIRED"]
DAY_SECONDS = 86_400


def grace_ends_at(exp: int | None, grace_days: int) -> int | None:
    return None if exp is None else exp + grace_days * DAY_SECONDS


def calendar_status(claims: Mapping[str, Any], now_seconds: int) -> CalendarStatus:
    nbf, exp = claims.get("nbf"), claims.get("exp")
    if nbf is not None and now_seconds < nbf:
        return "PENDING"
    if exp is None or now_seconds < exp:
        return "ACTIVE"
    if now_seconds < exp + claims["grace"] * DAY_SECONDS:
        return "GRACE"
    return "EXPIRED"
