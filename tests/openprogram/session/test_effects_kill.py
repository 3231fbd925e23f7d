"""Declared effects and graceful drain with real processes: SIGKILL at random points
inside bodies (kill_effects.py), and SIGTERM draining a run that a resume then finishes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openprogram import RunStopped, Session, agentic_function

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL and SIGTERM")
ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.slow
def test_once_bodies_run_at_most_once_across_random_kills(tmp_path: Path):
    """30 children killed with SIGKILL at random points (the benchmark kills 200): every
    once body that began and did not finish is found unknown and settled by its key,
    none runs twice unasked, idempotent ones run again under their key, nothing is lost
    (kill_effects._check asserts each of these for every finished session)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.openprogram.session.kill_effects", str(tmp_path), "30"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    stats = json.loads(done.stdout.splitlines()[-1])
    assert stats["kills"] == 30 and stats["sessions"] >= 1
    assert stats["unknown"] == stats["settled_result"] + stats["settled_rerun"]


DRAINED = textwrap.dedent(
    """
    import sys
    from openprogram import RunStopped, Session, agentic_function

    @agentic_function
    def step(i: int) -> int:
        return i

    @agentic_function(effect="once")
    def pay(i: int) -> int:
        with open(sys.argv[2], "a") as log:
            log.write(f"{i}\\n")
        if i == 2:
            print("ready", flush=True)
            sys.stdin.readline()  # SIGTERM arrives here, inside a once body
        return step(i)  # a node boundary inside it: a once body is let finish

    @agentic_function
    def agent(n: int) -> list[int]:
        return [pay(i) for i in range(n)]

    try:
        with Session(sys.argv[1], id="s"):
            agent(5)
    except RunStopped as stopped:  # how a drained program exits 0
        print("stopped:", stopped.reason)
    """
)


@agentic_function
def step(i: int) -> int:
    return i


@agentic_function(effect="once")
def pay(i: int) -> int:
    return step(i)


@agentic_function
def agent(n: int) -> list[int]:
    return [pay(i) for i in range(n)]


@pytest.mark.slow
def test_sigterm_drains_at_the_next_boundary_and_a_resume_finishes(tmp_path: Path):
    path, log = tmp_path / "runs.db", tmp_path / "paid.log"
    child = subprocess.Popen(
        [sys.executable, "-c", DRAINED, str(path), str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGTERM)
    out, _ = child.communicate("go on\n", timeout=60)
    assert child.returncode == 0 and out == "stopped: drained by SIGTERM\n"
    session = Session.open(path, "s")
    (top,) = session.dag.find("agent")
    assert (top.status, top.meta["stop_reason"]) == ("stopped", "drained by SIGTERM")
    assert [(n.input["i"], n.status) for n in session.dag.find("pay")] == [
        (0, "completed"), (1, "completed"), (2, "completed"),
    ]  # fmt: skip
    with Session.open(path, "s", resume=True):
        assert agent(5) == [0, 1, 2, 3, 4]
    assert log.read_text().split() == ["0", "1", "2"]  # this process's bodies write nothing


def test_sigterm_chains_the_previous_handler_and_is_restored_after(tmp_path: Path):
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(RunStopped, match="drained by SIGTERM"), Session(tmp_path / "r.db"):
            step(1)
            os.kill(os.getpid(), signal.SIGTERM)  # handled in this thread before step(2)
            step(2)
        assert seen == [signal.SIGTERM]
        handler = signal.getsignal(signal.SIGTERM)
        assert callable(handler) and getattr(handler, "__name__", "") == "<lambda>"
        with Session():
            assert step(3) == 3  # the drain ended with the session
    finally:
        signal.signal(signal.SIGTERM, previous)


IDLE = textwrap.dedent(
    """
    import sys
    from openprogram import RunStopped, Session

    try:
        with Session(sys.argv[1], id="s"):
            print("ready", flush=True)
            sys.stdin.readline()  # no call runs: SIGTERM stops the wait at once
    except RunStopped as stopped:
        print("stopped:", stopped.reason)
    """
)


@pytest.mark.slow
def test_sigterm_with_no_call_running_stops_at_once(tmp_path: Path):
    child = subprocess.Popen(
        [sys.executable, "-c", IDLE, str(tmp_path / "runs.db")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    child.send_signal(signal.SIGTERM)
    out = child.stdout.read()  # the stdin it waits on stays open: only the drain ends it
    assert child.wait(timeout=60) == 0 and out == "stopped: drained by SIGTERM\n"
    assert child.stdin is not None
    child.stdin.close()
    child.stdout.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX only")
def test_a_fork_child_ends_on_sigterm_as_it_would_without_a_session():
    from openprogram.agentic import _drain

    with Session():
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: even with the parent's handler put back, SIGTERM ends it
            signal.signal(signal.SIGTERM, _drain._on_sigterm)
            os.write(write, b"x")
            signal.pause()
            os._exit(3)  # not reached
        os.read(read, 1)
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
