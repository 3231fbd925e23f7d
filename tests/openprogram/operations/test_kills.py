"""Operations done exactly once across SIGKILLs of real child processes, then resumed."""

from __future__ import annotations

import collections
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from openprogram import Session
from openprogram.operations import settle_operation
from tests.openprogram.operations.programs import PER_ROUND

ROOT = Path(__file__).resolve().parents[3]
ROUNDS = 3


def _start(store: str, log: Path, effect: str) -> subprocess.Popen[str]:
    argv = [sys.executable, "-m", "tests.openprogram.operations.programs"]
    argv += [store, "s", str(log), str(ROUNDS), effect]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(argv, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)  # fmt: skip


def _lines(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


def _kill_after(child: subprocess.Popen[str], log: Path, more: int) -> bool:
    """SIGKILL the child once the log grew by `more` lines (inside an operation's body);
    False when it finished first."""
    seen = len(_lines(log))
    deadline = time.monotonic() + 60
    while len(_lines(log)) < seen + more:
        if child.poll() is not None or time.monotonic() > deadline:
            return False
        time.sleep(0.002)  # polling the file the child writes: no event to wait on
    os.kill(child.pid, signal.SIGKILL)
    child.communicate()
    return True


def _records(store: str) -> list[Any]:
    session = Session.open(store, "s")
    try:
        return session.operations()
    finally:
        session.close()


def _events(store: str) -> list[Any]:
    session = Session.open(store, "s")
    try:
        return session.store.operation_events("s")
    finally:
        session.close()


@pytest.mark.slow
def test_idempotent_operations_are_done_exactly_once_across_kills(durable_store, tmp_path):
    log = tmp_path / "log"
    kills = 0
    for attempt in range(12):
        child = _start(durable_store, log, "idempotent")
        if kills < 4 and _kill_after(child, log, 1 + attempt % 2):
            kills += 1
            continue
        out, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        assert out.strip() == "all done"
        break
    assert kills >= 2
    records = _records(durable_store)
    names = [r.args["name"] for r in records]
    assert sorted(names) == sorted(f"r{k}-{i}" for k in range(ROUNDS) for i in range(PER_ROUND))
    starts = collections.Counter(
        line.split()[1] for line in _lines(log) if line.startswith("start")
    )
    events = _events(durable_store)
    unstarted = 0
    for record in records:
        assert record.state == "done" and record.result == record.args["name"]
        # every run of the body was recorded as an attempt before it started, and the
        # result was recorded once: a done operation never ran again
        assert 1 <= starts[record.args["name"]] <= record.attempts, (record, starts)
        unstarted += record.attempts - starts[record.args["name"]]
        done = [e for e in events if e.operation == record.id and e.state == "done"]
        assert len(done) == 1
    # an attempt is recorded, then its body starts (and logs "start"): a kill that lands
    # in between, on a round's other operation while the first one's start line already
    # showed, leaves an attempt whose body never ran. Only a kill can: at most a round's
    # operations per kill. The old test asked for none and failed once at load ~15 on a
    # count of starts against attempts; a body run twice under one attempt still fails
    assert unstarted <= kills * PER_ROUND


@pytest.mark.slow
def test_once_operations_never_run_twice_and_a_killed_one_waits_to_be_settled(
    durable_store, tmp_path
):
    log = tmp_path / "log"
    settled = []
    for attempt in range(12):
        child = _start(durable_store, log, "once")
        if attempt < 2 and _kill_after(child, log, 1):  # inside a body: start, no end
            continue
        out, err = child.communicate(timeout=60)
        if child.returncode == 0:
            assert out.strip() == "all done"
            break
        assert "EffectUnknown" in err
        unknown = [r for r in _records(durable_store) if r.state == "unknown"]
        assert len(unknown) == 1
        with Session.open(durable_store, "s") as session:
            settle_operation(session, unknown[0].id, result=unknown[0].args["name"])
        settled.append(unknown[0].args["name"])
    assert settled  # the first kill landed inside a body
    starts = collections.Counter(
        line.split()[1] for line in _lines(log) if line.startswith("start")
    )
    assert max(starts.values()) == 1  # at most once, whatever was killed
    records = _records(durable_store)
    assert all(r.state == "done" for r in records)
    assert len(records) == ROUNDS * PER_ROUND
    for name in settled:
        (record,) = [r for r in records if r.args["name"] == name]
        assert record.attempts == 1


@pytest.mark.slow
def test_background_work_of_a_killed_process_is_taken_up_by_the_resumed_run(
    durable_store, tmp_path
):
    log = tmp_path / "log"
    argv = [sys.executable, "-m", "tests.openprogram.operations.programs"]
    argv += [durable_store, "s", str(log), "background", "-"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def start() -> subprocess.Popen[str]:
        return subprocess.Popen(argv, cwd=ROOT, env=env, text=True, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)  # fmt: skip

    assert _kill_after(start(), log, 1)  # inside the background operation's body
    (record,) = _records(durable_store)
    assert (record.state, record.background) == ("running", True)
    child = start()
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.strip() == "waited"
    (record,) = _records(durable_store)
    assert (record.state, record.result, record.attempts) == ("done", "build", 2)
    assert _lines(log) == ["start build", "start build", "end build"]
