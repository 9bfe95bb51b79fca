"""Air-gapped activation (DESIGN 14, docs/protocol.md sections 8 and 11): the three texts a person
carries between a machine that never reaches the service and a browser, and the files an
installation keeps for them in its product's state folder."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat, PublicFormat

from ._wire import FingerprintError, MalformedError, PublicKey, b64u_decode, b64u_encode, is_int, parse_fingerprint, strict_json, verify_bytes
from .errors import LicensorError
from .store import FileLock, make_folders, write_atomically

# Far above any well-formed text (a request is about 450 characters), so big inputs are refused unread.
MAX_TEXT = 4096
#: How many deactivated activations are remembered (the oldest are forgotten first).
DEACTIVATED_KEPT = 1000
_NONCE = re.compile(r"[A-Za-z0-9_-]{16,128}")
_AID = re.compile(r"[0-9]{1,20}")
_SPACE = re.compile(r"\s+")


def _is_fingerprint(value: object) -> bool:
    try:
        parse_fingerprint(value)  # type: ignore[arg-type]
        return True
    except FingerprintError:
        return False


def _is_dpk(value: object) -> bool:
    try:
        return isinstance(value, str) and len(b64u_decode(value, "dpk")) == 32
    except MalformedError:
        return False


_RULES: dict[str, tuple[Callable[[object], bool], str]] = {
    "lid": (lambda v: isinstance(v, str) and 0 < len(v) <= 128, "a licence id of 1 to 128 characters"),
    "aid": (lambda v: isinstance(v, str) and _AID.fullmatch(v) is not None, "an activation id of 1 to 20 digits"),
    "fp": (_is_fingerprint, "a fingerprint"),
    "dpk": (_is_dpk, "base64url of 32 bytes"),
    "nonce": (lambda v: isinstance(v, str) and _NONCE.fullmatch(v) is not None, "16 to 128 characters of A-Z a-z 0-9 _ -"),
    "status": (lambda v: v in ("ACTIVE", "GRACE"), "ACTIVE or GRACE"),
    "iat": (lambda v: is_int(v) and v >= 0, "Unix seconds"),
    "boundAt": (lambda v: is_int(v) and v >= 0, "Unix seconds"),
    "until": (lambda v: is_int(v) and v >= 0, "Unix seconds"),
}

#: Each text's tag, its name in refusals and its payload fields in wire order.
REQUEST = ("SVCA1", "activation request", ("lid", "fp", "dpk", "nonce", "iat"))
RESPONSE = ("SVCX1", "activation response", ("lid", "aid", "fp", "dpk", "nonce", "status", "iat", "boundAt", "until"))
DEACTIVATION = ("SVCD1", "deactivation code", ("lid", "aid", "iat"))
Format = tuple[str, str, tuple[str, ...]]


@dataclass(frozen=True)
class Signed:
    """A parsed text: its fields, the signed part (``TAG.<payload>``) and the signature bytes."""

    text: str
    signed_part: str
    fields: dict[str, Any]
    signature: bytes

    def verifies_with(self, key: PublicKey) -> bool:
        return verify_bytes(key, self.signed_part.encode("ascii"), self.signature)


def parse_text(form: Format, text: str) -> Signed:
    """Strict structural parse: exact tag, canonical base64url, strict JSON, exactly these fields.
    Raises MalformedError; the signature is not checked here."""
    tag, what, names = form
    if not isinstance(text, str):
        raise MalformedError(f"{what} is not a string")
    if len(text) > MAX_TEXT:
        raise MalformedError(f"{what} is too long")
    pieces = text.split(".")
    if pieces[0] != tag:
        raise MalformedError(f'{what} must start with "{tag}."')
    if len(pieces) != 3:
        raise MalformedError(f"{what} must have three parts: {tag}.<payload>.<signature>")
    payload = b64u_decode(pieces[1], f"{what} payload")
    signature = b64u_decode(pieces[2], f"{what} signature")
    try:
        value = strict_json(payload.decode("utf-8"), integers_only=True)
    except UnicodeDecodeError:
        raise MalformedError(f"{what} payload is not UTF-8 JSON") from None
    if not isinstance(value, dict):
        raise MalformedError(f"{what} payload is not a JSON object")
    extra = next((name for name in value if name not in names), None)
    if extra is not None:
        raise MalformedError(f'{what} has an unknown field "{extra}"')
    for name in names:
        check, rule = _RULES[name]
        if not check(value.get(name)):
            raise MalformedError(f'{what} field "{name}" must be {rule}')
    return Signed(text, f"{tag}.{pieces[1]}", value, signature)


def sign_text(form: Format, fields: Mapping[str, Any], key: Ed25519PrivateKey) -> str:
    """The text of these fields in wire order, written as JSON.stringify writes them, signed by the device key."""
    tag, what, names = form
    for name in names:
        check, rule = _RULES[name]
        if not check(fields.get(name)):
            raise ValueError(f'{what} field "{name}" must be {rule}')
    payload = json.dumps({name: fields[name] for name in names}, separators=(",", ":"), ensure_ascii=False)
    signed_part = f"{tag}.{b64u_encode(payload.encode('utf-8'))}"
    return f"{signed_part}.{b64u_encode(key.sign(signed_part.encode('ascii')))}"


def compact_text(text: str) -> str:
    """The text with every whitespace character removed: how a typed or grouped text is read back."""
    return _SPACE.sub("", text)


def groups_of_five(text: str) -> str:
    """The text in pieces of five characters joined by single spaces, for reading out and typing."""
    return " ".join(text[i : i + 5] for i in range(0, len(text), 5))


def device_key(seed: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(b64u_decode(seed, "seed"))


def dpk_of(key: Ed25519PrivateKey) -> str:
    """``dpk``: B64U of the device key's 32 raw public bytes."""
    return b64u_encode(key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))


def same_machine(a: str, b: str) -> bool:
    """Equal in all five components."""
    try:
        return parse_fingerprint(a) == parse_fingerprint(b)
    except FingerprintError:
        return False


# --- the files of one product folder ---------------------------------------------------------


@dataclass
class AirGapState:
    """``air-gap.json``: the one pending request, the accepted response per lid and the ``aid``
    and ``nonce`` of every activation deactivated here."""

    pending: str | None = None
    activations: dict[str, str] = field(default_factory=dict)
    deactivated: list[dict[str, str]] = field(default_factory=list)


def _read_state(text: str | None) -> AirGapState:
    """Each field alone; a field of the wrong type is empty."""
    try:
        data = json.loads(text) if text is not None else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or data.get("format") != 1:
        return AirGapState()
    pending, activations, deactivated = data.get("pending"), data.get("activations"), data.get("deactivated")
    return AirGapState(
        pending if isinstance(pending, str) else None,
        {lid: text for lid, text in activations.items() if isinstance(text, str)} if isinstance(activations, dict) else {},
        [{"aid": d["aid"], "nonce": d["nonce"]} for d in deactivated if isinstance(d, dict) and isinstance(d.get("aid"), str) and isinstance(d.get("nonce"), str)]
        if isinstance(deactivated, list)
        else [],
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


T = TypeVar("T")


class AirGapFiles:
    """``device.json``, ``air-gap.json`` and their lock ``air-gap.lock`` in one product folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def load(self) -> AirGapState:
        return _read_state(_read(self.folder / "air-gap.json"))

    def device(self, fingerprint: str) -> Ed25519PrivateKey | None:
        """The device key made on exactly this fingerprint, if there is one."""
        try:
            data = json.loads(_read(self.folder / "device.json") or "null")
            if isinstance(data, dict) and data.get("format") == 1 and data.get("fingerprint") == fingerprint and isinstance(data.get("seed"), str):
                return device_key(data["seed"])
        except ValueError:  # not JSON, or a seed that is not 32 bytes of base64url
            pass
        return None

    def update(self, fingerprint: str, change: Callable[[AirGapState, Callable[[], Ed25519PrivateKey]], T]) -> T:
        """Changes the state under the lock; ``change`` is given a function answering the device
        key of this fingerprint, made (and saved) on first use."""
        make_folders(self.folder)
        with FileLock(self.folder / "air-gap.lock"):
            state = self.load()

            def device() -> Ed25519PrivateKey:
                key = self.device(fingerprint)
                if key is None:
                    key = Ed25519PrivateKey.generate()
                    seed = key.private_bytes(Encoding.Raw, PrivateFormat.Raw, NoEncryption())
                    document = {"format": 1, "seed": b64u_encode(seed), "dpk": dpk_of(key), "fingerprint": fingerprint}
                    write_atomically(self.folder / "device.json", json.dumps(document, indent=2) + "\n")
                return key

            result = change(state, device)
            document = {"format": 1, "pending": state.pending, "activations": state.activations, "deactivated": state.deactivated[-DEACTIVATED_KEPT:]}
            write_atomically(self.folder / "air-gap.json", json.dumps(document, indent=2, ensure_ascii=False) + "\n")
            return result


def _bad(message: str) -> LicensorError:
    return LicensorError("BAD_ACTIVATION", message)


def make_request(files: AirGapFiles, lid: str, fingerprint: str, now_seconds: int) -> str:
    """A new pending request for ``lid`` from this machine, replacing any other."""

    def change(state: AirGapState, device: Callable[[], Ed25519PrivateKey]) -> str:
        key = device()
        nonce = b64u_encode(secrets.token_bytes(24))
        state.pending = sign_text(REQUEST, {"lid": lid, "fp": fingerprint, "dpk": dpk_of(key), "nonce": nonce, "iat": now_seconds}, key)
        return state.pending

    return files.update(fingerprint, change)


def accept_response(files: AirGapFiles, text: str, lid: str, fingerprint: str, keys: list[PublicKey]) -> dict[str, Any]:
    """Keeps a response that verifies with a product key and answers this installation's pending
    request on this machine; anything else is BAD_ACTIVATION and changes nothing."""
    try:
        parsed = parse_text(RESPONSE, compact_text(text))
    except MalformedError as error:
        raise _bad(f"not an activation response: {error}") from None
    if not any(parsed.verifies_with(key) for key in keys):
        raise _bad("the response does not verify with this product's keys")
    fields = parsed.fields

    def change(state: AirGapState, _: Callable[[], Ed25519PrivateKey]) -> dict[str, Any]:
        try:
            pending = parse_text(REQUEST, state.pending or "").fields
        except MalformedError:  # none, or a damaged file's
            raise _bad("no activation request is pending on this installation") from None
        device = files.device(fingerprint)
        if fields["lid"] != lid or pending["lid"] != lid:
            raise _bad("the response is for another licence")
        if fields["dpk"] != pending["dpk"] or device is None or dpk_of(device) != fields["dpk"]:
            raise _bad("the response is for another installation")
        if fields["nonce"] != pending["nonce"]:
            raise _bad("the response answers another request")
        if fields["fp"] != pending["fp"] or not same_machine(fields["fp"], fingerprint):
            raise _bad("the response is for another machine")
        if any(d["aid"] == fields["aid"] or d["nonce"] == fields["nonce"] for d in state.deactivated):
            raise _bad("the response is for an activation deactivated here")
        state.pending = None
        state.activations[lid] = parsed.text
        return fields

    return files.update(fingerprint, change)


def deactivate(files: AirGapFiles, lid: str, fingerprint: str, now_seconds: int) -> str:
    """Forgets this licence's activation first, then answers the deactivation code its device key signs."""

    def change(state: AirGapState, device: Callable[[], Ed25519PrivateKey]) -> str:
        text = state.activations.pop(lid, None)
        if text is None:
            raise _bad("this installation holds no air-gapped activation of this licence")
        try:
            fields = parse_text(RESPONSE, text).fields
        except MalformedError:
            raise _bad("this installation's air-gapped activation of this licence is damaged") from None
        state.deactivated.append({"aid": fields["aid"], "nonce": fields["nonce"]})
        return sign_text(DEACTIVATION, {"lid": lid, "aid": fields["aid"], "iat": now_seconds}, device())

    return files.update(fingerprint, change)


def usable_activation(files: AirGapFiles, lid: str, fingerprint: str, keys: list[PublicKey]) -> dict[str, Any] | None:
    """This licence's kept activation when it still verifies, for this device key and this
    machine's exact fingerprint; else None."""
    text = files.load().activations.get(lid)
    if text is None:
        return None
    try:
        parsed = parse_text(RESPONSE, text)
    except MalformedError:
        return None
    device = files.device(fingerprint)
    fields = parsed.fields
    usable = (
        any(parsed.verifies_with(key) for key in keys)
        and fields["lid"] == lid
        and device is not None
        and dpk_of(device) == fields["dpk"]
        and same_machine(fields["fp"], fingerprint)
    )
    return fields if usable else None


def end_activation(files: AirGapFiles, lid: str, fingerprint: str) -> None:
    """Ends this licence's activation here (a later verified answer said not licensed)."""
    files.update(fingerprint, lambda state, _: state.activations.pop(lid, None))
