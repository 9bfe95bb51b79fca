"""Updates on the client (DESIGN 20): the feed token kept per licence, ``latest.json`` and its
SVCM1 manifest, and downloads kept only when they are the manifest's (docs/protocol.md 16)."""

from __future__ import annotations

import hashlib
import json
import os
import platform as _platform
import re
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping, Sequence

from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from ._wire import MalformedError, PublicKey, b64u_decode, is_int, verify_bytes
from .errors import LicensorError
from .store import make_folders, write_atomically

CHANNELS = ("stable", "rc", "beta", "alpha", "dev")
PLATFORMS = ("linux", "darwin", "windows", "any")
ARCHES = ("x86_64", "aarch64", "i686", "armv7", "riscv64", "universal", "any")

_IDENTIFIER = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_SEMVER = re.compile(rf"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-({_IDENTIFIER}(?:\.{_IDENTIFIER})*))?")
#: DESIGN 20's filename rule, so a name can never leave the folder it is written to.
_FILENAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._+ -]{0,253}[A-Za-z0-9._+-])?")
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")

_OWN_PLATFORM = {"linux": "linux", "darwin": "darwin", "win32": "windows"}
_OWN_ARCH = {"x86_64": "x86_64", "amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64", "i386": "i686", "i686": "i686", "x86": "i686", "armv7l": "armv7", "riscv64": "riscv64"}


@dataclass(frozen=True)
class UpdateArtifact:
    """One file of an update, as ``latest.json`` lists it; ``size`` and ``sha256`` are the signed manifest's."""

    id: int
    filename: str
    platform: str
    arch: str
    size: int
    sha256: str
    sha512: str
    content_type: str
    #: The feed's ``files/`` URL: it works without a credential while the feed token does.
    url: str


@dataclass(frozen=True)
class ManifestSignature:
    key_fingerprint: str
    signature: str


@dataclass(frozen=True)
class Update:
    """A newer release whose manifest verified with a key this application ships."""

    version: str
    channel: str
    #: ISO 8601.
    published_at: str
    notes: str
    #: The SVCM1 text the signatures cover (docs/protocol.md section 14).
    manifest: str
    manifest_signatures: list[ManifestSignature]
    manifest_signature: str | None
    manifest_key_fingerprint: str | None
    #: This platform's and arch's files, by filename in byte order.
    artifacts: list[UpdateArtifact]


@dataclass(frozen=True)
class BlockedUpdate:
    """A newer release the licence may not download: its window ended first, or its ``requires`` are not met."""

    version: str
    published_at: str
    reason: Literal["UPDATES_EXPIRED", "NOT_ENTITLED"]


@dataclass(frozen=True)
class UpdateCheck:
    #: The highest covered release above the running version with files for this machine, or None.
    update: Update | None
    #: The highest release above both that this licence may not download, or None.
    blocked: BlockedUpdate | None


@dataclass(frozen=True)
class FeedUrls:
    """The licence's feed URLs for this machine: secrets, for electron-updater, Tauri, Sparkle and ``latest.json``."""

    electron: str
    tauri: str
    sparkle: str
    json: str


@dataclass(frozen=True)
class Download:
    """What download() kept: the file, its size and its SHA-256 (lowercase hex), both the manifest's."""

    path: str
    size: int
    sha256: str


def is_version(value: object) -> bool:
    return isinstance(value, str) and len(value) <= 64 and _SEMVER.fullmatch(value) is not None


def compare_versions(a: str, b: str) -> int:
    """SemVer 2.0.0 precedence of two versions without build metadata: negative, zero or positive."""
    x, y = _SEMVER.fullmatch(a), _SEMVER.fullmatch(b)
    assert x is not None and y is not None
    for i in (1, 2, 3):
        if int(x[i]) != int(y[i]):
            return -1 if int(x[i]) < int(y[i]) else 1
    if x[4] is None or y[4] is None:
        return 0 if x[4] == y[4] else (1 if x[4] is None else -1)
    p, q = x[4].split("."), y[4].split(".")
    for m, n in zip(p, q):
        if m.isdigit() and n.isdigit():
            if int(m) != int(n):
                return -1 if int(m) < int(n) else 1
        elif m.isdigit() != n.isdigit():
            return -1 if m.isdigit() else 1
        elif m != n:
            return -1 if m < n else 1
    return (len(p) > len(q)) - (len(p) < len(q))


def update_query(current_version: object, platform: object, arch: object, channel: object) -> dict[str, str]:
    """The query of ``latest.json``, or INVALID_OPTIONS for what the service would answer 400."""
    if not is_version(current_version):
        raise LicensorError("INVALID_OPTIONS", 'current_version must be a SemVer version such as 1.2.3 (no "v", no build metadata)')
    platform = _OWN_PLATFORM.get(sys.platform) if platform is None else platform
    arch = _OWN_ARCH.get(_platform.machine().lower()) if arch is None else arch
    if platform not in PLATFORMS:
        raise LicensorError("INVALID_OPTIONS", f"platform must be one of {', '.join(PLATFORMS)} (this machine's is not known: give it)")
    if arch not in ARCHES:
        raise LicensorError("INVALID_OPTIONS", f"arch must be one of {', '.join(ARCHES)} (this machine's is not known: give it)")
    if channel is not None and channel not in CHANNELS:
        raise LicensorError("INVALID_OPTIONS", f"channel must be one of {', '.join(CHANNELS)}")
    query = {"platform": str(platform), "arch": str(arch), "version": str(current_version)}
    if channel is not None:
        query["channel"] = str(channel)
    return query


# --- the kept feed token: <root>/<org>/<prd>/<lid>.feed.json (docs/protocol.md section 8) -------

_URL_NAMES = ("electron", "tauri", "sparkle", "json")


def _urls(value: object) -> FeedUrls | None:
    if not isinstance(value, dict) or not all(isinstance(value.get(name), str) for name in _URL_NAMES):
        return None
    return FeedUrls(*(value[name] for name in _URL_NAMES))


@dataclass(frozen=True)
class KeptFeed:
    lid: str
    token: str
    urls: FeedUrls


def feed_of(lid: str, body: Mapping[str, Any]) -> KeptFeed:
    """A feed-token answer's ``{token, urls}``, or BAD_RESPONSE."""
    token, urls = body.get("token"), _urls(body.get("urls"))
    if not isinstance(token, str) or token == "" or urls is None:
        raise LicensorError("BAD_RESPONSE", "the feed-token answer lacks its token or URLs")
    return KeptFeed(lid, token, urls)


def read_feed(path: Path, lid: str) -> KeptFeed | None:
    """The kept feed of this licence, or None (none, unreadable, or another licence's)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != 1 or data.get("lid") != lid:
        return None
    token, urls = data.get("token"), _urls(data.get("urls"))
    return KeptFeed(lid, token, urls) if isinstance(token, str) and token != "" and urls is not None else None


def write_feed(path: Path, feed: KeptFeed) -> None:
    make_folders(path.parent)
    urls = {name: getattr(feed.urls, name) for name in _URL_NAMES}
    write_atomically(path, json.dumps({"format": 1, "lid": feed.lid, "token": feed.token, "urls": urls}, indent=2, ensure_ascii=False) + "\n")


# --- latest.json and its manifest ----------------------------------------------------------------


def key_fingerprint(key: PublicKey) -> str:
    """The SPKI SHA-256 (hex) of a key: how ``manifestSignatures`` name the key that signed."""
    return hashlib.sha256(key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo)).hexdigest()


@dataclass(frozen=True)
class _Manifest:
    org: str
    product_key: str
    version: str
    channel: str
    #: filename → (platform, arch, size, sha256)
    files: dict[str, tuple[str, str, int, str]]


def _parse_manifest(text: str) -> _Manifest | None:
    parts = text.split("\x1f")
    if len(parts) < 7 or parts[0] != "SVCM1" or not _DECIMAL.fullmatch(parts[5]) or not _DECIMAL.fullmatch(parts[6]):
        return None
    if len(parts) != 7 + 5 * int(parts[6]):
        return None
    files: dict[str, tuple[str, str, int, str]] = {}
    for i in range(7, len(parts), 5):
        filename, platform, arch, size, sha256 = parts[i : i + 5]
        if not _DECIMAL.fullmatch(size) or int(size) > 2**53 - 1 or not _SHA256.fullmatch(sha256) or filename in files:
            return None
        files[filename] = (platform, arch, int(size), sha256)
    return _Manifest(parts[1], parts[2], parts[3], parts[4], files)


def _strings(*values: object) -> bool:
    return all(isinstance(value, str) for value in values)


def _artifact(value: object) -> UpdateArtifact | None:
    if not isinstance(value, dict):
        return None
    fields = [value.get(name) for name in ("id", "filename", "platform", "arch", "size", "sha256", "sha512", "contentType", "url")]
    if not is_int(fields[0]) or not is_int(fields[4]) or not _strings(*fields[1:4], *fields[5:]):
        return None
    return UpdateArtifact(*fields)  # type: ignore[arg-type]


def _signature(value: object) -> ManifestSignature | None:
    if not isinstance(value, dict) or not _strings(value.get("keyFingerprint"), value.get("signature")):
        return None
    return ManifestSignature(value["keyFingerprint"], value["signature"])


_BAD = object()


def _update(value: object) -> Update | None | object:
    if value is None:
        return None
    if not isinstance(value, dict):
        return _BAD
    text = [value.get(name) for name in ("version", "channel", "publishedAt", "notes", "manifest")]
    signatures, artifacts = value.get("manifestSignatures"), value.get("artifacts")
    signature, fingerprint = value.get("manifestSignature"), value.get("manifestKeyFingerprint")
    if not _strings(*text) or not isinstance(signatures, list) or not isinstance(artifacts, list):
        return _BAD
    if not (signature is None or isinstance(signature, str)) or not (fingerprint is None or isinstance(fingerprint, str)):
        return _BAD
    read_signatures = [_signature(s) for s in signatures]
    files = [_artifact(a) for a in artifacts]
    kept_signatures = [s for s in read_signatures if s is not None]
    kept_files = [f for f in files if f is not None]
    if len(kept_signatures) != len(signatures) or len(kept_files) != len(artifacts):
        return _BAD
    version, channel, published_at, notes, manifest = (str(t) for t in text)
    return Update(version, channel, published_at, notes, manifest, kept_signatures, signature, fingerprint, kept_files)


def read_update_check(body: Mapping[str, Any]) -> UpdateCheck:
    """``latest.json``'s ``{update, blocked}`` as answered, or BAD_RESPONSE."""
    update = _update(body.get("update", _BAD))
    b = body.get("blocked", _BAD)
    blocked: BlockedUpdate | None | object = _BAD
    if b is None:
        blocked = None
    elif isinstance(b, dict) and _strings(b.get("version"), b.get("publishedAt")) and b.get("reason") in ("UPDATES_EXPIRED", "NOT_ENTITLED"):
        blocked = BlockedUpdate(b["version"], b["publishedAt"], b["reason"])
    if update is _BAD or blocked is _BAD:
        raise LicensorError("BAD_RESPONSE", "the feed answer is not {update, blocked}")
    return UpdateCheck(update, blocked)  # type: ignore[arg-type]


def _bad_manifest(why: str) -> LicensorError:
    return LicensorError("BAD_MANIFEST", f"the update's manifest {why}")


def signed_manifest(update: Update, keys: Sequence[PublicKey]) -> _Manifest:
    """The manifest's fields once one of its signatures verifies with a key the application ships, else BAD_MANIFEST."""
    known = {key_fingerprint(key): key for key in keys}
    data = update.manifest.encode("utf-8")

    def verifies(entry: ManifestSignature) -> bool:
        key = known.get(entry.key_fingerprint)
        if key is None:
            return False
        try:
            return verify_bytes(key, data, b64u_decode(entry.signature, "signature"))
        except MalformedError:
            return False

    if not any(verifies(entry) for entry in update.manifest_signatures):
        raise _bad_manifest("is not signed by a key this application knows")
    manifest = _parse_manifest(update.manifest)
    if manifest is None:
        raise _bad_manifest("is not SVCM1")
    return manifest


def verify_update(update: Update, keys: Sequence[PublicKey], org: str, product_key: str, current_version: str) -> Update:
    """Keeps an update only when its manifest is signed by a key the application ships, is this
    organisation's and product's, of the update's version and channel, above the running version,
    and lists each of the update's files with the same platform, arch, size and SHA-256: else
    BAD_MANIFEST. So nothing unsigned in the answer is taken on trust."""
    manifest = signed_manifest(update, keys)
    if manifest.org != org or manifest.product_key != product_key:
        raise _bad_manifest("is another organisation's or product's")
    if manifest.version != update.version or manifest.channel != update.channel:
        raise _bad_manifest("is for another version or channel")
    if not is_version(manifest.version) or compare_versions(manifest.version, current_version) <= 0:
        raise _bad_manifest("is not above the running version")
    for file in update.artifacts:
        if manifest.files.get(file.filename) != (file.platform, file.arch, file.size, file.sha256):
            raise _bad_manifest(f"does not list {file.filename} as the update does")
    return update


# --- download -------------------------------------------------------------------------------------


def update_file(update: Update, filename: object, keys: Sequence[PublicKey]) -> UpdateArtifact:
    """The update's file of this name (INVALID_OPTIONS when it lists none) with the size and
    SHA-256 its signed manifest gives (BAD_MANIFEST when the manifest does not verify or lacks it)."""
    artifacts = update.artifacts if isinstance(update, Update) else []
    file = next((a for a in artifacts if a.filename == filename), None)
    if file is None or not isinstance(filename, str) or not _FILENAME.fullmatch(filename) or ".." in filename:
        raise LicensorError("INVALID_OPTIONS", f"the update lists no file {json.dumps(filename)}")
    signed = signed_manifest(update, keys).files.get(filename)
    if signed is None:
        raise _bad_manifest(f"does not list {filename}")
    return UpdateArtifact(file.id, file.filename, file.platform, file.arch, signed[2], signed[3], file.sha512, file.content_type, file.url)


def keep_file(chunks: Iterator[bytes], folder: str | os.PathLike[str], file: UpdateArtifact) -> Download:
    """Writes ``chunks`` to a temporary file in ``folder`` (made if missing) while hashing them,
    and renames it to ``folder/filename`` only when its size and SHA-256 are the manifest's; else
    removes it and raises DIGEST_MISMATCH. Reading stops once the size is passed."""
    directory = Path(folder)
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / file.filename
    # In the same folder, so the rename is atomic; a leading dot keeps it out of ordinary listings.
    temporary = directory / f".{file.filename}.{secrets.token_hex(6)}.part"
    digest = hashlib.sha256()
    size = 0
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(descriptor, "wb") as out:
            try:
                for chunk in chunks:
                    size += len(chunk)
                    if size > file.size:
                        break
                    digest.update(chunk)
                    out.write(chunk)
            finally:
                close = getattr(chunks, "close", None)
                if close is not None:
                    close()
            out.flush()
            os.fsync(out.fileno())
        sha256 = digest.hexdigest()
        if size != file.size or sha256 != file.sha256:
            raise LicensorError("DIGEST_MISMATCH", f"{file.filename} is not the file the manifest signed (size or SHA-256 differ): it was deleted")
        os.replace(temporary, target)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    return Download(str(target), size, sha256)
