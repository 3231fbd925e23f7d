"""Window-manager title bars as perception gives them: the title and the buttons the
window manager draws (here the openbox a VirtualDesktop starts), each once, never pixel
junk (an inactive title bar behind a dialog read as a field and three check boxes)."""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.desktop.x11 import Window
from gui_harness.perception import AccessibilitySource, Component, Observation, Perception
from gui_harness.perception.pixels._decorations import decorate

_BAR = 16  # px above a window's own box that are surely its title bar, when it has one

_FORM = """
import tkinter as tk
root = tk.Tk()
root.title("Preferences")
root.geometry("600x400+40+40")
tk.Label(root, text="Display name").pack(padx=10, pady=10, anchor="w")
tk.Entry(root, width=30).pack(padx=10, anchor="w")
tk.Button(root, text="Save").pack(pady=20)
dialog = tk.Toplevel(root)
dialog.title("New tag…")
dialog.transient(root)
dialog.geometry("260x120+200+220")
tk.Label(dialog, text="Tag name:").pack(pady=10)
tk.Button(dialog, text="OK").pack()
root.mainloop()
"""


def _bar(window: Window) -> tuple[int, int, int, int]:
    x, y, w = window.x, window.y, window.width
    return (x, y - _BAR, w, _BAR)


def _inside(component: Component, box: tuple[int, int, int, int]) -> bool:
    cx, cy = component.center
    return box[0] <= cx < box[0] + box[2] and box[1] <= cy < box[1] + box[3]


def _look(desktop: VirtualDesktop, perception: Perception) -> tuple[Observation, list[Window]]:
    """A look once both windows show and the screen holds still."""
    deadline = time.monotonic() + 30
    while True:
        desktop.wait_settled(timeout=3)
        windows = desktop.desktop.visible_windows()
        titles = {w.title for w in windows}
        if {"Preferences", "New tag…"} <= titles or time.monotonic() > deadline:
            return perception.perceive(desktop.screenshot()), windows
        time.sleep(0.2)


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
@pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon")
@pytest.mark.skipif(shutil.which("openbox") is None, reason="openbox is not installed")
def test_a_title_bar_gives_its_title_and_close_button_and_no_junk(tmp_path: Path) -> None:
    pytest.importorskip("tkinter")
    script = tmp_path / "form.py"
    script.write_text(_FORM)
    with VirtualDesktop((1024, 700), [App([sys.executable, str(script)])]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            windows=desktop.desktop.visible_windows,
        )
        try:
            seen, windows = _look(desktop, Perception(accessibility=source, ocr=False))
        finally:
            source.close()
    titled = {w.title: w for w in windows}
    assert {"Preferences", "New tag…"} <= set(titled), titled
    for title in ("Preferences", "New tag…"):  # the inactive one behind, the dialog on top
        window = titled[title]
        bar = _bar(window)
        there = [c for c in seen.components if _inside(c, bar)]
        assert all(c.label for c in there), (title, there)  # no unnamed junk
        labels = [c.label for c in there]
        assert len(labels) == len(set(labels)), (title, there)  # each part once
        assert [c.kind for c in there if c.label == title] == ["text"], (title, there)
        (close,) = [c for c in there if c.kind == "button" and c.label == "Close window"]
        assert close.center[0] > window.x + window.width * 2 // 3, (title, close)


def test_without_windows_or_frames_pixel_components_stay_as_they_are() -> None:
    grey = np.full((100, 200), 230, np.uint8)
    pixels = [Component(index=0, kind="checkbox", box=(150, 4, 12, 12))]

    class Bare:  # a window with no frame of its own: no window manager
        x, y, width, height, title, pid = 0, 0, 200, 100, "Bare", None
        frame = (0, 0, 200, 100)

    assert decorate(grey, pixels, []) == pixels
    assert decorate(grey, pixels, [Bare()]) == pixels


def test_a_drawn_title_bar_gives_its_title_and_buttons_outermost_first_bare_or_not() -> None:
    grey = np.full((140, 300), 220, np.uint8)
    grey[0, :] = grey[20, :] = 90  # the frame's top edge and the bar's lower edge
    grey[6:13, 100:140] = 40  # the title's ink
    for left in (258, 276):  # two square buttons at the right end
        grey[5:16, left : left + 11] = 60
    grey[13:15, 242:249] = 60  # and a bare glyph beside them: a minimize bar
    junk = [
        Component(index=0, kind="field", box=(90, 3, 160, 14)),
        Component(index=0, kind="checkbox", box=(276, 5, 11, 11)),
    ]
    inside = Component(index=0, kind="button", box=(20, 60, 80, 30))

    class Framed:
        x, y, width, height, title, pid = 0, 21, 300, 119, "Editor", None
        frame = (0, 0, 300, 140)

    parts = decorate(grey, [*junk, inside], [Framed()])
    assert inside in parts
    assert not any(c in parts for c in junk)
    named = {c.label: c for c in parts if c is not inside}
    assert set(named) == {"Editor", "Close window", "Maximize window", "Minimize window"}
    assert named["Editor"].kind == "text" and named["Editor"].box == (100, 6, 40, 7)
    assert named["Close window"].box == (276, 5, 11, 11) and named["Maximize window"].box[0] == 258
    assert named["Minimize window"].box == (240, 5, 11, 11)  # the button its bar is drawn in


def test_a_title_bar_under_another_window_gives_nothing_and_keeps_what_is_on_top() -> None:
    grey = np.full((140, 300), 220, np.uint8)
    grey[6:13, 100:140] = 40  # the title's ink
    grey[5:16, 276:287] = 60  # a button
    on_top = Component(index=0, kind="button", box=(100, 4, 60, 12))

    class Framed:
        x, y, width, height, title, pid = 0, 21, 300, 119, "Editor", None
        frame = (0, 0, 300, 140)

    class Popup:  # an unframed window over the whole bar (a menu)
        x, y, width, height, title, pid = 0, 0, 300, 30, "", None
        frame = (0, 0, 300, 30)

    assert decorate(grey, [on_top], [Framed(), Popup()]) == [on_top]
