"""Kept Qt trees (issue 44): how often a kept tree misses a change its app made, and what
a later look at an idle Qt app costs.

* `--race N`: N times, the PyQt6 form of tests/gui_harness/perception/tree/
  test_qt6_states.py on an 800×600 VirtualDesktop, read by an AccessibilitySource whose
  watch starts as the app starts (`--late`: 3 s after); a click on its Advanced tab (a
  source that kept nothing says it landed); per run the app's tree-change events since
  the watch started, and whether the kept source read the tab's page (a field).
* `--later APP ...` (form, pcmanfm-qt, featherpad): once the app is idle, 40 later looks
  (snapshot() of a source that kept its tree): calls, median and p90 wall.

A plain script, not a test: `python benchmarks/bench_kept_trees.py --race 10`, or
`--later form pcmanfm-qt featherpad`. Results go into docs/performance.md by hand, with
the machine and date (wall times depend on the load, which it prints).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.gui_harness.perception.tree.test_qt6_states import _FORM, _PYTHON


def _source(desktop: VirtualDesktop) -> AccessibilitySource:
    return AccessibilitySource(
        desktop.accessibility_bus,
        screen=desktop.size,
        timeout=5.0,
        windows=desktop.desktop.visible_windows,
    )


def _app(name: str, folder: Path) -> App:
    if name == "form":
        (folder / "form.py").write_text(_FORM)
        return App([_PYTHON, str(folder / "form.py")], timeout=60)
    (folder / "runtime").mkdir(mode=0o700)
    home = {
        "HOME": str(folder / "home"),
        "XDG_CONFIG_HOME": str(folder / "config"),
        "XDG_RUNTIME_DIR": str(folder / "runtime"),
    }
    return App([name, str(folder)] if name == "pcmanfm-qt" else [name], env=home, timeout=60)


def _tabs(seen: AccessibilitySnapshot) -> int:
    return sum(1 for c in seen.components if c.kind == "tab")


def race(late: bool) -> tuple[int, bool]:
    """(the app's events, whether the kept source read the page) of one run."""
    with (
        tempfile.TemporaryDirectory() as folder,
        VirtualDesktop((800, 600), [_app("form", Path(folder))]) as desktop,
    ):
        source = _source(desktop)
        try:
            if late:
                time.sleep(3)  # the app's bridge is up before the watch registers
            seen = wait_for(source, lambda s: _tabs(s) == 2)
            (app,) = source._trees  # noqa: SLF001 (the app's bus name)
            (advanced,) = labelled(seen, "tab", "Advanced")
            desktop.execute(Click(x=advanced.center[0], y=advanced.center[1]))
            fresh = _source(desktop)
            wait_for(fresh, lambda s: bool(labelled(s, "field", "Proxy host")), limit=30)
            fresh.close()
            kept = wait_for(source, lambda s: bool(labelled(s, "field", "Proxy host")), limit=10)
            watch = source._watch  # noqa: SLF001 (its per-app event counts)
            assert watch is not None
            return watch.events_from(app), bool(labelled(kept, "field", "Proxy host"))
        finally:
            source.close()


def later(name: str) -> str:
    with (
        tempfile.TemporaryDirectory() as folder,
        VirtualDesktop((1280, 800), [_app(name, Path(folder))]) as desktop,
    ):
        source = _source(desktop)
        try:
            first = wait_for(source, lambda s: len(s.components) > 3)
            time.sleep(2)  # idle
            for _ in range(5):
                source.snapshot()
            looks = [source.snapshot() for _ in range(40)]
        finally:
            source.close()
    walls = [look.elapsed_ms for look in looks]
    calls = statistics.median(look.calls for look in looks)
    return (
        f"{name}: first look {first.calls} calls; later looks {calls:.0f} calls, "
        f"{statistics.median(walls):.1f} ms median, "
        f"{statistics.quantiles(walls, n=10)[-1]:.1f} ms p90 (load {os.getloadavg()[0]:.1f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--race", type=int, default=0)
    parser.add_argument("--late", action="store_true")
    parser.add_argument("--later", nargs="*", default=[])
    args = parser.parse_args()
    print(machine())
    missed = 0
    for run in range(args.race):
        events, read = race(args.late)
        missed += not read
        print(f"run {run}: {events} events, page read: {read} (load {os.getloadavg()[0]:.1f})")
    if args.race:
        print(f"kept source missed the page in {missed} of {args.race} runs")
    for name in args.later:
        print(later(name))


if __name__ == "__main__":
    main()
