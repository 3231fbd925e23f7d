"""GUI benchmarks: a real gui_agent step on Xvfb, phase by phase, and observe() alone.

Run by hand (`python benchmarks/bench_gui.py [--episodes N]`); results go to
docs/performance.md. The step benchmark runs the bundled demo (Tk form on a private Xvfb
screen, real XTest clicks, the scripted demo policy as the model, OCR on in its
background thread) and times each phase by wrapping the functions that do it, so the
phases' times exclude each other. CPU time (of the step's thread, phase by phase) is
reported beside wall time because the machine is shared. observe() alone is measured at
1280×800 without OCR, detecting the whole screen each time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine

import gui_harness.agent as agent_module
import gui_harness.perception.perceive as perceive_module
import gui_harness.perception.pixels._changes as _changes
from gui_harness.agent import gui_agent
from gui_harness.demo.app import demo_app
from gui_harness.demo.policy import TASK, demo_policy
from gui_harness.demo.run import check_saved_state, demo_run
from gui_harness.desktop._damage import DamageWatch
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.desktop.x11 import X11Desktop
from gui_harness.perception import ComponentMemory, OcrWorker, Perception
from gui_harness.perception.pixels._changes import Redetector
from openprogram import Runtime, ScriptedModel, Session
from openprogram.core.image import Image

# (owner, attribute, phase): what each phase of a step is, in the order printed
_PHASES: list[tuple[Any, str, str]] = [
    (X11Desktop, "screenshot", "grab (mss)"),
    (X11Desktop, "_grab", "grab (mss)"),
    (_changes, "detect_components", "detect (pixels)"),
    (Redetector, "detect", "diff / incremental region"),
    (ComponentMemory, "label", "memory match"),
    (perceive_module._Query, "result", "accessibility wait"),
    (perceive_module, "fuse", "fuse"),
    (perceive_module, "to_image", "fuse"),
    (OcrWorker, "label", "OCR (cache look-up; reads are in the background)"),
    (perceive_module, "name_toggles", "OCR (cache look-up; reads are in the background)"),
    (perceive_module, "describe", "text list"),
    (perceive_module, "draw_marks", "marks image"),
    (Image, "ref", "image hashing (once per picture)"),
    (X11Desktop, "execute", "dispatch input (XTest)"),
    (DamageWatch, "settle", "settle (DAMAGE events)"),
    (agent_module, "_learn", "memory learn (write)"),
]
_REST = "record, render, policy, scripted model (the rest)"
_CPU = "cpu: "


class _Phases:
    """Exclusive wall time per phase within each step: an inner phase's time is taken
    out of the phase around it."""

    def __init__(self) -> None:
        self.steps: list[dict[str, float]] = []
        self._current: dict[str, float] | None = None
        self._thread = 0
        self._stack: list[list[float]] = []  # per active phase: [inner wall, inner CPU]

    @contextlib.contextmanager
    def installed(self) -> Iterator[None]:
        originals = [(owner, name, getattr(owner, name)) for owner, name, _ in _PHASES]
        try:
            for (owner, name, phase), (_, _, original) in zip(_PHASES, originals, strict=True):
                setattr(owner, name, self._timed(original, phase))
            step = agent_module.gui_step
            agent_module.gui_step = self._step(step)  # type: ignore[assignment]
            yield
        finally:
            agent_module.gui_step = step  # type: ignore[assignment]
            for owner, name, original in originals:
                setattr(owner, name, original)

    def _timed(self, original: Callable[..., Any], phase: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            if self._current is None:
                return original(*args, **kwargs)
            if threading.get_ident() != self._thread:  # a helper thread's time is not the step's
                return original(*args, **kwargs)
            self._stack.append([0.0, 0.0])
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return original(*args, **kwargs)
            finally:
                elapsed = time.perf_counter() - start
                used = time.thread_time() - cpu
                inner, inner_cpu = self._stack.pop()
                if self._stack:
                    self._stack[-1][0] += elapsed
                    self._stack[-1][1] += used
                if self._current is not None:
                    self._current[phase] = self._current.get(phase, 0.0) + elapsed - inner
                    key = _CPU + phase
                    self._current[key] = self._current.get(key, 0.0) + used - inner_cpu

        # static functions stay functions on classes, methods stay methods
        return staticmethod(timed) if isinstance(original, staticmethod) else timed

    def _step(self, step: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            self._current = record = {}
            self._thread = threading.get_ident()
            wall, cpu, own = time.perf_counter(), time.process_time(), time.thread_time()
            try:
                return step(*args, **kwargs)
            finally:
                record["wall"] = time.perf_counter() - wall
                record["cpu (process)"] = time.process_time() - cpu
                record["cpu (step thread)"] = time.thread_time() - own
                self._current = None
                self.steps.append(record)

        return timed


def bench_steps(episodes: int = 3) -> None:
    phases = _Phases()
    failures = []
    # a fresh data directory: component memory starts empty, as on a first run
    with tempfile.TemporaryDirectory() as data, phases.installed():
        os.environ["OPENPROGRAM_DATA_DIR"] = data
        for _ in range(episodes):
            run = demo_run()
            problem = check_saved_state(run.state)
            if problem is not None:
                failures.append(problem)
    steps = phases.steps
    names = list(dict.fromkeys(phase for _, _, phase in _PHASES))
    for record in steps:
        record[_REST] = record["wall"] - sum(record.get(name, 0.0) for name in names)
        record[_CPU + _REST] = record["cpu (step thread)"] - sum(
            record.get(_CPU + name, 0.0) for name in names
        )
    print(f"gui_agent steps on the Xvfb demo: {len(steps)} steps in {episodes} episodes")
    print(f"  demo saved the right state in {episodes - len(failures)} of {episodes}")
    print(f"  {'phase':52} {'median':>8} {'p90':>8} {'CPU':>8}  (ms per step; CPU: step thread)")
    for name in [*names, _REST, "wall", "cpu (process)", "cpu (step thread)"]:
        values = sorted(record.get(name, 0.0) * 1000 for record in steps)
        p90 = values[min(len(values) - 1, int(0.9 * len(values)))]
        cpu = statistics.median(record.get(_CPU + name, 0.0) * 1000 for record in steps)
        shown = f"{cpu:8.2f}" if name not in ("wall", "cpu (process)", "cpu (step thread)") else ""
        print(f"  {name:52} {statistics.median(values):8.2f} {p90:8.2f} {shown}")


def bench_observe(runs: int = 50) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        memory = ComponentMemory("bench", root=Path(workdir))
        # whole detections: the same screen again would cost only a diff
        perception = Perception(memory, ocr=False, incremental=False)
        with VirtualDesktop((1280, 800), apps=[demo_app(Path(workdir) / "s.json")]) as desktop:
            first = perception.perceive(desktop.screenshot())
            for component in first.components[:8]:
                perception.remember(first, component.index, f"c{component.index}")
            grab, perceive, whole, cpu = [], [], [], []
            for _ in range(runs):
                t0, c0 = time.perf_counter(), time.process_time()
                image = desktop.screenshot()
                t1 = time.perf_counter()
                observation = perception.perceive(image)
                t2, c2 = time.perf_counter(), time.process_time()
                grab.append(t1 - t0)
                perceive.append(t2 - t1)
                whole.append(t2 - t0)
                cpu.append(c2 - c0)
    print(
        f"observe() at 1280x800, OCR off, whole detection, {len(observation.components)} "
        "components, 8 remembered:"
    )
    print(f"  capture (mss)            {_ms(grab):6.2f} ms")
    print(f"  detect + memory + text   {_ms(perceive):6.2f} ms")
    print(f"  whole                    {_ms(whole):6.2f} ms wall, {_ms(cpu):6.2f} ms CPU")


def bench_first_look(runs: int = 3) -> None:
    """The first observation of the Tk demo with OCR on (a fresh worker: nothing read yet),
    which waits, bounded, for its labels; then a second look at the same screen."""
    first, again, labelled, total = [], [], [], 0
    for _ in range(runs):
        worker = OcrWorker()
        with (
            tempfile.TemporaryDirectory() as workdir,
            VirtualDesktop(apps=[demo_app(Path(workdir) / "s.json")]) as desktop,
        ):
            perception = Perception(ocr=worker)
            image = desktop.screenshot()
            t0 = time.perf_counter()
            observation = perception.perceive(image)
            t1 = time.perf_counter()
            perception.perceive(desktop.screenshot())
            t2 = time.perf_counter()
        worker.close()
        first.append(t1 - t0)
        again.append(t2 - t1)
        readable = [c for c in observation.components if c.kind in ("button", "field", "text")]
        labelled.append(sum(c.label is not None for c in readable))
        total = len(readable)
    print(f"first look at the demo with OCR on (fresh worker, first_look=5 s), {runs} runs:")
    print(f"  first observation      {_ms(first):8.1f} ms wall (waits for its labels)")
    print(f"  the same screen again  {_ms(again):8.1f} ms wall (never waits)")
    print(
        f"  labelled on the first look: {statistics.median(labelled):.0f} of {total}"
        " buttons, fields and text lines"
    )


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
    print(f"  {_ms(per_step):6.1f} ms per step over {len(result.steps)} steps")


def _ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=3, help="demo runs (8 steps each)")
    options = parser.parse_args()
    print(machine())
    bench_steps(options.episodes)
    bench_observe()
    bench_first_look()
    bench_loop()
