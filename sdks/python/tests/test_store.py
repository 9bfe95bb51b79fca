"""The shared state files (docs/protocol.md section 8): format, atomic writes under a lock, defaults."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from licensor import FileStore, Record, StateKey, default_store_dir, memory_store
from licensor import store as store_module

KEY = StateKey("acme", "cad", "0b8f6a52-3f0e-4c59-9a55-6a1d2f6f7c01")
ANSWER = {
    "tag": "SVCR1", "lid": KEY.lid, "status": "ACTIVE", "nonce": "n", "checkedAt": "2026-11-22T07:00:00.000Z",
    "boundAt": "2026-01-05T09:30:12.345Z", "fpDigest": "f", "leaseEndsAt": "", "receipt": "r", "renewed": False,
    "converted": False,
}


def test_round_trips_a_record_in_the_product_folder(tmp_path: Path) -> None:
    store = FileStore(tmp_path / "config" / "licensor")
    assert store.load(KEY) == Record()
    store.update(KEY, lambda old: Record(1764000000, -1234, dict(ANSWER)))
    assert store.load(KEY) == Record(1764000000, -1234, ANSWER)
    path = tmp_path / "config" / "licensor" / "acme" / "cad" / f"{KEY.lid}.json"
    assert list(json.loads(path.read_text())) == ["format", "lid", "newestIat", "offsetMs", "answer"]
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]
    assert path.stat().st_mode & 0o777 == 0o600
    for folder in (path.parent, path.parent.parent, path.parents[2], path.parents[3]):
        assert folder.stat().st_mode & 0o777 == 0o700, folder


@pytest.mark.parametrize(
    "content",
    ["not json", "[]", '{"format":2,"newestIat":5,"offsetMs":7}', '{"newestIat":5,"offsetMs":7}'],
)
def test_a_file_not_of_the_shape_is_empty(tmp_path: Path, content: str) -> None:
    store = FileStore(tmp_path)
    store.update(KEY, lambda old: Record(5, 7, dict(ANSWER)))
    (tmp_path / "acme" / "cad" / f"{KEY.lid}.json").write_text(content)
    assert store.load(KEY) == Record()


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"answer": {**ANSWER, "tag": "SVCR9"}}, Record(5, 7, None)),
        ({"answer": {**ANSWER, "renewed": "no"}}, Record(5, 7, None)),
        ({"answer": {k: v for k, v in ANSWER.items() if k != "leaseEndsAt"}}, Record(5, 7, None)),
        ({"newestIat": -1, "offsetMs": 1.5}, Record(None, None, ANSWER)),
        ({"newestIat": "5", "offsetMs": None}, Record(None, None, ANSWER)),
        # ``converted`` (DESIGN 18) is optional: a file written before trials reads as not converted.
        ({"answer": {k: v for k, v in ANSWER.items() if k != "converted"}}, Record(5, 7, ANSWER)),
        ({"answer": {**ANSWER, "converted": "yes"}}, Record(5, 7, ANSWER)),
    ],
)
def test_a_damaged_field_is_none_alone(tmp_path: Path, change: dict, expected: Record) -> None:
    store = FileStore(tmp_path)
    store.update(KEY, lambda old: Record(5, 7, dict(ANSWER)))
    path = tmp_path / "acme" / "cad" / f"{KEY.lid}.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    assert store.load(KEY) == expected


def test_a_lid_that_could_leave_its_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        FileStore(tmp_path).update(replace(KEY, lid="../escape"), lambda old: old)
    assert FileStore(tmp_path).load(replace(KEY, lid="../escape")) == Record()


def test_a_stale_lock_is_taken_over_and_a_live_one_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = FileStore(tmp_path)
    folder = tmp_path / "acme" / "cad"
    folder.mkdir(parents=True)
    lock = folder / f"{KEY.lid}.lock"
    lock.write_text("")
    old = time.time() - 11
    os.utime(lock, (old, old))
    store.update(KEY, lambda record: replace(record, newest_iat=1))
    assert store.load(KEY).newest_iat == 1 and not lock.exists()
    lock.write_text("")
    monkeypatch.setattr(store_module, "LOCK_WAIT_SECONDS", 0.2)
    with pytest.raises(TimeoutError):
        store.update(KEY, lambda record: replace(record, newest_iat=2))
    assert store.load(KEY).newest_iat == 1


def test_writers_in_several_processes_never_lose_each_others_fields(tmp_path: Path) -> None:
    script = (
        "import sys; from dataclasses import replace; from licensor import FileStore, StateKey\n"
        f"key = StateKey('acme', 'cad', {KEY.lid!r}); store = FileStore(sys.argv[1]); field = sys.argv[2]\n"
        "for i in range(1, 41):\n"
        "    store.update(key, lambda old: replace(old, **{field: max(getattr(old, field) or 0, i)}))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    workers = [subprocess.Popen([sys.executable, "-c", script, str(tmp_path), field], env=env) for field in ("newest_iat", "offset_ms")]
    assert [worker.wait(timeout=60) for worker in workers] == [0, 0]
    record = FileStore(tmp_path).load(KEY)
    assert (record.newest_iat, record.offset_ms) == (40, 40)


def test_memory_state_keeps_records_apart_by_key() -> None:
    store = memory_store()
    store.update(KEY, lambda old: Record(1, None, None))
    assert store.load(KEY).newest_iat == 1
    assert store.load(replace(KEY, product_key="other")) == Record()


def test_the_default_root_follows_each_platforms_configuration_folder() -> None:
    assert default_store_dir("linux", {"XDG_CONFIG_HOME": "/x"}, "/home/a") == "/x/licensor"
    assert default_store_dir("linux", {}, "/home/a") == "/home/a/.config/licensor"
    assert default_store_dir("darwin", {}, "/Users/a") == "/Users/a/Library/Application Support/licensor"
    assert default_store_dir("win32", {"APPDATA": r"C:\Users\a\AppData\Roaming"}, r"C:\Users\a") == r"C:\Users\a\AppData\Roaming\licensor"
    assert default_store_dir("win32", {}, r"C:\Users\a") == r"C:\Users\a\AppData\Roaming\licensor"
