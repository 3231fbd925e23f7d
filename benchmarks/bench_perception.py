"""Perception benchmarks on a 1280×800 synthetic settings form.

Times detect_components, memory labelling of the detected components (10 remembered
entries), describe, and their sum — the per-step cost of observe() without OCR (target:
detection <= ~10 ms on 2 cores) — plus the lazy extras: set-of-marks drawing and a
whole-screen memory search. Median of N runs (default 50), wall and process CPU time.

A plain script, not a test: `python benchmarks/bench_perception.py [--runs N]
[--threads N]`. Results go into docs/performance.md by hand, with the machine and date.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cv2

from gui_harness.perception import (
    ComponentMemory,
    describe,
    detect_components,
    draw_marks,
)
from gui_harness.perception._pixels import grey_array
from tests.gui_harness.perception.screens import form_screen

DETECT_TARGET_MS = 10.0


def measure(work: Callable[[], object], runs: int) -> tuple[float, float, float]:
    """Median wall, median process-CPU and fastest wall milliseconds of `work` over `runs`
    calls (after 3 warm-ups). On a busy machine the fastest run is the fairer number."""
    for _ in range(3):
        work()
    wall, cpu = [], []
    for _ in range(runs):
        start_wall, start_cpu = time.perf_counter(), time.process_time()
        work()
        wall.append(time.perf_counter() - start_wall)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall) * 1000, statistics.median(cpu) * 1000, min(wall) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, help="OpenCV threads (default: its own choice)")
    options = parser.parse_args()
    runs = options.runs
    if options.threads is not None:
        cv2.setNumThreads(options.threads)

    image, _ = form_screen()
    components = detect_components(image)
    with tempfile.TemporaryDirectory() as root:
        memory = ComponentMemory("bench", root, save_interval=5.0)
        controls = [c for c in components if c.kind != "text"]
        for component in (controls + components)[:10]:
            memory.remember(image, component, f"entry {component.index}")

        def step() -> str:
            grey = grey_array(image)
            found = detect_components(grey)
            return describe(memory.label(grey, found))

        rows = [
            ("detect_components (PIL RGB in)", lambda: detect_components(image)),
            ("memory.label (10 entries)", lambda: memory.label(image, components)),
            ("describe", lambda: describe(components)),
            ("detect + label + describe", step),
            ("draw_marks (lazy, on demand)", lambda: draw_marks(image, components)),
            ("memory.match, whole screen", lambda: memory.match(image)),
        ]
        print(
            f"perception on {image.width}x{image.height}, {len(components)} components, "
            f"{runs} runs; {platform.processor() or platform.machine()}, "
            f"{os.cpu_count()} CPUs, OpenCV {cv2.__version__} with {cv2.getNumThreads()} threads, "
            f"load {os.getloadavg()[0]:.2f}"
        )
        print(f"{'median of runs':34} {'wall ms':>9} {'cpu ms':>9} {'min wall':>9}")
        for name, work in rows:
            count = max(5, runs // 5) if "whole screen" in name else runs
            wall, cpu, fastest = measure(work, count)
            print(f"{name:34} {wall:9.2f} {cpu:9.2f} {fastest:9.2f}")
        detect_wall, _, _ = measure(lambda: detect_components(image), runs)
        verdict = "ok" if detect_wall <= DETECT_TARGET_MS else "OVER"
        print(f"detection target <= {DETECT_TARGET_MS} ms: {detect_wall:.2f} ms ({verdict})")


if __name__ == "__main__":
    main()
