"""Benchmark of a VirtualDesktop's start and close: Xvfb, the session bus, one app.

Times start() and close() (median wall time each, and the CPU time of both: this
process plus its children, which count once reaped, at close) of a 320x240
VirtualDesktop with accessibility on and one app (sleep, ready at once): what
tethering each process group to its owner costs. Run:
python benchmarks/bench_desktop_lifecycle.py [--runs N]; copy the line into
docs/performance.md under "## VirtualDesktop start and close" with the machine and date.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

from _common import machine  # benchmarks/ is on sys.path when a script runs

from gui_harness.desktop.virtual import App, VirtualDesktop


def _cpu() -> float:
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def _median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    runs = parser.parse_args().runs
    walls: dict[str, list[float]] = {"start": [], "close": []}
    cpus: dict[str, list[float]] = {"start": [], "close": []}
    for _ in range(runs):
        desktop = VirtualDesktop((320, 240), apps=[App(["sleep", "600"], ready=lambda: True)])
        for phase, step in (("start", desktop.start), ("close", desktop.close)):
            wall, cpu = time.perf_counter(), _cpu()
            step()
            walls[phase].append(time.perf_counter() - wall)
            cpus[phase].append(_cpu() - cpu)
    print(machine())
    both = [start + close for start, close in zip(cpus["start"], cpus["close"], strict=True)]
    print(
        f"start {_median_ms(walls['start'])}, close {_median_ms(walls['close'])} wall; "
        f"{_median_ms(both)} CPU for both ({runs} runs)"
    )


if __name__ == "__main__":
    main()
