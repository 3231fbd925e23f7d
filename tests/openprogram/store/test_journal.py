"""The journal beside a SQLite store: what waits for its batch's commit outlives a kill.

Writers that die are real processes ended with os._exit (SIGKILL is in
test_processes.py); their journals are folded in by whoever opens the store next.
"""

from __future__ import annotations

import errno
import json
import logging
import math
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import closing, suppress
from pathlib import Path
from typing import Any

import pytest

from openprogram import Session, agentic_function
from openprogram.store import journal as journal_module
from openprogram.store import open_store
from openprogram.store import recorder as recorder_module
from openprogram.store.check import check_store
from openprogram.store.format import NodeRow
from openprogram.store.journal import Journal, pending, pending_dir

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses flock")


@agentic_function
def echo(text: str) -> str:
    return text


@pytest.fixture
def no_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing commits by time or slowness: records wait in the batch (and journal)."""
    monkeypatch.setattr(recorder_module, "BATCH_AGE_S", 3600.0)
    monkeypatch.setattr(recorder_module, "SLOW_CALL_S", 3600.0)


def die_recording(store: Path, session: str, calls: int, *, nested: bool = False) -> None:
    """A child process records `calls` fast calls (inside a running parent call when
    `nested`) and dies at once, before any commit: os._exit skips every flush."""
    program = f"""
        import os
        from openprogram import Session, agentic_function
        from openprogram.store import recorder
        recorder.BATCH_AGE_S = recorder.SLOW_CALL_S = 3600.0

        @agentic_function
        def count(i: int) -> int:
            return i

        @agentic_function
        def outer(n: int) -> None:
            for i in range(n):
                count(i)
            os._exit(0)

        with Session({str(store)!r}, id={session!r}):
            if {nested!r}:
                outer({calls})
            for i in range({calls}):
                count(i)
            os._exit(0)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[3],
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_calls_a_dead_writer_never_committed_are_folded_in_by_the_next_opener(tmp_path: Path):
    store = tmp_path / "runs.db"
    die_recording(store, "dead", 5)
    with closing(sqlite3.connect(store)) as raw:  # nothing reached the file itself
        assert raw.execute("SELECT count(*) FROM openprogram_nodes").fetchone() == (0,)

    session = Session.open(str(store), "dead")
    assert [(n.input, n.status, n.output) for n in session.dag.nodes] == [
        ({"i": i}, "completed", i) for i in range(5)
    ]
    assert not pending_dir(store).exists()
    session.close()


@pytest.mark.slow
def test_a_running_parent_is_stored_running_with_the_children_that_returned(tmp_path: Path):
    store = tmp_path / "runs.db"
    die_recording(store, "nested", 3, nested=True)

    session = Session.open(str(store), "nested")
    outer, *children = session.dag.nodes
    assert (outer.name, outer.status, outer.input) == ("outer", "running", {"n": 3})
    assert [(c.parent, c.status, c.output) for c in children] == [
        (outer.id, "completed", i) for i in range(3)
    ]
    session.close()


def records_end(data: bytes) -> tuple[int, int]:
    """Where the last whole record of a journal (format 2) starts, and where the records
    end: after the header line and the generation, each record is its length, its CRC-32
    and the generation (16 bytes), then its data."""
    at = data.index(b"\n") + 1
    (generation,) = struct.unpack_from("<Q", data, at)
    at, last = at + 8, -1
    while at + 16 <= len(data) and struct.unpack_from("<IIQ", data, at)[2] == generation:
        last, at = at, at + 16 + struct.unpack_from("<I", data, at)[0]
    return last, at


@pytest.mark.slow
def test_a_torn_last_record_is_left_out_and_the_whole_ones_are_kept(tmp_path: Path):
    store = tmp_path / "runs.db"
    die_recording(store, "torn", 4)
    (journal,) = pending_dir(store).iterdir()
    whole = journal.read_bytes()
    last, end = records_end(whole)
    with journal.open("r+b") as file:  # a fifth record, its last bytes never written
        file.seek(end)
        file.write(whole[last:end][:-3])
    (found,) = pending(pending_dir(store))
    assert found.torn and len(found.rows) == 4
    found.skip()

    session = Session.open(str(store), "torn")
    assert [n.output for n in session.dag.nodes] == [0, 1, 2, 3]
    session.close()


@pytest.mark.slow
def test_records_of_a_committed_batch_left_in_the_file_are_never_read_again(tmp_path: Path):
    """A journal is emptied after its batch's commit by advancing its generation, not
    by cutting the file: the earlier batch's records stay in it, of another generation.
    A writer's two journals take turns, so the third batch goes where the first was."""
    store = tmp_path / "runs.db"
    program = f"""
        import os
        from openprogram import Session, agentic_function
        from openprogram.store import recorder
        recorder.BATCH_AGE_S = recorder.SLOW_CALL_S = 3600.0

        @agentic_function
        def count(i: int) -> int:
            return i

        with Session({str(store)!r}, id="turns") as session:
            for i in range(10):
                count(i)
            session.flush()
            count(10)
            session.flush()
            count(11)
            count(12)
            os._exit(0)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[3],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    journals = sorted(pending(pending_dir(store)), key=lambda found: len(found.rows))
    assert [[row.output for row in found.rows] for found in journals] == [[], ["11", "12"]]
    first = journals[1].path.read_bytes()
    assert records_end(first)[1] < len(first.rstrip(b"\0"))  # the first batch: still there
    for found in journals:
        found.skip()

    session = Session.open(str(store), "turns")
    assert [n.output for n in session.dag.nodes] == list(range(13))
    session.close()


def test_a_live_writers_journal_is_left_to_it(tmp_path: Path, no_timer: None):
    store = tmp_path / "runs.db"
    with Session(str(store), id="live"):
        echo("waiting")
        assert list(pending(pending_dir(store))) == []  # locked by its writer
        reader = Session.open(str(store), "live")  # another opener folds nothing in
        assert reader.dag.nodes == []
        reader.close()
    assert [n.output for n in Session.open(str(store), "live").dag.nodes] == ["waiting"]
    assert not pending_dir(store).exists()  # closing the session removed it


def test_a_journal_holds_no_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_timer: None):
    key = "sk-journal-test-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    store = tmp_path / "runs.db"
    with Session(str(store), id="secret"):
        echo(f"the key is {key}")
        (journal,) = pending_dir(store).iterdir()
        written = journal.read_bytes()
        assert b"the key is ***" in written
        assert key.encode() not in written


@pytest.mark.slow
def test_records_of_a_session_taken_over_since_are_dropped_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    store = tmp_path / "runs.db"
    die_recording(store, "taken", 2)
    with closing(sqlite3.connect(store)) as raw, raw:  # another machine's writer took over
        raw.execute("UPDATE openprogram_leases SET owner = 'elsewhere:1:abcd', host = 'elsewhere'")

    with caplog.at_level(logging.WARNING, logger="openprogram.store"):
        open_store(str(store))[0].close()
    assert "dropped 2 records of session 'taken'" in caplog.text
    assert not pending_dir(store).exists()
    session = Session.open(str(store), "taken")
    assert session.dag.nodes == []
    session.close()


def test_a_file_that_is_not_a_journal_is_left_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
):
    store = tmp_path / "runs.db"
    Session(str(store), id="any").close()
    folder = pending_dir(store)
    folder.mkdir()
    (folder / "notes.log").write_text("not a journal\n")

    with caplog.at_level(logging.WARNING, logger="openprogram.store"):
        Session.open(str(store), "any").close()
    assert "is not a journal this version reads" in caplog.text
    assert (folder / "notes.log").read_text() == "not a journal\n"


@pytest.mark.slow
def test_sessions_check_reports_a_dead_writers_journal_and_leaves_it(tmp_path: Path):
    store = tmp_path / "runs.db"
    die_recording(store, "checked", 3)

    report = check_store(str(store))
    assert report.ok
    (line,) = report.pending
    assert line.startswith("3 records of session 'checked' in ")
    assert any("journal(s) of writers that died" in text for text in report.lines())
    assert len(list(pending_dir(store).iterdir())) == 1  # only read: still there
    assert [n.output for n in Session.open(str(store), "checked").dag.nodes] == [0, 1, 2]


def test_without_flock_every_record_is_committed_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_timer: None
):
    """Where journals cannot be kept (Windows), nothing waits in memory either."""
    monkeypatch.setattr(journal_module, "fcntl", None)
    store = tmp_path / "runs.db"
    with Session(str(store), id="plain"):
        echo("at once")
        with closing(sqlite3.connect(store)) as raw:
            assert raw.execute("SELECT status FROM openprogram_nodes").fetchall() == [
                ("completed",)
            ]
    assert not pending_dir(store).exists()


@pytest.fixture
def full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[], None]]:
    """A folder for the store, and a function that fills its disk: a real 512 KiB tmpfs
    when this process may mount one (root in CI), else journal appends failing with
    ENOSPC (the one OS failure this fakes)."""
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = (
        shutil.which("mount") is not None
        and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(folder)],
            capture_output=True,
        ).returncode
        == 0
    )

    def fill() -> None:
        if not mounted:

            def no_space(*args: Any, **kwargs: Any) -> bool:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

            monkeypatch.setattr(journal_module.Journal, "append", no_space)
            return
        fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            for size in (65536, 4096, 1):
                with suppress(OSError):
                    while True:
                        os.write(fd, b"\0" * size)
        finally:
            os.close(fd)

    try:
        yield fill
    finally:
        if mounted:
            subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.slow
def test_a_full_disk_is_logged_on_the_1st_2nd_4th_8th_failure(
    tmp_path: Path, full_disk: Callable[[], None], caplog: pytest.LogCaptureFixture
):
    """docs/sessions.md#durability: a dead store does not flood the log."""
    calls = 1000
    with (
        caplog.at_level(logging.WARNING, logger="openprogram.store"),
        Session(str(tmp_path / "small" / "runs.db"), id="full") as session,
    ):
        echo("before")
        session.flush()
        full_disk()
        for i in range(calls):
            echo(str(i))
    lines = Counter(record.msg for record in caplog.records)
    assert lines, "a full disk must be logged"
    most = math.floor(math.log2(2 * calls + 2)) + 1  # each failure kind: 1st, 2nd, 4th...
    assert max(lines.values()) <= most, lines.most_common(2)
    assert len(caplog.records) <= 3 * most


@pytest.mark.slow
def test_a_record_over_the_journals_limit_is_committed_at_once(tmp_path: Path, no_timer: None):
    """A reader refuses records over FRAME_LIMIT, so a writer never journals one."""
    store = tmp_path / "runs.db"
    with Session(str(store), id="big"):
        echo("small")  # waits in the journal
        echo("x" * (journal_module.FRAME_LIMIT + 1))  # too big to journal: committed
        with closing(sqlite3.connect(store)) as raw:
            assert raw.execute("SELECT count(*) FROM openprogram_nodes").fetchone() == (2,)
        journals = list(pending_dir(store).iterdir())  # the writer's one or two
        assert 1 <= len(journals) <= 2
        assert all(b"x" * 4096 not in j.read_bytes() for j in journals)  # nothing big in it
    assert [len(n.output) for n in Session.open(str(store), "big").dag.nodes] == [
        5,
        journal_module.FRAME_LIMIT + 1,
    ]


@pytest.mark.slow
def test_a_writer_dying_during_a_commit_leaves_two_journals_folded_in_as_one(tmp_path: Path):
    """A commit runs outside the Recorder's lock: records made meanwhile go to the
    writer's second journal. A call started before the commit (its start in the first
    journal) and completed during it (its end, without its input, in the second) is
    folded in completed, with its input, whichever journal is read first."""
    store = tmp_path / "runs.db"
    program = f"""
        import os, threading
        from openprogram import Session, agentic_function
        from openprogram.store import recorder
        from openprogram.store.sqlite import SQLiteStore
        from openprogram.agentic.threads import start_thread
        recorder.BATCH_AGE_S = recorder.SLOW_CALL_S = 3600.0
        started, going = threading.Event(), threading.Event()

        @agentic_function
        def count(i: int) -> int:
            return i

        @agentic_function
        def across(name: str) -> str:
            started.set()
            going.wait()
            count(1)
            return "done"

        def dying(self, *args):  # the first commit: the other thread records, then death
            going.set()
            other.join()
            os._exit(0)

        with Session({str(store)!r}, id="across") as session:
            other = start_thread(across, "x")
            started.wait()
            count(0)
            SQLiteStore._record = dying
            session.flush()
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[3],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first, second = sorted(pending_dir(store).iterdir(), key=lambda p: b"done" in p.read_bytes())
    first.rename(first.with_name("1.log"))  # the second journal is read first
    second.rename(second.with_name("0.log"))
    session = Session.open(str(store), "across")
    found = [(n.name, n.status, n.input, n.output) for n in session.dag.nodes]
    assert sorted(found, key=str) == [
        ("across", "completed", {"name": "x"}, "done"),
        ("count", "completed", {"i": 0}, 0),
        ("count", "completed", {"i": 1}, 1),
    ]
    assert not pending_dir(store).exists()
    session.close()


def row(seq: int, output: str = "x") -> NodeRow:
    return NodeRow(seq, f"n{seq}", "code", "echo", None, "completed", 1.0, 2.0, seq,
                   '{"text": "x"}', json.dumps(output), None)  # fmt: skip


def dead(journal: Journal) -> list[list[NodeRow]]:
    """Let `journal` go as a killed writer would (its lock, not its file), and read
    back what an opener would fold in of its folder."""
    os.close(journal._fd)
    os.close(journal._folder)
    found = list(pending(journal.path.parent))
    for each in found:
        each.skip()
    return [each.rows for each in found]


@pytest.fixture(params=["allocated", "extended"])
def allocated(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """A journal's space reserved on disk with fallocate (Linux, the BSDs), or the file
    only extended (macOS)."""
    monkeypatch.setattr(journal_module, "_ALLOCATE", request.param == "allocated")
    return request.param == "allocated"


def test_only_the_records_since_the_last_clear_are_read_back(tmp_path: Path, allocated: bool):
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    for seq in range(1, 6):
        assert journal.append(row(seq))
    journal.clear()
    assert journal.append(row(6, "started"))
    assert journal.append(row(6, "ended"), with_input=False)
    assert dead(journal) == [[row(6, "ended")]]  # the input comes back from its start


def test_a_burst_grows_the_journal_and_its_commit_gives_the_space_back(
    tmp_path: Path, allocated: bool, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(journal_module, "_KEEP", 256 << 10)
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    reserved = journal.path.stat().st_size
    burst = [row(seq, "y" * 10_000) for seq in range(1, 41)]  # 400 KB: past the reserve
    assert all(journal.append(each) for each in burst)
    assert journal.path.stat().st_size >= 400_000 > reserved
    journal.clear()
    assert journal.path.stat().st_size == reserved
    assert journal.append(row(41))
    assert dead(journal) == [[row(41)]]


def test_a_full_reservation_loses_no_written_record(
    tmp_path: Path, allocated: bool, monkeypatch: pytest.MonkeyPatch
):
    """No room to grow: append raises, and what it wrote before is still read back."""
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    assert journal.append(row(1))

    def no_room(*args: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_module.os, "posix_fallocate", no_room, raising=False)
    monkeypatch.setattr(journal_module.os, "ftruncate", no_room)
    with pytest.raises(OSError, match="No space"):
        journal.append(row(2, "z" * 100_000))
    assert journal.append(row(3))  # within the reserve: it still goes in
    assert dead(journal) == [[row(1), row(3)]]


def test_the_newer_batchs_journal_wins_whichever_is_read_first(tmp_path: Path):
    """A call completed in one batch and reopened (resumed: running again) in the next:
    the newer file, by its generation, says how it stands."""
    folder = tmp_path / "runs.db-pending"
    older = Journal.open(folder, "s", "me:1:x")
    newer = Journal.open(folder, "s", "me:1:x")
    assert older.append(row(1, "done"))
    reopened = row(1)._replace(status="running", ended_at=None, end_seq=None, output=None)
    assert newer.append(reopened, with_input=False)
    for journal in (older, newer):
        os.close(journal._fd)
        os.close(journal._folder)
    for turn, first in enumerate((older, newer)):  # either file read first (by name)
        for rank, journal in enumerate((first, newer if first is older else older)):
            journal.path = journal.path.rename(folder / f"{turn}{rank}.log")
        found = list(pending(folder))
        assert [f.path for f in found] == [first.path, (newer if first is older else older).path]
        assert journal_module._merged_files(found) == [reopened._replace(input=row(1).input)]
        for each in found:
            each.skip()


@pytest.mark.slow
def test_a_journal_an_opener_removed_before_its_writer_locked_it_is_not_written(tmp_path: Path):
    """The open/fold race (issue 40, item 9), made to happen every time: a writer
    process has created its journal file and not yet locked it when another process
    opens the store and folds the unlocked, headerless file in (removing it). The
    writer then records 5 calls and dies. Before, it locked and wrote the removed file:
    nothing folded them in, the 5 calls were lost. Now it sees the file gone after its
    flock and starts a new one, which the next opener folds in."""
    store = tmp_path / "runs.db"
    opener = (
        f"from openprogram.store import open_store; open_store({str(store)!r})[0].list_sessions()"
    )
    program = f"""
        import fcntl, os, subprocess, sys
        from openprogram import Session, agentic_function
        from openprogram.store import journal, recorder
        recorder.BATCH_AGE_S = recorder.SLOW_CALL_S = 3600.0

        class Interleaved:  # the first flock of a journal waits for another opener
            LOCK_EX, LOCK_NB, LOCK_SH, LOCK_UN = (
                fcntl.LOCK_EX, fcntl.LOCK_NB, fcntl.LOCK_SH, fcntl.LOCK_UN
            )
            folded = False

            @staticmethod
            def flock(fd, operation):
                if not Interleaved.folded:
                    Interleaved.folded = True
                    subprocess.run([sys.executable, "-c", {opener!r}], check=True)
                return fcntl.flock(fd, operation)

        journal.fcntl = Interleaved

        @agentic_function
        def count(i: int) -> int:
            return i

        with Session({str(store)!r}, id="raced"):
            for i in range(5):
                count(i)
            assert Interleaved.folded
            os._exit(0)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(program)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).parents[3],
    )
    assert done.returncode == 0, done.stderr
    with Session.open(store, "raced") as session:
        assert [n.output for n in session.dag.nodes if n.name == "count"] == [0, 1, 2, 3, 4]


def test_a_journal_closed_by_two_threads_at_once_is_closed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """A task's session closing its journal while the exit handler closes it too (seen
    as "OSError: [Errno 9] Bad file descriptor" at the end of a test run): the second
    close ran while the first was between its check and its os.close, and closed the
    descriptors again (by then, maybe another file's). The interleaving is forced: the
    first close waits inside its unlink until the second has returned."""
    import threading

    journal = Journal.open(tmp_path / "runs.db-pending", "s", "owner")
    second_done, errors = threading.Event(), []
    unlink = os.unlink

    def slow_unlink(*args: Any, **kwargs: Any) -> None:
        if threading.current_thread().name == "first":
            second = threading.Thread(target=lambda: second_done.set() or journal.close())
            second.start()
            second.join(10)
        unlink(*args, **kwargs)

    def first() -> None:
        try:
            journal.close()
        except OSError as exc:
            errors.append(exc)

    monkeypatch.setattr(os, "unlink", slow_unlink)
    thread = threading.Thread(target=first, name="first")
    thread.start()
    thread.join(30)
    assert second_done.is_set() and errors == []
    assert not journal.path.exists()
