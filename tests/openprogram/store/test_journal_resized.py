"""A live journal cut short or grown by another process of the same user (issue 32).

A real child records calls into a SQLite session while this process truncates or grows
its journal with os.truncate. The writer survives (a copy into a map of a cut file was
SIGBUS), commits at once what the cut took from the file, and starts the file afresh;
a journal grown past the old 64 MiB limit is read a record at a time, not refused.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from contextlib import suppress
from pathlib import Path

import pytest

from openprogram import Session
from openprogram.store import _records as records_module
from openprogram.store.journal import Journal, pending, pending_dir
from tests.openprogram.store.test_journal import dead, row
from tests.openprogram.store.test_journal_attacks import CLI, _limited

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses flock and SIGKILL")


def recording(store: Path, before: int, after: int, *, timed: bool) -> subprocess.Popen[str]:
    """A child that records `before` calls, says "ready" and waits for a line, records
    `after` more, says "recorded" and waits again (to be killed, or to close the session
    when its stdin ends). Without `timed`, nothing commits by time or slowness: every
    record waits in the journal."""
    program = f"""
        import sys
        from openprogram import Session, agentic_function
        from openprogram.store import recorder
        if not {timed!r}:
            recorder.BATCH_AGE_S = recorder.SLOW_CALL_S = 3600.0

        @agentic_function
        def count(i: int) -> int:
            return i

        with Session({str(store)!r}, id="cut"):
            for i in range({before}):
                count(i)
            print("ready", flush=True)
            sys.stdin.readline()
            for i in range({before}, {before + after}):
                count(i)
            print("recorded", flush=True)
            sys.stdin.readline()
    """
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(program)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[3],
    )


def said(child: subprocess.Popen[str], word: str) -> None:
    assert child.stdout is not None and child.stderr is not None
    line = child.stdout.readline()
    if line.strip() != word:
        child.kill()
        child.wait(timeout=60)
        pytest.fail(
            f"the child said {line!r}, not {word!r}, and ended with {child.returncode} "
            f"(-{signal.SIGBUS} is SIGBUS): {child.stderr.read()}"
        )


def tell(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()


def kill(child: subprocess.Popen[str]) -> None:
    child.kill()
    child.communicate(timeout=60)
    assert child.returncode == -signal.SIGKILL


def journals(store: Path) -> list[Path]:
    return sorted(pending_dir(store).glob("*.log"))


def stored_calls(store: Path) -> list[tuple[int, str, int | None]]:
    session = Session.open(str(store), "cut")
    try:
        return [(n.input["i"], n.status, n.output) for n in session.dag.nodes]
    finally:
        session.close()


@pytest.mark.slow
def test_a_writer_survives_its_journal_cut_again_and_again_and_loses_no_call(tmp_path: Path):
    """Another process truncates the writer's journals to nothing, over and over, while
    it records (batches committed as usual meanwhile): it records on, and every call is
    stored."""
    store = tmp_path / "runs.db"
    calls = 2000
    child = recording(store, 1, calls, timed=True)
    said(child, "ready")
    assert child.stdout is not None
    cuts = 0
    while True:  # cut while it records, until it says it is done (or dies)
        for path in journals(store):
            with suppress(FileNotFoundError):
                os.truncate(path, 0)
                cuts += 1
        if cuts == 1:
            tell(child)
        if child.poll() is not None or select.select([child.stdout], [], [], 0)[0]:
            break
    said(child, "recorded")
    child.communicate("\n", timeout=60)  # its stdin ends: it closes the session
    assert child.returncode == 0
    assert cuts > 1
    assert stored_calls(store) == [(i, "completed", i) for i in range(1 + calls)]


@pytest.mark.parametrize("cut_to", [0, 200])
@pytest.mark.slow
def test_a_cut_journal_is_noticed_and_what_it_lost_committed_before_a_kill(
    tmp_path: Path, cut_to: int
):
    """The records the cut took live only in the writer's batch: its next record
    notices the cut and commits them, and the calls after it are journaled afresh, so
    a kill right after loses none of them. `cut_to`: nothing left, or the header and
    part of the first records."""
    store = tmp_path / "runs.db"
    child = recording(store, 50, 50, timed=False)
    said(child, "ready")
    for path in journals(store):
        os.truncate(path, cut_to)
    tell(child)
    said(child, "recorded")
    kill(child)
    assert stored_calls(store) == [(i, "completed", i) for i in range(100)]


@pytest.mark.slow
def test_a_journal_grown_long_by_another_process_is_read_not_refused(tmp_path: Path):
    """Grown to 2 GiB of holes while its writer records: the writer records on into it,
    and a reader (with 2 GiB of address space, so it cannot hold the file) reads its
    records one at a time and folds them in."""
    store = tmp_path / "runs.db"
    child = recording(store, 5, 5, timed=False)
    said(child, "ready")
    (path,) = journals(store)
    os.truncate(path, 2 << 30)
    tell(child)
    said(child, "recorded")
    kill(child)
    cli = subprocess.run(
        [*CLI, "sessions", "check", "--store", str(store)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=_limited,
    )
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert f"10 records of session 'cut' in {path}" in cli.stdout
    assert stored_calls(store) == [(i, "completed", i) for i in range(10)]
    assert not pending_dir(store).exists()


def test_append_after_a_cut_says_commit_now_and_starts_the_file_afresh(tmp_path: Path):
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    assert journal.append(row(1))
    os.truncate(journal.path, 0)
    assert journal.append(row(2)) is False  # row 1 is gone from the file: commit both
    assert journal.append(row(3))
    assert dead(journal) == [[row(3)]]


def test_clear_after_a_cut_starts_the_file_afresh(tmp_path: Path):
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    assert journal.append(row(1))
    os.truncate(journal.path, 30)  # within the header line
    journal.clear()  # the batch is committed
    assert journal.append(row(2))
    assert dead(journal) == [[row(2)]]


def test_a_grown_journal_is_written_on_and_cut_back_after_its_commit(tmp_path: Path):
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    reserved = journal.path.stat().st_size
    assert journal.append(row(1))
    os.truncate(journal.path, 100 << 20)
    assert journal.append(row(2))
    journal.clear()
    assert journal.path.stat().st_size == reserved  # the space given back
    assert journal.append(row(3))
    assert dead(journal) == [[row(3)]]


def test_records_past_the_limit_are_refused_unread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A writer never writes records past RECORDS_LIMIT: a file holding more is not
    ours, and is refused without reading on."""
    journal = Journal.open(tmp_path / "runs.db-pending", "s", "me:1:x")
    for seq in range(1, 11):
        assert journal.append(row(seq))
    monkeypatch.setattr(records_module, "RECORDS_LIMIT", 500)  # the reader's only
    refused: list[str] = []
    os.close(journal._fd)
    os.close(journal._folder)
    assert list(pending(journal.path.parent, refused=refused)) == []
    (why,) = refused
    assert "is damaged and not read: the record at byte " in why
    assert "ends past 500 bytes of records" in why
