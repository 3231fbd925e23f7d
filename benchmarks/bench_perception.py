"""Perception benchmarks: timing on a 1280×800 synthetic form, accuracy on MiniWoB++
and against a GTK app's accessibility tree.

Times detect_components, memory labelling of the detected components (10 remembered
entries), describe, and their sum — the per-step cost of observe() without OCR — plus
the lazy extras: set-of-marks drawing and a whole-screen memory search. Median of N runs
(default 50), wall and process CPU time.

`--miniwob` instead measures the pixel path against the DOM: recall (visible interactive
elements with a detected box at IoU >= 0.5) and precision (detected boxes at IoU >= 0.5
with some visible element or line of text) on the task sets in SETS (each was written
here before it was measured, and docs/performance.md says which were tuned on), at
several seeds, in headless Chromium; the `flight` set is FormWoB's airline sites, at
the views of miniwob_pages.FLIGHT_VIEWS instead of seeds; `--misses DIR` saves annotated pages with
misses. `--gtk` measures it against the AT-SPI tree of gtk3-widget-factory. `--kits SET`
measures recall and "clickable" on pages built from UI component kits installed from npm
(_kits.py; `held_out` was committed before it was measured, `tuning` is what detection
may be tuned on). `--webapps FRAMEWORK...` measures it on real web apps of Python web
frameworks (tests/gui_harness/perception/webapps), `--labels` there what gui_agent sees
with the tree switched off: clickable and labelled right.

A plain script, not a test: `python benchmarks/bench_perception.py [--runs N]
[--threads N] [--miniwob [--seeds 0 1 2] [--zoom 1] [--sets ...] [--misses DIR]]
[--gtk] [--calc] [--kits tuning held_out] [--webapps bottle ... [--labels]]`. Results go
into docs/performance.md by hand, with the machine and date.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cv2
from _common import machine  # benchmarks/ is on sys.path when a script runs

from gui_harness.perception import (
    ComponentMemory,
    describe,
    detect_components,
    draw_marks,
)
from gui_harness.perception._pixels import grey_array
from tests.gui_harness.perception.screens import clicks_on as _clicks
from tests.gui_harness.perception.screens import form_screen, iou
from tests.gui_harness.perception.webapps import FRAMEWORKS

DETECT_TARGET_MS = 20.0  # CPU per 1280×800 frame (issue 10); wall time depends on the load
TUNED = [
    "click-button", "click-button-sequence", "click-checkboxes", "click-checkboxes-soft",
    "click-dialog", "click-dialog-2", "click-link", "click-option", "click-tab",
    "click-tab-2", "click-test", "click-test-2", "click-widget", "enter-text",
    "enter-password", "focus-text", "focus-text-2", "login-user",
]  # fmt: skip
HELD_OUT = [
    "choose-list", "click-collapsible", "click-scroll-list", "enter-date", "enter-time",
    "guess-number", "search-engine", "social-media", "email-inbox", "use-autocomplete",
    "text-transform", "navigate-tree", "click-menu", "click-tab-2-hard",
    "login-user-popup", "multi-layouts",
]  # fmt: skip
# Drawn on 2026-11-30 at 23:05 UTC, before any of them was run through detection, after
# TUNED and HELD_OUT had both been looked at (so both are tuning sets now): tasks across
# widget kinds (fields, textareas, selects, radios, checkbox grids, spinners, sliders,
# toolbars, tables, pagination links), none a variant of a task above.
NEW_HELD_OUT = [
    "book-flight", "choose-date", "copy-paste", "form-sequence-2", "form-sequence-3",
    "identify-shape", "number-checkboxes", "phone-book", "read-table", "sign-agreement",
    "simple-algebra", "use-spinner", "text-editor", "use-slider", "find-word", "odd-or-even",
]  # fmt: skip
# Drawn on 2026-11-30 at 23:12 UTC, after NEW_HELD_OUT had been measured once (89.0 %
# recall / 79.3 % precision, the held-out figure reported in docs/performance.md) and
# before its misses were studied and fixed: NEW_HELD_OUT became a tuning set then, and
# these are the tasks measured only afterwards. None is a variant of a task above.
THIRD_HELD_OUT = [
    "buy-ticket", "daily-calendar", "form-sequence", "generate-number", "multi-orderings",
    "order-food", "resize-textarea", "scroll-text", "simple-arithmetic", "stock-market",
    "terminal", "highlight-text", "button-delay", "hot-cold", "find-greatest",
    "grid-coordinate",
]  # fmt: skip
# Drawn on 2026-11-30 at 23:52 UTC, committed before any of them was run through
# detection and measured once on the code of that commit (the "before" figure), then
# once after this round's fixes, which were made without looking at its pages; its
# misses were studied only then, so it is a tuning set from then on. Not every
# unused task has controls (drag, canvas and shape tasks have none); five are "-2" or
# "-nl" relatives of tasks above (click-collapsible-2, click-menu-2, enter-text-2,
# read-table-2, email-inbox-forward-nl), noted in docs/performance.md.
FOURTH_HELD_OUT = [
    "ascending-numbers", "bisect-angle", "click-collapsible-2", "click-menu-2",
    "click-shades", "count-shape", "count-sides", "drag-sort-numbers",
    "email-inbox-forward-nl", "enter-text-2", "read-table-2", "simon-says",
    "unicode-test", "use-colorwheel", "use-slider-2", "visual-addition",
]  # fmt: skip

# Drawn on 2026-12-01 at 04:08 UTC and committed before any of them was run through
# detection: every unused MiniWoB++ task with controls that the brief named
# (drag, draw and "-nodelay" twins of used tasks left out), plus three email-inbox and
# click-shape variants with controls. None of their pages had been looked at. Most are
# relatives of used tasks (click-checkboxes-*, click-test-transfer, copy-paste-2,
# email-inbox-*, social-media-*, choose-date-easy, click-tab-2-medium,
# enter-text-dynamic, use-autocomplete-nodelay), as no other unused task has controls.
FIFTH_HELD_OUT = [
    "click-checkboxes-large", "click-checkboxes-transfer", "click-test-transfer",
    "click-pie", "tic-tac-toe", "copy-paste-2", "email-inbox-reply",
    "email-inbox-star-reply", "email-inbox-delete", "email-inbox-forward",
    "email-inbox-important", "social-media-all", "social-media-some", "choose-date-easy",
    "click-tab-2-medium", "enter-text-dynamic", "use-autocomplete-nodelay", "click-color",
    "click-shape", "hover-shape",
]  # fmt: skip
# Drawn with FIFTH_HELD_OUT, never looked at: the FormWoB airline pages the miniwob
# wheel ships (saved copies of real mobile booking sites; Alaska-auto and
# Alaska-auto-medium serve Alaska's index.html, so Alaska stands for all three), loaded
# alone (not in the wrapper's frame) at the wrapper's 375×667 frame, one screen further
# down, and at a 1280×800 desktop viewport (see miniwob_pages.FLIGHT_VIEWS).
FLIGHT = ["AA", "Alaska"]


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


SETS = {
    "tuned": TUNED,
    "held-out": HELD_OUT,
    "new-held-out": NEW_HELD_OUT,
    "third-held-out": THIRD_HELD_OUT,
    "fourth-held-out": FOURTH_HELD_OUT,
    "fifth-held-out": FIFTH_HELD_OUT,
    "flight": FLIGHT,
}


def miniwob(seeds: list[int], zoom: float, sets: list[str], misses: Path | None) -> None:
    """Recall, precision and ms per frame of the pixel path on MiniWoB++ pages; with
    `misses`, each page with a missed element or a stray box saved there, annotated
    (green: found, red: missed element with its DOM kind, orange: stray box)."""
    from tests.gui_harness.perception.miniwob_pages import flight_pages, pages

    print(f"MiniWoB++ pixel path, seeds {seeds}, zoom {zoom}, IoU >= 0.5; {machine()}")
    print(f"{'set':12} {'task':24} {'found':>9} {'recall':>7} {'precise':>9} {'prec':>6} {'ms':>6}")
    for name in sets:
        tasks = SETS[name]
        totals = [0, 0, 0, 0]
        times: list[float] = []
        missed_kinds: dict[str, int] = {}
        for task in tasks:
            counts = [0, 0, 0, 0]  # interactive found, interactive, boxes matching, boxes
            views = (
                flight_pages([task], zoom=zoom)
                if name == "flight"
                else pages([task], seeds, zoom=zoom)
            )
            for page in views:
                start = time.perf_counter()
                found = detect_components(page.image)
                times.append(time.perf_counter() - start)
                targets: list[tuple[str, tuple[int, int, int, int]]] = []
                for kind, box in page.interactive:  # nested duplicates: a tab's li and its a
                    if all(iou(box, other) < 0.7 for _, other in targets):
                        targets.append((kind, box))
                truth = page.elements + [box for _, box in targets]
                hit = [any(iou(c.box, t) >= 0.5 for c in found) for _, t in targets]
                good = [any(iou(c.box, t) >= 0.5 for t in truth) for c in found]
                for (kind, _), ok in zip(targets, hit, strict=True):
                    if not ok:
                        missed_kinds[kind] = missed_kinds.get(kind, 0) + 1
                counts = [
                    counts[0] + sum(hit),
                    counts[1] + len(targets),
                    counts[2] + sum(good),
                    counts[3] + len(found),
                ]
                if misses is not None and not (all(hit) and all(good)):
                    _annotate(page, found, targets, hit, good, misses / name)
            totals = [a + b for a, b in zip(totals, counts, strict=True)]
            print(
                f"{name:12} {task:24} {counts[0]:4}/{counts[1]:<4} "
                f"{counts[0] / max(counts[1], 1):7.1%} {counts[2]:4}/{counts[3]:<4} "
                f"{counts[2] / max(counts[3], 1):6.1%}"
            )
        print(
            f"{name:12} {'ALL ' + str(len(tasks)) + ' tasks':24} {totals[0]:4}/{totals[1]:<4} "
            f"{totals[0] / max(totals[1], 1):7.1%} {totals[2]:4}/{totals[3]:<4} "
            f"{totals[2] / max(totals[3], 1):6.1%} {statistics.median(times) * 1000:6.2f}"
        )
        print(f"{name:12} missed by DOM kind: {missed_kinds}")


def _annotate(page, found, targets, hit, good, folder: Path) -> None:  # type: ignore[no-untyped-def]
    from PIL import ImageDraw

    scale = max(1, 640 // page.image.width)  # a 160 px task area 4×, a site 1×
    image = page.image.resize((page.image.width * scale, page.image.height * scale))
    draw = ImageDraw.Draw(image)

    def rect(box: tuple[int, int, int, int], colour: str, width: int) -> None:
        x, y, w, h = (v * scale for v in box)
        draw.rectangle((x, y, x + w - 1, y + h - 1), outline=colour, width=width)

    for component, ok in zip(found, good, strict=True):
        rect(component.box, "green" if ok else "orange", 1 if ok else 2)
    for (kind, box), ok in zip(targets, hit, strict=True):
        if not ok:
            rect(box, "red", 3)
            draw.text((box[0] * scale, box[1] * scale - 10), kind, fill="red")
    folder.mkdir(parents=True, exist_ok=True)
    image.save(folder / f"{page.task}-{page.seed}.png")


def gtk(runs: int, misses: Path | None) -> None:
    """The pixel path against AT-SPI truth on gtk3-widget-factory (1280×800): recall of
    the interactive elements the tree reports showing (IoU >= 0.5), by kind, and the
    share of detected boxes that match one (a lower bound on precision: labels, frames
    and panels are not in the truth); CPU ms per frame on that screenshot."""
    from gui_harness.desktop.virtual import VirtualDesktop
    from gui_harness.perception import AccessibilitySource

    with VirtualDesktop((1280, 800), apps=[["gtk3-widget-factory"]]) as desktop:
        if desktop.accessibility_bus is None:
            raise SystemExit(f"no accessibility bus: {desktop.accessibility_note}")
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5)
        deadline = time.monotonic() + 30
        truth = source.snapshot().components
        while len(truth) < 50 and time.monotonic() < deadline:
            time.sleep(0.2)
            truth = source.snapshot().components
        image = desktop.screenshot()
        truth = source.snapshot().components  # the same screen as the screenshot
        source.close()
    found = detect_components(image)
    by_kind: dict[str, list[int]] = {}
    for element in truth:
        hit = any(iou(c.box, element.box) >= 0.5 for c in found)
        counts = by_kind.setdefault(element.kind, [0, 0, 0])
        counts[0] += hit
        counts[1] += 1
        counts[2] += any(_clicks(c.box, element.box) for c in found)
    matching = sum(any(iou(c.box, t.box) >= 0.5 for t in truth) for c in found)
    hits = sum(v[0] for v in by_kind.values())
    _, cpu, _ = measure(lambda: detect_components(image), runs)
    if misses is not None:
        from PIL import ImageDraw

        marked = image.copy()
        draw = ImageDraw.Draw(marked)
        for c in found:
            x, y, w, h = c.box
            draw.rectangle((x, y, x + w - 1, y + h - 1), outline="green")
        for t in truth:
            if not any(iou(c.box, t.box) >= 0.5 for c in found):
                x, y, w, h = t.box
                draw.rectangle((x, y, x + w - 1, y + h - 1), outline="red", width=2)
                draw.text((x, y - 10), t.kind, fill="red")
        misses.mkdir(parents=True, exist_ok=True)
        marked.save(misses / "gtk3-widget-factory.png")
    print(f"gtk3-widget-factory, pixel path vs AT-SPI; {machine()}")
    clicks = sum(v[2] for v in by_kind.values())
    print(f"recall {hits}/{len(truth)} = {hits / max(len(truth), 1):.1%}; by kind {by_kind}")
    print(
        f"a component to click (centre inside, box mostly inside): {clicks}/{len(truth)} = "
        f"{clicks / max(len(truth), 1):.1%}"
    )
    print(
        f"boxes matching an interactive element {matching}/{len(found)} = "
        f"{matching / max(len(found), 1):.1%}; detect_components {cpu:.1f} ms CPU per frame"
    )


def kits(sets: list[str], misses: Path | None) -> None:
    """Recall (IoU >= 0.5) and "clickable" (a component whose centre lands inside the
    element and whose box is mostly inside it) of the pixel path on the UI-kit pages of
    benchmarks/kit_pages/<set> (see _kits.py), per page and per set."""
    from _kits import kit_pages

    print(f"UI-kit pages, pixel path vs the DOM, 1280x800; {machine()}")
    _clickable([(name, kit_pages(name)) for name in sets], misses)


def webapps(frameworks: list[str], misses: Path | None, *, labels: bool = False) -> None:
    """Recall and "clickable" (as kits()) on real web apps made with Python web
    frameworks (tests/gui_harness/perception/webapps; the held-out sets are named
    there), per page and per framework, with precision: the share of
    detected boxes whose centre lands on a clickable element or that match a line of the
    page's text (none: no text truth), so here the share of boxes that are on some
    clickable element. With `labels`, instead what gui_agent sees with the tree
    switched off (webapp_labels)."""
    from tests.gui_harness.perception.webapps import webapp_pages

    print(f"web apps, pixel path vs the DOM, 1280x800; {machine()}")
    if labels:
        webapp_labels([(name, webapp_pages([name])) for name in frameworks])
        return
    _clickable([(name, webapp_pages([name])) for name in frameworks], misses, precision=True)


def webapp_labels(sets) -> None:  # type: ignore[no-untyped-def]
    """Per page and framework, with the tree switched off (Perception without an
    accessibility source, OCR on, every label waited for): the share of clickable
    elements that are clickable, labelled right and named, over all of them
    (webapps.score_labels); what went wrong, one line each."""
    from gui_harness.perception import Perception
    from tests.gui_harness.perception.webapps import score_labels

    print(f"{'set':9} {'page':24} {'clickable':>15} {'labels right':>15} {'named':>15}")
    for name, pages in sets:
        totals = [0, 0, 0, 0]
        for page in pages:
            perception = Perception(ocr=True, first_look=120.0, incremental=False)
            components = perception.perceive(page.image).components
            found, right, named, wrong = score_labels(page, components)
            n = len(page.interactive)
            totals = [a + b for a, b in zip(totals, (found, right, named, n), strict=True)]
            print(
                f"{name:9} {page.task:24} {_share(found, n)} {_share(right, n)} {_share(named, n)}"
            )
            for line in wrong:
                print(f"{'':9}   {line}")
        found, right, named, n = totals
        print(f"{name:9} {'ALL':24} {_share(found, n)} {_share(right, n)} {_share(named, n)}")


def _share(part: int, whole: int) -> str:
    return f"{part:3}/{whole:<3} {part / max(whole, 1):6.1%}"


def _clickable(sets, misses: Path | None, *, precision: bool = False) -> None:  # type: ignore[no-untyped-def]
    print(f"{'set':9} {'page':30} {'recall':>13} {'clickable':>15} {'on one':>13} {'ms':>6}")
    for name, pages in sets:
        totals = [0, 0, 0, 0, 0]
        for page in pages:
            start = time.perf_counter()
            found = detect_components(page.image)
            elapsed = (time.perf_counter() - start) * 1000
            targets = [box for _, box in page.interactive]
            hit = [any(iou(c.box, t) >= 0.5 for c in found) for t in targets]
            clicks = [any(_clicks(c.box, t) for c in found) for t in targets]
            on = [c.kind != "text" and any(_clicks(c.box, t) for t in targets) for c in found]
            boxes = sum(c.kind != "text" for c in found)
            totals = [
                totals[0] + sum(hit), totals[1] + sum(clicks), totals[2] + len(targets),
                totals[3] + sum(on), totals[4] + boxes,
            ]  # fmt: skip
            n = max(len(targets), 1)
            extra = f"{sum(on):3}/{boxes:<3} {sum(on) / max(boxes, 1):6.1%} " if precision else ""
            print(
                f"{name:9} {page.task:30} {sum(hit):3}/{len(targets):<3} {sum(hit) / n:6.1%} "
                f"{sum(clicks):3}/{len(targets):<3} {sum(clicks) / n:6.1%} {extra}{elapsed:6.1f}"
            )
            if misses is not None and not all(clicks):
                page = type(page)(
                    page.task.replace("/", "_").replace(" ", "").replace("?", "_"),
                    page.seed,
                    page.image,
                    page.elements,
                    page.interactive,
                )
                _annotate(
                    page,
                    found,
                    page.interactive,
                    clicks,
                    on if precision else [True] * len(found),
                    misses / name,
                )
        n = max(totals[2], 1)
        extra = (
            f"{totals[3]:3}/{totals[4]:<3} {totals[3] / max(totals[4], 1):6.1%}"
            if precision
            else ""
        )
        print(
            f"{name:9} {'ALL':30} {totals[0]:3}/{totals[2]:<3} {totals[0] / n:6.1%} "
            f"{totals[1]:3}/{totals[2]:<3} {totals[1] / n:6.1%} {extra}"
        )


def calc(runs: int) -> None:
    """The pixel path on LibreOffice Calc (1280×800, a sheet holding 30×10 values): how
    many components, whether the sheet is one grid, and detect_components' cost."""
    import os

    from gui_harness.desktop.virtual import App, VirtualDesktop

    with tempfile.TemporaryDirectory() as root:
        sheet = Path(root) / "names.csv"
        rows = (",".join(f"{c}{r}" for c in "ABCDEFGHIJ") for r in range(1, 31))
        sheet.write_text("\n".join(rows) + "\n")
        argv = ["localc", "--norestore", "--nologo", f"-env:UserInstallation=file://{root}/p"]
        app = App([*argv, "--infilter=CSV:44,34,76,1", str(sheet)], timeout=90)
        app = App(app.argv, env={"SAL_USE_VCLPLUGIN": "gen"}, timeout=90)
        with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline:
                image = desktop.screenshot()
                if any(c.kind == "grid" for c in detect_components(image)):
                    break
                time.sleep(0.5)
            time.sleep(2)  # toolbars finish drawing after the sheet
            image = desktop.screenshot()
    found = detect_components(image)
    kinds: dict[str, int] = {}
    for c in found:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    wall, cpu, fastest = measure(lambda: detect_components(image), runs)
    print(f"LibreOffice Calc, pixels only, 1280x800; {machine()} (pid {os.getpid()})")
    print(f"{len(found)} components {kinds}")
    print(f"detect_components: {wall:.1f} ms wall, {cpu:.1f} ms CPU, fastest {fastest:.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--threads", type=int, help="OpenCV threads (default: its own choice)")
    parser.add_argument("--miniwob", action="store_true", help="accuracy on MiniWoB++ pages")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--zoom", type=float, default=1.0, help="device pixels per CSS pixel")
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(SETS))
    parser.add_argument("--misses", type=Path, help="save annotated pages with misses here")
    parser.add_argument("--gtk", action="store_true", help="pixels vs AT-SPI on a GTK app")
    parser.add_argument("--calc", action="store_true", help="pixels on LibreOffice Calc")
    parser.add_argument(
        "--kits", nargs="+", choices=["tuning", "held_out"], help="UI-kit pages (_kits.py)"
    )
    parser.add_argument(
        "--webapps",
        nargs="+",
        choices=FRAMEWORKS,
        help="real web apps of Python frameworks (webapps.TUNING tuned on, the rest held out)",
    )
    parser.add_argument(
        "--labels", action="store_true", help="--webapps: clickable and labels right, tree off"
    )
    options = parser.parse_args()
    runs = options.runs
    if options.threads is not None:
        cv2.setNumThreads(options.threads)
    if options.gtk:
        gtk(runs, options.misses)
        return
    if options.calc:
        calc(runs)
        return
    if options.kits:
        kits(options.kits, options.misses)
        return
    if options.webapps:
        webapps(options.webapps, options.misses, labels=options.labels)
        return
    if options.miniwob:
        miniwob(options.seeds, options.zoom, options.sets, options.misses)
        return

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
            f"{runs} runs; {machine()}, "
            f"OpenCV {cv2.__version__} with {cv2.getNumThreads()} threads"
        )
        print(f"{'median of runs':34} {'wall ms':>9} {'cpu ms':>9} {'min wall':>9}")
        for name, work in rows:
            count = max(5, runs // 5) if "whole screen" in name else runs
            wall, cpu, fastest = measure(work, count)
            print(f"{name:34} {wall:9.2f} {cpu:9.2f} {fastest:9.2f}")
        _, detect_cpu, _ = measure(lambda: detect_components(image), runs)
        verdict = "ok" if detect_cpu <= DETECT_TARGET_MS else "OVER"
        print(f"detection target <= {DETECT_TARGET_MS} ms CPU: {detect_cpu:.2f} ms ({verdict})")


if __name__ == "__main__":
    main()
