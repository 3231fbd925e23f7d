"""Effects benchmark: what the call ledger costs (issue 33).

(a) a recorded call on SQLite, plain and declared `effect="idempotent"` / `"once"`: the
    effect call's start is committed before its body runs (target: <= 2x the plain
    recorded call; the plain call unchanged, <= 40 us of CPU, bench_store.py), in one
    statement, and ("once_batched") with the waiting batch as before that; and the
    same for calls whose body takes 1 ms (I/O: a payment API is slower still), which
    are committed when they return, plain or not;
(b) with --kills N: a payment-shaped program (effects.kill_program in tests) killed with
    SIGKILL at random points N times and resumed, each interrupted once call settled as
    a person would: the counts of bodies run, unknowns and lost calls.

A plain script, not a test: `python benchmarks/bench_effects.py [--quick] [--kills 200]`.
Results go into docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

from openprogram import Session, agentic_function

LEDGER_TARGET = 2.0
"""An effect call may cost at most this many times a plain recorded call."""


@agentic_function
def plain(x: int) -> int:
    return x


@agentic_function(effect="idempotent")
def idempotent(x: int) -> int:
    return x


@agentic_function(effect="once")
def once(x: int) -> int:
    return x


def _io(x: int) -> int:
    time.sleep(0.001)  # waits like a call to a service: wall time, not CPU
    return x


slow_plain = agentic_function(_io)
slow_once = agentic_function(effect="once")(_io)


def per_call_us(
    store: Any, fn: Any, calls: int, batched: bool = False
) -> tuple[float, float, float]:
    """(wall, CPU of this thread, CPU of the process: the store's checkpoint and flush
    threads too) microseconds per recorded call of `fn`; `batched`: an
    effect call's start committed with the whole waiting batch (a BEGIN IMMEDIATE ...
    COMMIT transaction), as before the one-statement start (recorder._start_alone)."""
    from openprogram.store.recorder import Recorder

    alone = Recorder._start_alone
    if batched:
        Recorder._start_alone = lambda self, row: False  # type: ignore[method-assign]
    try:
        return _per_call_us(store, fn, calls)
    finally:
        Recorder._start_alone = alone  # type: ignore[method-assign]


def _per_call_us(store: Any, fn: Any, calls: int) -> tuple[float, float, float]:
    with Session(store):
        for i in range(min(200, calls)):
            fn(i)
        gc.collect()
        wall, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
        for i in range(calls):
            fn(i)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
        process = time.process_time() - process
    return wall / calls * 1e6, cpu / calls * 1e6, process / calls * 1e6


def bench_ledger(folder: Path, calls: int, runs: int) -> dict[str, Any]:
    found: dict[str, list[tuple[float, float, float]]] = {}
    variants = (("plain", plain, calls), ("idempotent", idempotent, calls),
                ("once", once, calls), ("once_batched", once, calls),
                ("slow_plain", slow_plain, calls // 10),
                ("slow_once", slow_once, calls // 10))  # fmt: skip
    for run in range(runs):  # the variants alternate, so a busy spell hits them alike
        for name, fn, count in variants:
            sample = per_call_us(folder / f"{name}-{run}.db", fn, count, name == "once_batched")
            found.setdefault(name, []).append(sample)
    result: dict[str, Any] = {}
    for name, samples in found.items():
        result[f"{name}_us"] = statistics.median(s[0] for s in samples)
        result[f"{name}_cpu_us"] = statistics.median(s[1] for s in samples)
        result[f"{name}_cpu_us_min"] = min(s[1] for s in samples)  # the least disturbed run
        result[f"{name}_process_cpu_us"] = statistics.median(s[2] for s in samples)
    pairs = (("idempotent", "plain"), ("once", "plain"), ("once_batched", "plain"),
             ("slow_once", "slow_plain"))  # fmt: skip
    for name, base in pairs:
        result[f"{name}_ratio_wall"] = result[f"{name}_us"] / result[f"{base}_us"]
        result[f"{name}_ratio_cpu"] = result[f"{name}_cpu_us"] / result[f"{base}_cpu_us"]
        result[f"{name}_ratio_cpu_min"] = (
            result[f"{name}_cpu_us_min"] / result[f"{base}_cpu_us_min"]
        )
        result[f"{name}_ratio_process_cpu"] = (
            result[f"{name}_process_cpu_us"] / result[f"{base}_process_cpu_us"]
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--kills", type=int, default=0)
    args = parser.parse_args()
    calls, runs = (1000, 3) if args.quick else (5000, 5)
    with tempfile.TemporaryDirectory() as tmp:
        results: dict[str, Any] = {"machine": machine()}
        results["ledger"] = bench_ledger(Path(tmp), calls, runs)
        if args.kills:
            from tests.openprogram.session import kill_effects

            started = time.perf_counter()
            results["kills"] = kill_effects.run(Path(tmp) / "kills", kills=args.kills)
            results["kills"]["seconds"] = time.perf_counter() - started
    print(json.dumps(results, indent=2))
    ledger = results["ledger"]
    worst = max(ledger["idempotent_ratio_cpu"], ledger["once_ratio_cpu"])
    best_runs = max(ledger["idempotent_ratio_cpu_min"], ledger["once_ratio_cpu_min"])
    verdict = "ok" if worst <= LEDGER_TARGET else "MISSED"
    print(
        f"ledger: an effect call costs {worst:.2f}x the CPU of a plain recorded call with an "
        f"empty body (medians; {best_runs:.2f}x between the least disturbed runs; target <= "
        f"{LEDGER_TARGET}x: {verdict}; the process's CPU: "
        f"{max(ledger['idempotent_ratio_process_cpu'], ledger['once_ratio_process_cpu']):.2f}x);"
        " its start committed with the batch, as before: "
        f"{ledger['once_batched_ratio_cpu']:.2f}x; with a 1 ms body "
        f"{ledger['slow_once_ratio_cpu']:.2f}x"
    )


if __name__ == "__main__":
    main()
