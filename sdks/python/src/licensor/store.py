"""What the client keeps per licence between runs (docs/protocol.md section 8, identical in every SDK):
the newest term seen, the remembered clock offset and the last verified answer.

On disk: ``<root>/<slug>/<productKey>/<lid>.json``, written to a temporary file and renamed over
while holding ``<lid>.lock``, so two processes never lose each other's fields."""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Protocol

from ._wire import is_int

#: The answer's fields as stored: the exact signed strings, the tag and the unsigned ``renewed``.
ANSWER_TEXT_FIELDS = ("tag", "lid", "status", "nonce", "checkedAt", "boundAt", "fpDigest", "leaseEndsAt", "receipt")


@dataclass(frozen=True)
class StateKey:
    slug: str
    product_key: str
    lid: str


@dataclass(frozen=True)
class Record:
    """One licence's state. ``newest_iat`` and ``offset_ms`` are never cleared with the answer."""

    #: The newest term (``iat``, seconds) of this licence seen on this machine.
    newest_iat: int | None = None
    #: The service's clock minus this machine's when the latest verified answer arrived (ms).
    offset_ms: int | None = None
    #: The last verified answer as stored (camelCase keys, see ANSWER_TEXT_FIELDS), not yet re-verified.
    answer: dict[str, Any] | None = None


EMPTY = Record()


class StateStore(Protocol):
    """Where a client keeps its Records: ``file_store()`` (default) or ``memory_store()``."""

    def load(self, key: StateKey) -> Record: ...

    def update(self, key: StateKey, change: Callable[[Record], Record]) -> None:
        """Loads, changes and saves as one step that no other writer interleaves with."""
        ...


class MemoryStore:
    """Keeps state for the life of the process only."""

    def __init__(self) -> None:
        self._records: dict[StateKey, Record] = {}
        self._lock = threading.Lock()

    def load(self, key: StateKey) -> Record:
        with self._lock:
            return self._records.get(key, EMPTY)

    def update(self, key: StateKey, change: Callable[[Record], Record]) -> None:
        with self._lock:
            self._records[key] = change(self._records.get(key, EMPTY))


def default_store_dir(platform: str = sys.platform, env: dict[str, str] | None = None, home: str | None = None) -> str:
    """``$XDG_CONFIG_HOME/licensor`` or ``~/.config/licensor`` (Linux and others),
    ``~/Library/Application Support/licensor`` (macOS), ``%APPDATA%\\licensor`` (Windows)."""
    env = dict(os.environ) if env is None else env
    home = os.path.expanduser("~") if home is None else home
    if platform == "win32":
        return (env.get("APPDATA") or f"{home}\\AppData\\Roaming") + "\\licensor"
    if platform == "darwin":
        return f"{home}/Library/Application Support/licensor"
    return (env.get("XDG_CONFIG_HOME") or f"{home}/.config") + "/licensor"


# Slugs, product keys and lids are this alphabet on the service; anything else never becomes a path.
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]{1,128}")
LOCK_STALE_SECONDS = 10.0
LOCK_WAIT_SECONDS = 5.0


class FileStore:
    """The shared on-disk format. An unreadable or malformed file counts as empty, keeping the
    ``newestIat`` and ``offsetMs`` of a readable one."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.root = Path(root if root is not None else default_store_dir())

    def folder(self, key: StateKey) -> Path:
        for name in (key.slug, key.product_key, key.lid):
            if not _SAFE_NAME.fullmatch(name) or name.strip(".") == "":
                raise ValueError(f"{name!r} cannot name a state file")
        return self.root / key.slug / key.product_key

    def load(self, key: StateKey) -> Record:
        try:
            text = (self.folder(key) / f"{key.lid}.json").read_text(encoding="utf-8")
        except (OSError, ValueError):
            return EMPTY
        return _record_from_text(text)

    def update(self, key: StateKey, change: Callable[[Record], Record]) -> None:
        folder = self.folder(key)
        make_folders(folder)
        with FileLock(folder / f"{key.lid}.lock"):
            record = change(self.load(key))
            document = {
                "format": 1,
                "lid": key.lid,
                "newestIat": record.newest_iat,
                "offsetMs": record.offset_ms,
                "answer": record.answer,
            }
            write_atomically(folder / f"{key.lid}.json", json.dumps(document, indent=2, ensure_ascii=False) + "\n")


def write_atomically(path: Path, text: str) -> None:
    """Writes a temporary file (mode 0600) beside ``path`` and renames it over, so a reader never
    sees half a file. The caller holds the file's lock."""
    temporary = path.with_name(f"{path.stem}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())  # on disk before it replaces the old file
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def make_folders(folder: Path) -> None:
    """Creates the folder and every missing parent with mode 0700 (``mkdir(parents=True)`` would
    give the parents the default mode)."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        path.mkdir(mode=0o700, exist_ok=True)


def _record_from_text(text: str) -> Record:
    """Reads each field alone: a field of the wrong type is None, and an answer missing a field or
    holding one of the wrong type is no answer, so a damaged answer never costs the newest term."""
    try:
        data = json.loads(text)
    except ValueError:
        return EMPTY
    if not isinstance(data, dict) or data.get("format") != 1:
        return EMPTY
    newest = data.get("newestIat")
    offset = data.get("offsetMs")
    record = Record(newest_iat=newest if is_int(newest) and newest >= 0 else None, offset_ms=offset if is_int(offset) else None)
    answer = data.get("answer")
    if not isinstance(answer, dict) or answer.get("tag") not in ("SVCR1", "SVCR2"):
        return record
    if not all(isinstance(answer.get(name), str) for name in ANSWER_TEXT_FIELDS) or not isinstance(answer.get("renewed"), bool):
        return record
    # ``converted`` is optional: files written before trials (DESIGN 18) have none.
    kept = {name: answer[name] for name in (*ANSWER_TEXT_FIELDS, "renewed")}
    return replace(record, answer={**kept, "converted": answer.get("converted") is True})


class FileLock:
    """A lock file (``<lid>.lock``, ``air-gap.lock``) made with O_CREAT|O_EXCL; one older than 10 s was left by a crash and is taken over."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __enter__(self) -> None:
        deadline = time.monotonic() + LOCK_WAIT_SECONDS
        while True:
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                return
            except FileExistsError:
                try:
                    if time.time() - self.path.stat().st_mtime > LOCK_STALE_SECONDS:
                        self.path.unlink(missing_ok=True)
                        continue
                except FileNotFoundError:
                    continue
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{self.path} is held by another process") from None
                time.sleep(0.02)

    def __exit__(self, *_: object) -> None:
        self.path.unlink(missing_ok=True)


def file_store(root: str | os.PathLike[str] | None = None) -> FileStore:
    """The state files under ``root`` (default: default_store_dir())."""
    return FileStore(root)


def memory_store() -> MemoryStore:
    return MemoryStore()
