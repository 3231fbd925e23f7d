"""Operations benchmark: the sandbox's round trip and how fast a queue drains (issue 33).

(a) ProcessOperations round trip for a no-op operation: submit -> running -> the child
    runs it -> done reported back (target <= 5 ms), bare (the manager alone) and tracked
    (every state change committed to a SQLite session, as tools do);
(b) 1 000 operations committed at once and drained by ProcessOperations and by
    LocalOperations, each state change committed to SQLite (target >= 500 / s);
(c) with --kills N: an agent whose tools return idempotent operations (the kill test's
    program, tests/openprogram/operations/programs.py) killed with SIGKILL at random
    moments N times and resumed until it finishes, session after session: every
    operation must end done with one recorded result, every run of its executor counted
    as an attempt before it began, and nothing lost.

A plain script, not a test: `python benchmarks/bench_operations.py [--quick] [--kills N]`.
Results go into docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openprogram import Session
from openprogram.operations import (
    LocalOperations,
    Operation,
    OperationContext,
    ProcessOperations,
    operation_kind,
)
from openprogram.operations.operation import kind_of
from openprogram.operations.tracker import tracker


@operation_kind("bench.noop", effect="idempotent")
def noop(args: dict[str, Any], context: OperationContext) -> None:
    return None


def _bare_round_trips(manager: ProcessOperations, count: int) -> list[float]:
    kind = kind_of("bench.noop", 1)
    times = []
    for _ in range(count):
        done = threading.Event()

        def report(id: str, what: str, value: Any, done: threading.Event = done) -> bool:
            if what != "running":
                done.set()
            return True

        start = time.perf_counter()
        manager.submit(Operation("bench.noop"), kind, report)
        done.wait()
        times.append(time.perf_counter() - start)
    return times


def _tracked_round_trips(manager: Any, count: int, folder: str) -> list[float]:
    times = []
    with Session(f"{folder}/rt.db") as session:
        ops = tracker(session)
        for _ in range(count):
            node = session.dag.add("code", "noop_tool", input={})
            start = time.perf_counter()
            operation = Operation("bench.noop")
            ops.commit(node, [operation], background=False)
            ops.start([operation.id], manager)
            ops.wait([operation.id])
            times.append(time.perf_counter() - start)
            session.dag.complete(node, None)
    return times


def _drain(manager: Any, count: int, folder: str, name: str) -> float:
    with Session(f"{folder}/{name}.db") as session:
        ops = tracker(session)
        node = session.dag.add("code", "many", input={})
        operations = [Operation("bench.noop") for _ in range(count)]
        ops.commit(node, operations, background=True)
        start = time.perf_counter()
        ids = [op.id for op in operations]
        ops.start(ids, manager)
        records = ops.wait(ids)
        elapsed = time.perf_counter() - start
        assert all(r.state == "done" for r in records), {r.state for r in records}
        session.dag.complete(node, None)
    return count / elapsed


def _kills(count: int, folder: str) -> dict[str, Any]:
    """Kill the program `count` times at random moments; the invariants' counts."""
    import collections
    import os
    import random
    import signal
    import subprocess

    from tests.openprogram.operations.programs import PER_ROUND

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    rounds, kills, sessions, runs, reruns, broken = 4, 0, 0, 0, 0, []
    store = f"{folder}/kills.db"
    while kills < count:
        sessions += 1
        sid, log = f"k{sessions}", Path(folder) / f"k{sessions}.log"
        while True:
            runs += 1
            argv = [sys.executable, "-m", "tests.openprogram.operations.programs", store, sid,
                    str(log), str(rounds), "idempotent"]  # fmt: skip
            child = subprocess.Popen(argv, cwd=root, env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)  # fmt: skip
            if kills < count:
                try:  # a random moment: start-up, a model turn, an executor, a commit
                    child.wait(timeout=random.uniform(0.3, 1.6))
                except subprocess.TimeoutExpired:
                    os.kill(child.pid, signal.SIGKILL)
                    child.communicate()
                    kills += 1
                    continue
            out, err = child.communicate()
            if child.returncode != 0 or out.strip() != "all done":
                broken.append(f"{sid}: exit {child.returncode}: {err[-300:]}")
            break
        session = Session.open(store, sid)
        records = session.operations()
        events = session.store.operation_events(sid)
        session.close()
        starts = collections.Counter(
            line.split()[1] for line in log.read_text().splitlines() if line.startswith("start")
        )
        if len(records) != rounds * PER_ROUND:
            broken.append(f"{sid}: {len(records)} operations")
        for record in records:
            done = sum(1 for e in events if e.operation == record.id and e.state == "done")
            name = record.args["name"]
            reruns += record.attempts - 1
            if record.state != "done" or done != 1 or starts[name] != record.attempts:
                broken.append(f"{sid} {name}: {record.state}, {done} done, "
                              f"{starts[name]} runs, {record.attempts} attempts")  # fmt: skip
    return {"kills": kills, "sessions": sessions, "runs": runs,
            "executor_runs_again_after_a_kill": reruns, "broken": broken}  # fmt: skip


def _ms(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {
        "median_ms": round(statistics.median(ordered) * 1e3, 3),
        "p90_ms": round(ordered[int(len(ordered) * 0.9)] * 1e3, 3),
        "max_ms": round(ordered[-1] * 1e3, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--kills", type=int, default=0, help="SIGKILL runs (c)")
    options = parser.parse_args()
    trips = 100 if options.quick else 500
    queued = 1000
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as folder:
        manager = ProcessOperations(sandbox="rlimits")
        try:
            _bare_round_trips(manager, 20)  # start the child, warm both sides
            results["process_round_trip_bare"] = _ms(_bare_round_trips(manager, trips))
            results["process_round_trip_tracked_sqlite"] = _ms(
                _tracked_round_trips(manager, trips, folder)
            )
            results["process_drain_1000_per_s"] = round(
                _drain(manager, queued, folder, "process"), 1
            )
        finally:
            manager.close()
        local = LocalOperations()
        try:
            results["local_drain_1000_per_s"] = round(_drain(local, queued, folder, "local"), 1)
        finally:
            local.close()
        if options.kills:
            results["kills"] = _kills(options.kills, folder)
    results["sandbox"] = manager.sandbox
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
