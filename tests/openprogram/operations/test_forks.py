"""Operations in forks: a fork sees the operations its shared history made, and never
runs, cancels or settles them; they are its parent's. A done one is its result, a
pending or running one is waited for while the parent runs it, and across real
processes killed and resumed each runs at most as its parent's effect rule says."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openprogram import Runtime, ScriptedModel, Session, UsageError
from openprogram.errors import OperationFailed
from openprogram.operations import Operation, operation_tool
from openprogram.operations.tracker import tracker
from openprogram.store import open_store
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds

ROOT = Path(__file__).resolve().parents[3]


@operation_tool
def add(a: int, b: int) -> Operation:
    """Add two numbers."""
    return Operation("test.add", {"a": a, "b": b})


@operation_tool(background=True)
def build(file: str) -> Operation:
    """Build: works until the file exists."""
    return Operation("test.block_again", {"file": file})


def test_a_fork_sees_its_parents_operations_and_never_runs_them(store, tmp_path):
    release = tmp_path / "release"
    with Session(store, id="p") as parent, Runtime(ScriptedModel([])):
        assert add(a=2, b=3) == 5
        handle = build(file=str(release))  # running, in the parent
        (tool_call,) = parent.dag.find(name="build")
        fork = parent.fork(tool_call.id, id="f")
        with fork, Runtime(ScriptedModel([])):
            seen = {r.kind: r.state for r in fork.operations()}
            assert seen == {"test.add": "done", "test.block_again": seen["test.block_again"]}
            assert seen["test.block_again"] in ("pending", "running")
            for refused in (
                lambda: tracker(fork).cancel(handle["operation"]),
                lambda: fork.settle(handle["operation"], "built"),
            ):
                with pytest.raises(UsageError, match="never runs, cancels or settles"):
                    refused()
            tracker(fork).start([handle["operation"]], None)  # not the fork's to run
            release.touch()  # the parent's run finishes it; the fork waits on that
            (waited,) = tracker(fork).wait([handle["operation"]], timeout_s=30)
            assert waited.state == "done" and waited.result == "released"
            assert add(a=1, b=1) == 2  # the fork's own operation: run in the fork
        tracker(parent).wait([handle["operation"]])
    records = {r.kind: r for r in parent.operations()}
    assert records["test.block_again"].attempts == 1  # run once, by the parent
    assert [r.kind for r in fork.operations()] == ["test.add", "test.block_again", "test.add"]


def test_a_forks_unfinished_inherited_operation_is_an_error_when_its_parent_is_gone(tmp_path):
    store = str(tmp_path / "runs.db")
    with Session(store, id="p") as parent, Runtime(ScriptedModel([])):
        build(file=str(tmp_path / "release"))
        (tool_call,) = parent.dag.find(name="build")
        parent.fork(tool_call.id, id="f")
        (record,) = parent.operations()
        tracker(parent).cancel(record.id)  # the parent ends before finishing it
        tracker(parent).wait([record.id])
    fork = Session.open(store, "f")
    (inherited,) = fork.operations()
    assert inherited.state == "cancelled"  # as its parent's rows say
    node = fork.dag.node(tool_call.id)
    with pytest.raises(OperationFailed, match="cancelled"):
        tracker(fork).results(node, [inherited.id])
    fork.close()


def _run(*arguments: str) -> dict | list:
    argv = [sys.executable, "-m", "tests.openprogram.operations.fork_programs", *arguments]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_across_killed_processes_a_forks_inherited_operation_runs_at_most_once(tmp_path):
    """Parent process: a background once-operation running when it is SIGKILLed, after
    the session was forked at its tool call. The fork (a process of its own) replays the
    call, finds the parent's operation, and does not run it; the parent resumed finds
    it unknown; the fork then reads it unknown too. The work began exactly once."""
    store, log = str(tmp_path / "runs.db"), tmp_path / "log"
    argv = [sys.executable, "-m", "tests.openprogram.operations.fork_programs", "parent"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([*argv, store, str(log)], cwd=ROOT, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    try:
        handle = json.loads(child.stdout.readline())
        reader, _ = open_store(store)
        deadline = time.monotonic() + 60
        # the line, not the file: the kind opens the log (making it) before it writes
        while not (
            log.exists() and log.read_text() and reader.operations("p")[0].state == "running"
        ):
            assert time.monotonic() < deadline and child.poll() is None, child.stderr.read()
            time.sleep(0.02)
        opened = Session.open(store, "p")
        (tool_call,) = opened.dag.find(name="charge")
        opened.fork(tool_call.id, id="f")
        opened.close()
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()
        child.stderr.close()
    forked = _run("fork", store, str(log))
    assert forked == {
        "handle": handle,
        "states": [[handle["operation"], "running", 1]],
        "waited": "running",  # its parent's, not running anywhere: left as it is
    }
    assert _run("resume", store, str(log)) == [[handle["operation"], "unknown", 1]]
    assert _run("fork", store, str(log))["waited"] == "unknown"
    assert log.read_text().splitlines() == ["start charge"]  # began once, in the parent
    fork = Session.open(store, "f")
    with pytest.raises(UsageError, match="never runs, cancels or settles"):
        fork.settle(handle["operation"], "charged")
    fork.close()


def test_a_resumed_operation_tool_call_returns_what_it_returned(tmp_path):
    """Its recorded result (a background call's handle, a foreground call's result), not
    an Operation rebuilt from the function's return annotation."""
    store, release = str(tmp_path / "runs.db"), tmp_path / "release"
    release.touch()
    with Session(store, id="s") as session, Runtime(ScriptedModel([])):
        handle, total = build(file=str(release)), add(a=2, b=3)
        tracker(session).wait([handle["operation"]])
    with Session.open(store, "s", resume=True), Runtime(ScriptedModel([])):
        assert build(file=str(release)) == handle
        assert add(a=2, b=3) == total == 5
