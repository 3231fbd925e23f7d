"""Real processes: killed with SIGKILL mid-run, and two writing one SQLite file at once.

Children run tests/openprogram/store/programs.py and say "ready" on stdout at the point
where the test acts, so nothing here waits on a timer.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from openprogram import Runtime, Session
from tests.openprogram.store import programs

PROGRAM = Path(programs.__file__)
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PROGRAM), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def kill(child: subprocess.Popen[str]) -> None:
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL
    for stream in (child.stdin, child.stdout, child.stderr):
        assert stream is not None
        stream.close()


def wait_ready(child: subprocess.Popen[str]) -> None:
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        _, errors = child.communicate(timeout=60)
        pytest.fail(f"the child did not get ready: {line!r}\n{errors}")


def assert_coherent(session: Session) -> None:
    """Every parent and predecessor exists and came first; seqs strictly increase."""
    seqs = [n.seq for n in session.dag.nodes]
    assert seqs == sorted(set(seqs))
    for node in session.dag.nodes:
        for link in (node.parent, node.predecessor):
            if link is not None:
                assert session.dag.node(link).seq < node.seq


@pytest.mark.slow
def test_a_killed_process_loses_only_the_exchange_in_flight_and_resumes(durable_store: Any):
    child = start("agent", durable_store, "killed", "llm: plan step 2 after thought 2")
    wait_ready(child)
    kill(child)

    crashed = Session.open(durable_store, "killed")
    assert_coherent(crashed)
    steps = crashed.dag.find(name="step")
    assert [s.status for s in steps] == ["completed", "completed", "running"]
    thought, in_flight = crashed.dag.children(crashed.dag.find(name="plan", kind="code")[2].id)
    assert (thought.status, thought.output) == ("completed", "thought 2")
    assert (in_flight.status, in_flight.output) == ("running", None)
    crashed.close()

    with Session.open(durable_store, "killed", resume=True), Runtime(programs.model()):
        assert programs.agent("task") == programs.EXPECTED
    assert programs.executed == ["plan 2", "tool 3", "plan 3"]
    assert programs.asked == [
        "plan step 2 after thought 2",
        "think about step 3",
        "plan step 3 after thought 3",
    ]
    resumed = Session.open(durable_store, "killed")
    assert_coherent(resumed)
    assert {n.status for n in resumed.dag.nodes} == {"completed"}
    assert resumed.dag.find(kind="llm")[5].id == in_flight.id  # asked again in place
    resumed.close()


@pytest.mark.parametrize("after", [1, 37, 150])
@pytest.mark.slow
def test_a_process_killed_at_any_instant_loses_nothing_made_durable_by_flush(
    durable_store: Any, after: int
):
    child = start("loop", durable_store, "loop", "100000", "flush")
    wait_ready(child)
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    for _ in range(after):  # the kill lands while the child keeps writing
        child.stdout.readline()
    kill(child)
    _integrity_ok(durable_store)
    session = Session.open(durable_store, "loop")
    assert_coherent(session)
    finished = [n for n in session.dag.nodes if n.status == "completed"]
    assert len(finished) >= after
    assert [n.input["i"] for n in session.dag.nodes] == list(range(len(session.dag)))
    assert all(n.output == n.input["i"] for n in finished)
    assert len(session.dag) - len(finished) <= 1  # at most the call in flight
    with session:  # and it takes new records
        programs.count(-1)
    assert Session.open(durable_store, "loop").dag.nodes[-1].input == {"i": -1}


@pytest.mark.parametrize("after", [1, 37, 150])
@pytest.mark.slow
def test_a_killed_sqlite_writer_loses_no_call_that_returned(tmp_path: Path, after: int):
    """No flush: each call waits for its batch's commit in the journal beside the file."""
    store = tmp_path / "sessions.db"
    child = start("loop", str(store), "loop", "100000")
    wait_ready(child)
    _send(child, "go")
    assert child.stdout is not None
    returned = [int(child.stdout.readline()) for _ in range(after)]
    kill(child)
    assert (tmp_path / "sessions.db-pending").is_dir()  # the journal its writer left

    session = Session.open(str(store), "loop")
    assert not (tmp_path / "sessions.db-pending").exists()  # folded in, and removed
    assert_coherent(session)
    finished = [n.input["i"] for n in session.dag.nodes if n.status == "completed"]
    assert finished[: len(returned)] == returned  # every call that returned
    assert [n.input["i"] for n in session.dag.nodes] == list(range(len(session.dag)))
    assert all(n.output == n.input["i"] for n in session.dag.nodes if n.status == "completed")
    assert len(session.dag) - len(finished) <= 1  # at most the call in flight
    session.close()
    _integrity_ok(str(store))


@pytest.mark.slow
def test_a_call_killed_while_it_runs_is_stored_as_running_at_once(tmp_path: Path):
    """Its start is durable when the call starts, not at the next commit."""
    store = str(tmp_path / "sessions.db")
    child = start("hang", store, "hang")
    wait_ready(child)  # said from inside hang(), nothing recorded since its start
    kill(child)

    session = Session.open(store, "hang")
    assert [(n.name, n.status) for n in session.dag.nodes] == [
        ("count", "completed"),
        ("hang", "running"),
    ]
    session.close()


def _integrity_ok(store: str) -> None:
    if not store.startswith("postgresql://"):
        with closing(sqlite3.connect(store)) as connection:
            assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)


LEDGER_STEPS = 3000


@pytest.mark.parametrize("after", [1, 6, 40])
@pytest.mark.slow
def test_a_killed_process_keeps_every_paid_exchange_and_redoes_only_fast_calls_after_it(
    durable_store: Any, after: int
):
    child = start("ledger", durable_store, "ledger", str(LEDGER_STEPS))
    wait_ready(child)
    _send(child, "go")
    assert child.stdout is not None
    paid: list[int] = []
    settled: list[int] = []
    while len(paid) < after:  # the kill lands while the child keeps recording
        line = child.stdout.readline()
        assert line, "the child ended early"
        if line.startswith("paid "):
            paid.append(int(line.split()[1]))
        elif line.startswith("settled "):
            settled.append(int(line.split()[1]))
    kill(child)
    _integrity_ok(durable_store)

    crashed = Session.open(durable_store, "ledger")
    assert_coherent(crashed)
    exchanges = crashed.dag.find(kind="llm")
    answered = {n.output for n in exchanges if n.status == "completed"}
    assert {f"thought {i}" for i in paid} <= answered  # every returned reply is stored
    slow = {n.output for n in crashed.dag.find(name="settle") if n.status == "completed"}
    assert set(settled) <= slow  # and every slow call that returned
    ticks = crashed.dag.find(name="tick")
    assert [t.input["i"] for t in ticks] == list(range(len(ticks)))  # a prefix, no gaps
    assert len(ticks) > paid[-1]  # with every call made before the last paid exchange
    for node in crashed.dag.nodes:  # and every row whole: as created, or as completed
        assert node.input is not None
        assert (node.status, node.output is None) in {("running", True), ("completed", False)}
    assert all(t.output == t.input["i"] for t in ticks if t.status == "completed")
    running = [n for n in crashed.dag.nodes if n.status == "running"]
    assert running[0].name == "ledger" and len(running) <= 2  # the loop, and a call in flight
    done = {t.input["i"] for t in ticks if t.status == "completed"}
    crashed.close()

    with Session.open(durable_store, "ledger", resume=True), Runtime(programs.model()):
        replies = programs.ledger(LEDGER_STEPS)
    every = range(programs.PAID_EVERY - 1, LEDGER_STEPS, programs.PAID_EVERY)
    assert replies == [f"thought {i}" for i in every]
    assert [e for e in programs.executed if e.startswith("tick")] == [
        f"tick {i}" for i in range(LEDGER_STEPS) if i not in done
    ]
    assert not {f"settle {i}" for i in slow} & set(programs.executed)
    assert programs.asked == [
        f"think about step {i}" for i in every if f"thought {i}" not in answered
    ]  # no paid exchange is asked twice
    resumed = Session.open(durable_store, "ledger")
    assert_coherent(resumed)
    assert {n.status for n in resumed.dag.nodes} == {"completed"}
    assert len(resumed.dag.find(name="tick")) == LEDGER_STEPS
    resumed.close()


@pytest.mark.slow
def test_a_process_that_exits_with_its_session_open_commits_what_waited(durable_store):
    child = start("exit", durable_store, "open", "40")
    out, errors = child.communicate(timeout=120)
    assert child.returncode == 0, errors
    assert out.strip() == "open recorded"
    assert not Path(f"{durable_store}-pending").exists()  # its emptied journal went too
    session = Session.open(durable_store, "open")
    assert [(n.status, n.output) for n in session.dag.nodes] == [
        ("completed", i) for i in range(40)
    ]
    session.close()


@pytest.mark.slow
def test_two_processes_write_different_sessions_into_one_sqlite_file(tmp_path: Path):
    path = str(tmp_path / "shared.db")
    children = [start("loop", path, name, "300") for name in ("left", "right")]
    for child in children:
        wait_ready(child)
    for child in children:  # both create the file and start writing together
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    for child in children:
        _, errors = child.communicate(timeout=300)
        assert child.returncode == 0, errors
        assert "could not record" not in errors
    for name in ("left", "right"):
        session = Session.open(path, name)
        assert [n.output for n in session.dag.nodes] == list(range(300))
        assert {n.status for n in session.dag.nodes} == {"completed"}
        session.close()


# -- one writer per session ------------------------------------------------------------------


def _send(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdin is not None
    child.stdin.write(line + "\n")
    child.stdin.flush()


def _expect(child: subprocess.Popen[str], line: str) -> None:
    assert child.stdout is not None
    got = child.stdout.readline()
    if got.strip() != line:
        child.kill()
        _, errors = child.communicate(timeout=60)
        pytest.fail(f"expected {line!r} from the child, got {got!r}\n{errors}")


def _written_by(store: Any, session_id: str) -> list[str]:
    session = Session.open(store, session_id)
    assert_coherent(session)
    assert {n.status for n in session.dag.nodes} == {"completed"}
    outputs = [n.output for n in session.dag.nodes]
    session.close()
    return outputs


@pytest.mark.slow
def test_a_second_process_writing_a_session_is_refused_and_nothing_interleaves(durable_store):
    Session(durable_store, id="shared").close()
    first = start("writer", durable_store, "shared", "first", "50", "pause")
    second = start("writer", durable_store, "shared", "second", "50", "run")
    wait_ready(first)
    wait_ready(second)
    _send(first, "go")
    _expect(first, "holding")  # the first holds the lease and has recorded a call
    _send(second, "go")
    _, errors = second.communicate(timeout=120)
    assert second.returncode == 3, errors
    assert f"being written by process {first.pid} on host" in errors
    assert "fork" in errors and "Traceback" not in errors
    _send(first, "on")
    _, errors = first.communicate(timeout=120)
    assert first.returncode == 0, errors
    assert _written_by(durable_store, "shared") == [f"first {i}" for i in range(50)]


@pytest.mark.slow
def test_a_lease_is_taken_over_at_once_when_its_process_was_killed(durable_store):
    Session(durable_store, id="orphan").close()
    first = start("writer", durable_store, "orphan", "first", "50", "pause")
    wait_ready(first)
    _send(first, "go")
    _expect(first, "holding")
    kill(first)  # SIGKILL: the lease stays in the store, its process is gone
    second = start("writer", durable_store, "orphan", "second", "3", "run")
    wait_ready(second)
    _send(second, "go")
    _, errors = second.communicate(timeout=120)
    assert second.returncode == 0, errors
    assert _written_by(durable_store, "orphan") == ["first 0", "second 0", "second 1", "second 2"]


@pytest.mark.slow
def test_two_processes_racing_for_one_session_leave_one_writers_records(durable_store):
    Session(durable_store, id="race").close()
    children = [start("writer", durable_store, "race", name, "100", "run") for name in "ab"]
    for child in children:
        wait_ready(child)
    for child in children:
        _send(child, "go")
    results = [(child.communicate(timeout=300)[1], child.returncode) for child in children]
    codes = sorted(code for _, code in results)
    assert codes == [0, 3], results
    (winner,) = [name for name, (_, code) in zip("ab", results, strict=True) if code == 0]
    assert _written_by(durable_store, "race") == [f"{winner} {i}" for i in range(100)]
