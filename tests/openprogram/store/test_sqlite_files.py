"""SQLite files that cannot be written, files written by many stores at once, and SQLite in
memory.

Read-only for real, also for root (which CI runs as, and which ignores permission bits):
a read-only bind mount in a private mount namespace (`unshare --mount`), and a file
made immutable with `chattr +i`. Each skips, saying why, where the system refuses it.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram import Session, StoreError
from openprogram.store import NodeRow, SQLiteStore
from tests.openprogram.store import programs

ROOT = Path(__file__).resolve().parents[3]
_READER = """
import json, sys
sys.path.insert(0, sys.argv[2])
from openprogram import Session, StoreError
result = {}
try:
    session = Session.open(sys.argv[1], "run")
    result.update(nodes=[n.output for n in session.dag.nodes], read_only=session.store.read_only)
    try:
        with session:
            pass
    except StoreError as exc:
        result["record"] = str(exc)
    session.close()
    try:
        Session(sys.argv[1])
    except StoreError as exc:
        result["create"] = str(exc)
except StoreError as exc:
    result["open"] = str(exc)
print(json.dumps(result))
"""


def _record(path: Path, calls: int = 3) -> None:
    with Session(path, id="run"):
        for i in range(calls):
            programs.count(i)


def _read_on_a_read_only_mount(folder: Path, path: Path) -> dict:
    """Run _READER on `path` with `folder` bind-mounted read-only, in a private mount
    namespace (nothing outside the child sees the mount)."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) to make a private read-only mount")
    script = 'mount --bind -o ro "$1" "$1" || exit 77; shift; exec "$@"'
    child = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sh", str(folder),
         sys.executable, "-c", _READER, str(path), str(ROOT)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    if child.returncode == 77 or "unshare failed" in child.stderr:
        pytest.skip(f"this system refuses a private read-only mount: {child.stderr.strip()}")
    assert child.returncode == 0, child.stderr
    return json.loads(child.stdout)


@pytest.mark.slow
def test_a_store_on_a_read_only_file_system_opens_for_reading(tmp_path: Path):
    folder = tmp_path / "mounted"
    folder.mkdir()
    _record(folder / "runs.db")
    result = _read_on_a_read_only_mount(folder, folder / "runs.db")
    assert result["nodes"] == [0, 1, 2] and result["read_only"] is True
    assert "is open read-only" in result["record"] and "copy the store" in result["record"]
    assert "cannot create session" in result["create"]
    assert sorted(p.name for p in folder.iterdir()) == ["runs.db"]


@pytest.mark.slow
def test_a_crashed_store_on_a_read_only_file_system_reads_its_write_ahead_log(tmp_path: Path):
    folder = tmp_path / "mounted"
    folder.mkdir()
    writer = subprocess.Popen(
        [sys.executable, str(Path(programs.__file__)), "loop", str(folder / "runs.db"), "run",
         "100000", "flush"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert writer.stdin is not None and writer.stdout is not None
    assert writer.stdout.readline().strip() == "ready"
    writer.stdin.write("go\n")
    writer.stdin.flush()
    for _ in range(20):
        writer.stdout.readline()
    os.kill(writer.pid, signal.SIGKILL)
    writer.wait(timeout=60)
    writer.stdin.close()
    writer.stdout.close()
    assert (folder / "runs.db-wal").stat().st_size > 0  # the records are in the log
    result = _read_on_a_read_only_mount(folder, folder / "runs.db")
    assert result["nodes"][:20] == list(range(20))

    os.remove(folder / "runs.db-shm")  # now SQLite could not read the log at all
    result = _read_on_a_read_only_mount(folder, folder / "runs.db")
    assert "write-ahead log" in result["open"] and "Copy the store together" in result["open"]


@pytest.fixture
def immutable(tmp_path: Path) -> Iterator[Path]:
    """A recorded store this process cannot write: `chattr +i` (also for root), or
    permission bits when not root."""
    path = tmp_path / "runs.db"
    _record(path)
    if os.geteuid() != 0:
        path.chmod(0o444)
        yield path
        path.chmod(0o644)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr(1): no way to make a file read-only")
    made = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"chattr +i is refused here: {made.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


def test_an_immutable_store_file_opens_for_reading_and_refuses_records_clearly(immutable: Path):
    before = immutable.read_bytes()
    session = Session.open(immutable, "run")
    assert [n.output for n in session.dag.nodes] == [0, 1, 2] and session.store.read_only
    with (
        pytest.raises(StoreError, match=r"cannot record into session 'run'.*open read-only"),
        session,
    ):
        programs.count(3)
    with pytest.raises(StoreError, match="cannot create session"):
        Session(immutable)
    assert immutable.read_bytes() == before


def test_sqlite_memory_urls_are_in_memory_not_a_file(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for spec in ("sqlite:///:memory:", ":memory:"):
        with Session(spec, id="ram") as session:
            programs.count(1)
            programs.count(2)
        assert isinstance(session.store, SQLiteStore) and session.store.memory
        assert session.failed_writes == 0
        assert [n.output for n in Session.open(session.store, "ram").dag.nodes] == [1, 2]
        assert session.store.url == "sqlite:///:memory:"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_stores_of_one_file_in_one_process_take_turns_without_sqlites_busy_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """Two stores of one file (two sessions on two threads): the second one's batch
    waits for the first one's transaction in this process, not in SQLite's busy
    handler (which sleeps between tries, and here, with timeout_s=0, fails at once)."""
    path = tmp_path / "shared.db"
    first, second = SQLiteStore(path, timeout_s=0), SQLiteStore(path, timeout_s=0)
    sessions = [Session(first, id="first"), Session(second, id="second")]
    first.acquire("first", "a")
    second.acquire("second", "b")
    inside, leave = threading.Event(), threading.Event()
    upsert_rows = SQLiteStore._upsert_rows

    def held(self: SQLiteStore, *args: Any) -> int:
        if self is first:  # inside the first store's write transaction
            inside.set()
            assert leave.wait(60)
        return upsert_rows(self, *args)

    monkeypatch.setattr(SQLiteStore, "_upsert_rows", held)
    errors: list[Exception] = []

    def write(store: SQLiteStore, session: str) -> None:
        try:
            store.write_batch(session, [_row(1), _row(2)], {})
        except Exception as exc:
            errors.append(exc)

    writing = threading.Thread(target=write, args=(first, "first"))
    writing.start()
    assert inside.wait(60)
    waiting = threading.Thread(target=write, args=(second, "second"))
    waiting.start()
    waiting.join(0.5)  # time enough to fail, were it to try SQLite's lock now
    leave.set()
    writing.join(60)
    waiting.join(60)
    assert errors == []
    assert [row.seq for row in SQLiteStore(path).rows("second")] == [1, 2]
    for session in sessions:
        session.close()
    first.close()
    second.close()


def _row(seq: int) -> NodeRow:
    return NodeRow(seq, f"node-{seq}", "code", "count", None, "completed", 1.0, 2.0, seq,
                   "{}", "1", None)  # fmt: skip
