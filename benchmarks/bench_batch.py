"""Batch benchmarks: MiniWoB++ oracle success, episodes per minute on 1 and 2 workers,
and a rerun of a finished batch (which must run no episode again).

Run by hand (`python benchmarks/bench_batch.py [--quick]`); results go to docs/scale.md
and docs/performance.md with the machine, the date and its load. Each episode is a real
headed Chromium on its own Xvfb, driven by gui_agent with the oracle planner.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from gui_harness.batch import run_batch, summary_table
from gui_harness.bench import ORACLE_TASKS

THROUGHPUT_TASKS = ("click-button", "click-test", "focus-text", "click-dialog", "enter-text")


def _tasks(names: tuple[str, ...], seeds: range) -> list[dict[str, object]]:
    return [
        {"id": f"{name}-{seed}", "benchmark": f"miniwob/{name}", "seed": seed}
        for name in names
        for seed in seeds
    ]


def bench_success(workdir: Path, seeds: int) -> bool:
    result = run_batch(_tasks(ORACLE_TASKS, range(seeds)), workers=2, model="oracle",
                       name="success", out=workdir / "success")  # fmt: skip
    print(summary_table(result.summary))
    rate = result.success_rate
    print(f"oracle success {rate:.1%} on {len(ORACLE_TASKS)} tasks x {seeds} seeds "
          f"(target >= 90%)")  # fmt: skip
    again = run_batch(_tasks(ORACLE_TASKS, range(seeds)), workers=2, model="oracle",
                      name="success", out=workdir / "success")  # fmt: skip
    print(f"rerun: ran {again.ran} attempts, skipped {again.skipped} (target: ran 0)")
    return rate >= 0.9 and again.ran == 0


def bench_throughput(workdir: Path, seeds: int) -> bool:
    per_minute = {}
    for workers in (1, 2):
        tasks = _tasks(THROUGHPUT_TASKS, range(seeds))
        started = time.monotonic()
        run_batch(tasks, workers=workers, model="oracle", name=f"w{workers}",
                  out=workdir / f"w{workers}")  # fmt: skip
        minutes = (time.monotonic() - started) / 60
        per_minute[workers] = len(tasks) / minutes
        load = os.getloadavg()[0]
        print(f"{workers} worker(s): {len(tasks)} episodes in {minutes * 60:.0f} s = "
              f"{per_minute[workers]:.1f} episodes/min (load {load:.1f})")  # fmt: skip
    speedup = per_minute[2] / per_minute[1]
    print(f"1 -> 2 workers: {speedup:.2f}x (target >= 1.7x)")
    return speedup >= 1.7


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="2 seeds instead of 5")
    parser.add_argument("--only", choices=("success", "throughput"))
    options = parser.parse_args(argv)
    seeds = 2 if options.quick else 5
    ok = True
    with tempfile.TemporaryDirectory(prefix="bench-batch-") as workdir:
        if options.only in (None, "success"):
            ok &= bench_success(Path(workdir), seeds)
        if options.only in (None, "throughput"):
            ok &= bench_throughput(Path(workdir), seeds)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
