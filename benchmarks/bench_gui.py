"""GUI benchmarks: observe() on a real Xvfb screen, and the loop's own cost per step.

Run by hand (`python benchmarks/bench_gui.py`); results go to docs/performance.md.
observe() is measured without OCR (tesseract runs a process per label and is optional);
the loop overhead uses a FakeDesktop and a ScriptedModel, so no model time is included.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from gui_harness.agent import gui_agent
from gui_harness.demo.app import demo_app
from gui_harness.demo.policy import TASK, demo_policy
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.perception import ComponentMemory, Perception
from openprogram import Runtime, ScriptedModel, Session


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_observe(runs: int = 50) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        memory = ComponentMemory("bench", root=Path(workdir))
        perception = Perception(memory, ocr=False)
        with VirtualDesktop((1280, 800), apps=[demo_app(Path(workdir) / "s.json")]) as desktop:
            first = perception.perceive(desktop.screenshot())
            for component in first.components[:8]:
                perception.remember(first, component.index, f"c{component.index}")
            grab, detect, whole = [], [], []
            for _ in range(runs):
                t0 = time.perf_counter()
                image = desktop.screenshot()
                t1 = time.perf_counter()
                observation = perception.perceive(image)
                t2 = time.perf_counter()
                grab.append(t1 - t0)
                detect.append(t2 - t1)
                whole.append(t2 - t0)
    print(f"observe() at 1280x800, {len(observation.components)} components, 8 remembered:")
    print(f"  capture (mss)            {median_ms(grab):6.2f} ms")
    print(f"  detect + memory + text   {median_ms(detect):6.2f} ms")
    print(f"  whole                    {median_ms(whole):6.2f} ms  (target <= 30 ms)")


def bench_loop(runs: int = 5) -> None:
    per_step = []
    for _ in range(runs):
        desktop = FakeDesktop.demo_form()
        with Session(), Runtime(ScriptedModel(demo_policy)):
            t0 = time.perf_counter()
            result = gui_agent(TASK, desktop=desktop, settle_timeout=0.0)
            elapsed = time.perf_counter() - t0
        per_step.append(elapsed / len(result.steps))
    print("loop per step on FakeDesktop (model scripted, OCR on if installed, settle off):")
    print(f"  {median_ms(per_step):6.1f} ms per step over {len(result.steps)} steps")


if __name__ == "__main__":
    bench_observe()
    bench_loop()
