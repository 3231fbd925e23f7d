"""Declared effects under SIGKILL: a payment-shaped program killed at random points.

run() forks a child per attempt that resumes the session and runs `agent` (a `once`
charge and an `idempotent` notice per payment, each writing what it does to a log
outside the store), kills it with SIGKILL after a random delay, and settles every call
left `unknown` as a person would: by looking its key up in the log. A session that
finishes is checked and a new one begun. Used by test_effects_kill.py (a few dozen
kills) and benchmarks/bench_effects.py --kills 200;
`python -m tests.openprogram.session.kill_effects FOLDER KILLS` runs it alone.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import random
import signal
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from openprogram import EffectUnknown, Session, agentic_function, idempotency_key

PAYMENTS = 6
BODY_S = 0.002
"""How long each body waits between its steps: most of a run is spent inside bodies."""

_log: Path | None = None


def _append(line: str) -> None:
    """One line appended with one write(): a kill leaves it whole or absent."""
    assert _log is not None
    fd = os.open(_log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


@agentic_function(effect="once")
def charge(i: int) -> str:
    key = idempotency_key()
    _append(f"start {key}")
    time.sleep(BODY_S)
    _append(f"charged {key}")  # the effect that must happen at most once
    time.sleep(BODY_S)
    return f"receipt {i}"


@agentic_function(effect="idempotent")
def notify(i: int, receipt: str) -> int:
    _append(f"notify {i} {idempotency_key()}")
    time.sleep(BODY_S)
    return i


@agentic_function
def agent(n: int) -> list[int]:
    return [notify(i, charge(i)) for i in range(n)]


def _child(store: Path, session_id: str, ready: int) -> int:
    logging.getLogger("openprogram").setLevel(logging.ERROR)  # "took over the lease"
    try:
        with Session.open(store, session_id, resume=True):
            os.write(ready, b"r")
            agent(PAYMENTS)
    except EffectUnknown:
        return 3
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


def _settle(store: Path, session_id: str, stats: dict[str, Any]) -> None:
    """As a person would: each unknown charge whose key the log shows charged is settled
    with its receipt, the others to run again."""
    assert _log is not None
    lines = set(_log.read_text().splitlines())
    session = Session.open(store, session_id)
    try:
        for node in session.dag.find("charge", kind="code"):
            if node.status != "unknown":
                continue
            key = node.meta["key"]
            stats["unknown"] += 1
            if f"charged {key}" in lines:
                session.settle(node.id, f"receipt {node.input['i']}")
                stats["settled"][key].append("result")
            else:
                session.settle(node.id, rerun=True)
                stats["settled"][key].append("rerun")
    finally:
        session.close()


def _check(store: Path, session_id: str, stats: dict[str, Any]) -> None:
    """The finished session: nothing lost, each charge made once, notices by one key."""
    assert _log is not None
    session = Session.open(store, session_id)
    session.close()
    (top,) = session.dag.find("agent", kind="code")
    assert (top.status, top.output) == ("completed", list(range(PAYMENTS))), top
    charges = [n for n in session.dag.find("charge", kind="code") if n.parent == top.id]
    assert [n.status for n in charges] == ["completed"] * PAYMENTS
    words = collections.Counter(_log.read_text().splitlines())
    for node in charges:
        key = node.meta["key"]
        settled = stats["settled"][key]
        starts, detail = words[f"start {key}"], (key, settled, words[f"start {key}"])
        assert words[f"charged {key}"] == 1, detail  # the effect happened, at most once
        # never run again unasked (a kill between its committed start and its body's
        # first line leaves a rerun without a start)
        assert starts <= 1 + settled.count("rerun"), detail
        # every body that began and did not finish was found unknown (and settled)
        finished_by_body = 0 if settled[-1:] == ["result"] else 1
        assert starts - finished_by_body <= len(settled), detail
        stats["once_bodies"] += words[f"start {key}"]
    for i in range(PAYMENTS):
        keys = {
            line.split()[2] for line in words if line.startswith(f"notify {i} op-{session_id}-")
        }
        assert len(keys) == 1, keys  # an idempotent call runs again with the same key
        stats["notices"] += sum(
            count
            for line, count in words.items()
            if line.startswith(f"notify {i} op-{session_id}-")
        )
    stats["sessions"] += 1


def run(folder: Path, *, kills: int, seed: int = 0, window_s: float = 0.05) -> dict[str, Any]:
    """Kill `kills` children at random points, settling and resuming until the last
    session finishes; returns the counts (kills, unknowns, sessions, bodies run)."""
    global _log
    folder.mkdir(parents=True, exist_ok=True)
    store = folder / "payments.db"
    _log = folder / "effects.log"
    rng = random.Random(seed)
    stats: dict[str, Any] = {
        "kills": 0, "unknown": 0, "sessions": 0, "attempts": 0, "once_bodies": 0,
        "notices": 0, "settled": collections.defaultdict(list),
    }  # fmt: skip
    number = 0
    session_id = f"pay{number}"
    Session(store, id=session_id).close()
    while True:
        stats["attempts"] += 1
        sys.stdout.flush()
        sys.stderr.flush()
        reading, writing = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(reading)
            os._exit(_child(store, session_id, writing))
        os.close(writing)
        started = os.read(reading, 1)  # empty: it ended before its session was open
        os.close(reading)
        if stats["kills"] < kills:
            if started:
                time.sleep(rng.uniform(0, window_s))
            os.kill(pid, signal.SIGKILL)  # it may have ended: then it is a zombie still
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            stats["kills"] += 1
            continue
        code = os.WEXITSTATUS(status)
        if code == 3:
            _settle(store, session_id, stats)
            continue
        if code != 0:
            raise AssertionError(f"the child failed (exit {code}); see its traceback above")
        _check(store, session_id, stats)
        if stats["kills"] >= kills:
            break
        number += 1
        session_id = f"pay{number}"
        Session(store, id=session_id).close()
    settled = stats.pop("settled")
    stats["settled_result"] = sum(s.count("result") for s in settled.values())
    stats["settled_rerun"] = sum(s.count("rerun") for s in settled.values())
    return stats


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]), kills=int(sys.argv[2]))))
