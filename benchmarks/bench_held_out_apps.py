"""Recall of visible controls and labels right on apps the desktop suite did not use when
their lists were made (issue 35), against the hand-made lists in
tests/gui_harness/perception/tree/data/held_out_controls.json (which say which apps were
tuned on and which were held out).

Each app runs on a 1280×800 VirtualDesktop with its window manager; each screen (the
app's first, a menu or popover opened, a dialog on top) is perceived as gui_agent does:
the accessibility source with the desktop's windows, pixels, OCR when --ocr. A control
is found when a component holds its point, and labelled right when the smallest one
there carries its label or caption (either containing the other, case aside; '' takes
any).

Targets (issue 35): found >= 97% and labelled right >= 95% on every app.
A plain script, not a test: `python benchmarks/bench_held_out_apps.py [APP ...] [--ocr]
[--no-windows]`. Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from gui_harness.actions import Click, Keypress
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, Perception

LISTS = (
    Path(__file__).parent.parent / "tests/gui_harness/perception/tree/data/held_out_controls.json"
)
SCREEN = (1280, 800)


def _norm(text: str | None) -> str:
    return (text or "").casefold().replace("…", "").replace("...", "").strip()


def score(components: list[Component], controls: list[list[Any]]) -> tuple[int, int, list[str]]:
    """(found, labelled right, what went wrong) of `controls` among `components`."""
    found = right = 0
    misses: list[str] = []
    for label, x, y in controls:
        hits = [
            c
            for c in components
            if c.box[0] <= x < c.box[0] + c.box[2] and c.box[1] <= y < c.box[1] + c.box[3]
        ]
        if not hits:
            misses.append(f"missing {label!r}")
            continue
        found += 1
        best = min(hits, key=lambda c: c.box[2] * c.box[3])
        want = _norm(label)
        names = [n for n in (_norm(best.label), _norm(best.caption)) if n]
        if not want or any(want in have or have in want for have in names):
            right += 1
        else:
            misses.append(f"{label!r} labelled {best.label!r} ({best.kind}, {best.source})")
    return found, right, misses


def run_app(name: str, spec: dict[str, Any], *, ocr: bool, windows: bool) -> list[dict[str, Any]]:
    results = []
    with VirtualDesktop(SCREEN, [App(spec["argv"], timeout=60.0)]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            timeout=5.0,
            windows=desktop.desktop.visible_windows if windows else None,
        )
        perception = Perception(accessibility=source, ocr=ocr)
        time.sleep(4.0)  # the app publishes its tree a little after its window maps
        previous: list[Any] = []
        for screen, what in spec["screens"].items():
            if previous:  # close what the screen before opened
                desktop.execute(Keypress(keys=["escape"]))
                time.sleep(1.5)
            for kind, argument in what["steps"]:
                if kind == "key":
                    desktop.execute(Keypress(keys=argument.split("+")))
                else:
                    x, y = (int(v) for v in argument.split(","))
                    desktop.execute(Click(x=x, y=y))
            previous = what["steps"]
            time.sleep(2.5)
            desktop.wait_settled(timeout=5.0)
            seen = perception.perceive(desktop.screenshot())
            found, right, misses = score(list(seen.components), what["controls"])
            results.append(
                {
                    "app": name,
                    "screen": screen,
                    "held_out": spec.get("held_out", False),
                    "controls": len(what["controls"]),
                    "found": found,
                    "right": right,
                    "misses": misses,
                }
            )
        source.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("apps", nargs="*", help="apps of the lists (default: all)")
    parser.add_argument("--ocr", action="store_true", help="label pixel components by OCR")
    parser.add_argument("--no-windows", action="store_true", help="no window list")
    args = parser.parse_args()
    lists = {k: v for k, v in json.loads(LISTS.read_text()).items() if not k.startswith("_")}
    missed = False
    totals: dict[str, list[int]] = {}
    for name in args.apps or list(lists):
        for row in run_app(name, lists[name], ocr=args.ocr, windows=not args.no_windows):
            total = totals.setdefault(name, [0, 0, 0])
            for i, key in enumerate(("controls", "found", "right")):
                total[i] += row[key]
            print(
                f"{row['app']:18} {row['screen']:14} found {row['found']}/{row['controls']}"
                f"  labelled right {row['right']}/{row['controls']}  {'; '.join(row['misses'])}"
            )
    for name, (controls, found, right) in totals.items():
        kept = " (held out)" if lists[name].get("held_out") else ""
        print(f"{name}{kept}: found {found / controls:.0%}, labelled right {right / controls:.0%}")
        missed |= found < 0.97 * controls or right < 0.95 * controls
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
