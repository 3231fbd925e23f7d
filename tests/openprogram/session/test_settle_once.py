"""A settled call stays settled (issue 40, items 1 and 2): settling is a compare-and-set
on the stored node, across Sessions and processes, on SQLite and PostgreSQL, and a fork
never settles or re-runs a `once` call it shares with its parent. Every `once` body run
is a line of a log file: one line is one charge."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram import (
    AlreadySettled,
    EffectUnknown,
    Runtime,
    ScriptedModel,
    Session,
    SessionLocked,
    UsageError,
)
from openprogram.store import open_store
from tests.openprogram.session import settle_programs as programs
from tests.openprogram.session.settle_programs import checkout
from tests.support.children import ROOT, finish, start, wait_ready

MODULE = "tests.openprogram.session.settle_programs"


@pytest.fixture
def log(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "charges.log"
    programs.LOG[:] = [str(path)]
    yield path
    programs.LOG.clear()
    programs.CRASH[0] = False


def charges(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def interrupted(store: str, session_id: str) -> str:
    """Record `session_id` with pay interrupted right after it charged; pay's node id."""
    programs.CRASH[0] = True
    with pytest.raises(KeyboardInterrupt), Session(store, id=session_id) as session:
        checkout()
    programs.CRASH[0] = False
    (node,) = session.dag.find("pay")
    assert node.status == "unknown"
    return node.id


def cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    """`openprogram ARGUMENTS` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "openprogram", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def go(child: subprocess.Popen[str]) -> str:
    assert child.stdin is not None
    child.stdin.write("go\n")
    child.stdin.flush()
    return finish(child)


def test_of_two_sessions_settling_one_call_only_the_first_lands(durable_store: str, log: Path):
    node = interrupted(durable_store, "s1")
    first, stale = Session.open(durable_store, "s1"), Session.open(durable_store, "s1")
    first.settle(node, "ch-0", by="alice")
    with pytest.raises(AlreadySettled) as refused:
        stale.settle(node, rerun=True)  # loaded while pay was unknown
    assert (refused.value.node_id, refused.value.by, refused.value.how) == (node, "alice", "result")
    assert isinstance(refused.value.at, float)
    message = str(refused.value)
    assert f"pay (node {node}) is completed, not waiting to be settled" in message
    assert 'it was settled with "ch-0" by alice at ' in message and "nothing changed" in message
    stale.settle(node, "ch-0")  # the same settle again: a no-op, through either
    first.settle(node, "ch-0")
    with pytest.raises(AlreadySettled, match='settled with "ch-0" by alice'):
        first.settle(node, "ch-1")
    with Session.open(durable_store, "s1", resume=True):
        assert checkout() == "ch-0"
    assert charges(log) == 1
    (settled,) = Session.open(durable_store, "s1").dag.find("pay")
    assert settled.meta["settled_by"] == "alice"
    assert [s["how"] for s in settled.meta["settlements"]] == ["result"]


def test_a_call_settled_to_run_again_is_not_settled_otherwise_after(durable_store: str, log: Path):
    node = interrupted(durable_store, "s2")
    first, stale = Session.open(durable_store, "s2"), Session.open(durable_store, "s2")
    first.settle(node, rerun=True, by="bob")
    with pytest.raises(AlreadySettled, match="it was settled to run again by bob at "):
        stale.settle(node, "ch-0")
    with Session.open(durable_store, "s2", resume=True):
        assert checkout() == "ch-5"
    assert charges(log) == 2  # the first charge, and the one run settled to run again
    with pytest.raises(AlreadySettled, match=r"to run again by bob .*; it ran again and finished"):
        stale.settle(node, rerun=True)


@pytest.mark.slow
def test_a_stale_process_cannot_settle_a_call_the_cli_settled(durable_store: str, log: Path):
    node = interrupted(durable_store, "s3")
    stale = start(["-m", MODULE, durable_store, "s3", str(log), "settle", "rerun"])
    wait_ready(stale)  # it loaded the session while pay was unknown
    settled = cli("sessions", "settle", "s3", "pay#1", "--result", '"ch-0"', "--store",
                  durable_store)  # fmt: skip
    assert settled.returncode == 0, settled.stderr
    assert settled.stdout == f'settled pay ({node}) with "ch-0" in session s3\n'
    said = go(stale)
    assert said.startswith(f"refused: pay (node {node}) is completed"), said
    assert 'settled with "ch-0" by ' in said and " pid " in said
    resumed = finish(start(["-m", MODULE, durable_store, "s3", str(log), "resume"]))
    assert resumed == "ch-0\n"
    assert charges(log) == 1
    again = cli("sessions", "settle", "s3", node[:8], "--rerun", "--store", durable_store)
    assert again.returncode == 1 and "is completed, not waiting to be settled" in again.stderr


@pytest.mark.slow
def test_of_two_processes_settling_at_once_one_settles(durable_store: str, log: Path):
    interrupted(durable_store, "s4")
    reruns = start(["-m", MODULE, durable_store, "s4", str(log), "settle", "rerun"])
    pays = start(["-m", MODULE, durable_store, "s4", str(log), "settle", '"ch-0"'])
    for child in (reruns, pays):
        wait_ready(child)
    for child in (reruns, pays):
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
    said = sorted(finish(child).split(":")[0].strip() for child in (reruns, pays))
    assert said in (["refused", "settled"], ["locked", "settled"])  # never both
    resumed = finish(start(["-m", MODULE, durable_store, "s4", str(log), "resume"]))
    assert resumed in ("ch-0\n", "ch-5\n")
    assert charges(log) == (1 if resumed == "ch-0\n" else 2)


def test_a_run_resumed_from_a_stale_load_never_runs_a_call_settled_since(
    durable_store: str, log: Path
):
    node = interrupted(durable_store, "s5")
    stale = Session.open(durable_store, "s5", resume=True)
    Session.open(durable_store, "s5").settle(node, "ch-0")
    with (
        pytest.raises(
            SessionLocked,
            match=r'changed in .*\(the store holds it completed: it was settled with "ch-0"',
        ),
        stale,
        Runtime(ScriptedModel([]), ask=lambda question: "rerun"),  # a person would rerun
    ):
        checkout()
    assert charges(log) == 1
    with Session.open(durable_store, "s5", resume=True):
        assert checkout() == "ch-0"


def test_two_runs_resumed_after_a_settle_to_run_again_run_it_once(durable_store: str, log: Path):
    node = interrupted(durable_store, "s6")
    Session.open(durable_store, "s6").settle(node, rerun=True)
    first = Session.open(durable_store, "s6", resume=True)
    second = Session.open(durable_store, "s6", resume=True)  # both loaded it settled so
    with first:
        assert checkout() == "ch-5"
    with pytest.raises(SessionLocked, match=r"changed in .*\(the store holds it completed"), second:
        checkout()
    assert charges(log) == 2


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
def test_a_stale_resume_does_not_overwrite_a_settle_made_after_a_kill(
    durable_store: str, log: Path
):
    child = start(["-m", MODULE, durable_store, "s7", str(log), "kill"])
    wait_ready(child)  # inside pay's body, after the charge
    child.kill()
    child.communicate(timeout=60)
    stale = Session.open(durable_store, "s7", resume=True)  # pay is stored running
    fresh = Session.open(durable_store, "s7")
    (node,) = fresh.dag.find("pay")
    assert node.status == "running"
    fresh.settle(node.id, "ch-0", by="carol")
    with pytest.raises(SessionLocked, match='settled with "ch-0" by carol'), stale:
        checkout()  # its load says running: it would record it unknown over the settle
    (after,) = Session.open(durable_store, "s7").dag.find("pay")
    assert (after.status, after.output) == ("completed", "ch-0")
    assert charges(log) == 1


# -- forks (issue 40, item 2) --------------------------------------------------------------
def test_a_fork_never_settles_or_reruns_its_parents_once_call(durable_store: str, log: Path):
    node = interrupted(durable_store, "p")
    parent = Session.open(durable_store, "p")
    fork = parent.fork(at=node, id="p-fork")
    with pytest.raises(UsageError, match="this fork shares with session p") as refused:
        fork.settle(node, rerun=True)
    assert f"openprogram sessions settle p {node} --result JSON | --rerun" in str(refused.value)
    assert not isinstance(refused.value, AlreadySettled)
    with (
        pytest.raises(EffectUnknown, match="a fork never settles, re-runs or cancels"),
        Session.open(durable_store, "p-fork", resume=True),
        Runtime(ScriptedModel([]), ask=lambda question: "rerun"),  # never asked
    ):
        checkout()
    parent.settle(node, rerun=True)  # the parent's person: it did not happen
    later = Session.open(durable_store, "p").fork(at=node, id="p-fork2")
    (shared,) = later.dag.find("pay")
    assert shared.meta["settled"] == "rerun"  # the fork shares it settled so
    with (
        pytest.raises(EffectUnknown, match="shares with session p"),
        Session.open(durable_store, "p-fork2", resume=True),
    ):
        checkout()
    assert charges(log) == 1  # no fork ran it
    store, _ = open_store(durable_store)
    assert node not in {row.id for row in store.rows("p-fork")}  # no fork recorded it
    store.close()
    with Session.open(durable_store, "p", resume=True):
        assert checkout() == "ch-5"
    assert charges(log) == 2  # the parent ran it again, once


def test_a_fork_of_a_fork_names_the_session_whose_call_it_is(durable_store: str, log: Path):
    node = interrupted(durable_store, "q")
    fork = Session.open(durable_store, "q").fork(at=node, id="q-1")
    deeper = fork.fork(at=node, id="q-2")
    with pytest.raises(UsageError, match="shares with session q,"):
        deeper.settle(node, "ch-0")
    with pytest.raises(UsageError, match="shares with session q,"):
        Session.open(durable_store, "q-2").settle(node, "ch-0")


@pytest.mark.slow
def test_the_cli_refuses_to_settle_a_forks_shared_call(durable_store: str, log: Path):
    node = interrupted(durable_store, "r")
    Session.open(durable_store, "r").fork(at=node, id="r-fork")
    refused = cli("sessions", "settle", "r-fork", "pay#1", "--rerun", "--store", durable_store)
    assert refused.returncode == 1
    assert "shares with session r" in refused.stderr and "settle it in r" in refused.stderr.lower()
    resumed = finish(start(["-m", MODULE, durable_store, "r-fork", str(log), "resume"]))
    assert resumed.startswith("unknown: ") and "fork shares with session r" in resumed
    assert charges(log) == 1


# -- what `sessions show` says (issue 44, item 3) -------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
def test_sessions_show_marks_an_interrupted_call_and_who_settled_it(tmp_path: Path, log: Path):
    from click.testing import CliRunner

    from openprogram.cli import cli

    path = str(tmp_path / "runs.db")
    child = start(["-m", MODULE, path, "s8", str(log), "kill"])
    wait_ready(child)  # inside pay's body
    child.kill()
    child.communicate(timeout=60)

    def show() -> str:
        shown = CliRunner().invoke(cli, ["sessions", "show", "s8", "--store", path])
        assert shown.exit_code == 0, shown.output
        return shown.output

    before = show()  # no resume yet: pay is stored running, and no process runs it
    (node,) = Session.open(path, "s8").dag.find("pay")
    assert " · 1 interrupted" in before.splitlines()[0]
    line = next(line for line in before.splitlines() if "pay #1" in line)
    assert line.lstrip().startswith("?  pay #1") and "interrupted: its process ended" in line
    assert f"sessions settle s8 {node.id} --result JSON | --rerun" in line
    assert "interrupted: no process runs it" in before  # checkout, its caller
    Session.open(path, "s8").settle(node.id, "ch-0", by="alice")
    line = next(line for line in show().splitlines() if "pay #1" in line)
    assert line.lstrip().startswith("✓  pay #1")
    assert '[settled with "ch-0" by alice at ' in line and " UTC]" in line


def test_in_a_memory_store_too_only_the_first_settle_lands(log: Path):
    from openprogram.store import MemoryStore

    store = MemoryStore()
    programs.CRASH[0] = True
    with pytest.raises(KeyboardInterrupt), Session(store, id="m") as session:
        checkout()
    programs.CRASH[0] = False
    (node,) = session.dag.find("pay")
    first, stale = Session.open(store, "m"), Session.open(store, "m")
    stale.settle(node.id, rerun=True, by="bob")
    with pytest.raises(AlreadySettled, match="settled to run again by bob"):
        first.settle(node.id, "ch-0")
    with Session.open(store, "m", resume=True):
        assert checkout() == "ch-5"
    assert charges(log) == 2
