"""The same classes as test_swing_pixels.py on a second toolkit, so they are shown to be
classes of pixels and not of Swing: Tk's notebook (its selected tab open at the bottom
into its page, drawn as a 3-D relief) and its two spin boxes (ttk's, arrows on the
field's white; the classic one's, in raised buttons), read from pixels and OCR alone on
Xvfb. Before, the selected tab was a text line and the other a button, the strip's
empty rest a field, and each spin box one drop-down, its arrows no target."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Component, Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader
from tests.gui_harness.perception.pixels.test_swing_pixels import Look, click_until, spin, until

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(importlib.util.find_spec("tkinter") is None, reason="no tkinter"),
]

FORM = """
import sys
import tkinter as tk
from tkinter import ttk
root = tk.Tk()
root.title("Order")
root.geometry("520x280+0+0")
notebook = ttk.Notebook(root)
general = ttk.Frame(notebook)
ttk.Label(general, text="Name:").grid(row=0, column=0, padx=8, pady=6, sticky="w")
ttk.Entry(general, width=24).grid(row=0, column=1, padx=8, pady=6, sticky="w")
ttk.Label(general, text="Copies:").grid(row=1, column=0, padx=8, pady=6, sticky="w")
value = tk.StringVar(value="2")
# the probe: each value the spin box takes, written where the test reads it
value.trace_add("write", lambda *_: open(sys.argv[1], "w").write(value.get()))
copies = ttk.Spinbox(general, from_=1, to=99, width=6, textvariable=value)
copies.grid(row=1, column=1, padx=8, pady=6, sticky="w")
tk.Label(general, text="Pages:").grid(row=2, column=0, padx=8, pady=6, sticky="w")
tk.Spinbox(general, from_=1, to=99, width=6).grid(row=2, column=1, padx=8, pady=6, sticky="w")
ttk.Button(general, text="Apply").grid(row=3, column=1, padx=8, pady=6, sticky="w")
advanced = ttk.Frame(notebook)
ttk.Label(advanced, text="Nothing here yet").pack(padx=20, pady=20)
notebook.add(general, text="General")
notebook.add(advanced, text="Advanced")
notebook.pack(fill="both", expand=True)
root.mainloop()
"""


@pytest.fixture(scope="module")
def form(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[VirtualDesktop, Look, Path]]:
    """The form on its own Xvfb screen, a fresh look at it (pixels and OCR only) and
    the file where it writes the "Copies:" spin box's value when it changes."""
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    folder = tmp_path_factory.mktemp("tk")
    script, probe = folder / "form.py", folder / "copies.txt"
    script.write_text(FORM)
    worker = OcrWorker(reader)
    try:
        app = App([sys.executable, str(script), str(probe)], timeout=60.0)
        with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:

            def look() -> list[Component]:
                desktop.wait_settled(timeout=10.0)
                seen = Perception(ocr=worker, first_look=60.0).perceive(desktop.screenshot())
                return list(seen.components)

            yield desktop, look, probe
    finally:
        worker.close()


def _probed(probe: Path) -> str | None:
    return probe.read_text() if probe.exists() else None


def _value(seen: list[Component], caption: str) -> str | None:
    fields = [c for c in seen if c.kind == "field" and c.caption == caption]
    return fields[0].label if len(fields) == 1 else None


def test_tk_spin_boxes_arrows_are_buttons_beside_their_fields(form):
    desktop, look, probe = form
    seen = until(look, lambda s: _value(s, "Copies:") == "2", limit=30.0)
    field, up, _ = spin(seen, "Copies:")
    assert field.label == "2", seen
    pages, _, _ = spin(seen, "Pages:")
    assert pages.label == "1", seen
    assert not [c for c in seen if c.kind == "dropdown"], seen
    # the value the app took, not OCR's: Tk selects the field's text after a click
    seen = click_until(desktop, look, up, lambda _: _probed(probe) == "3")
    _, _, down = spin(seen, "Copies:")
    click_until(desktop, look, down, lambda _: _probed(probe) == "2")


def test_tk_spin_boxes_arrows_are_named_up_and_down_and_captioned_as_their_field(form):
    """A planner tells the arrows apart by name, not by their order: the up one '+',
    the down one '-' (as the tree path names a spin button's parts), each captioned as
    its field (on the old code: unnamed and uncaptioned)."""
    _, look, _ = form
    seen = until(look, lambda s: _value(s, "Copies:") is not None, limit=30.0)
    for caption in ("Copies:", "Pages:"):
        _, up, down = spin(seen, caption)
        assert (up.label, down.label) == ("+", "-"), (up, down)
        assert up.caption == down.caption == caption, (up, down)


def test_a_tk_notebook_s_strip_is_two_tabs_and_each_switches_its_page(form):
    desktop, look, _ = form
    seen = until(look, lambda s: len([c for c in s if c.kind == "tab"]) >= 2, limit=30.0)
    tabs = sorted((c for c in seen if c.kind == "tab"), key=lambda c: c.box[0])
    assert [t.label for t in tabs] == ["General", "Advanced"], seen
    general, advanced = tabs
    assert general.box[0] + general.box[2] <= advanced.box[0] + 2, seen
    strip = [
        c
        for c in seen
        if c.kind != "tab"
        and c.box[1] < general.box[1] + general.box[3] - 2
        and c.box[1] + c.box[3] > general.box[1] + 2
    ]
    assert not strip, strip  # not the strip's empty rest
    seen = click_until(
        desktop, look, advanced, lambda s: any(c.label == "Nothing here yet" for c in s)
    )
    assert not [c for c in seen if c.caption == "Name:"], seen
    assert sorted(c.label for c in seen if c.kind == "tab") == ["Advanced", "General"], seen
    (general,) = [c for c in seen if c.kind == "tab" and c.label == "General"]
    click_until(desktop, look, general, lambda s: _value(s, "Copies:") is not None)
