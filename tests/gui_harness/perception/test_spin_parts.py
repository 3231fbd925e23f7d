"""A spin button's - and + are buttons of their own (issue 41): GTK 4's tree lists a spin
button as one field, and its - and + only show on its pixels, which part them off its
end. Perception gives them as buttons "-" and "+" captioned as the field is; clicking
them on a real GTK 4 form steps the value the app reports. An entry (no parts) gives
none."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Observation, Perception
from tests.gui_harness.perception.tree.test_desktop_accessibility import wait_for
from tests.support.toolkits import GTK4

pytestmark = GTK4

_APP = """
import sys
import gi
gi.require_version('Gtk', '4.0')
from gi.repository import Gio, Gtk
out = sys.argv[1]
def activate(app):
    window = Gtk.ApplicationWindow(application=app, title='Print')
    window.set_default_size(520, 240)
    grid = Gtk.Grid(column_spacing=12, row_spacing=10, margin_start=20, margin_top=20)
    grid.attach(Gtk.Label(label='Copies'), 0, 0, 1, 1)
    spin = Gtk.SpinButton.new_with_range(0, 20, 1)
    spin.set_value(3)
    def changed(button):
        with open(out, 'w') as f:
            f.write(str(int(button.get_value())))
    spin.connect('value-changed', changed)
    grid.attach(spin, 1, 0, 1, 1)
    grid.attach(Gtk.Label(label='Title'), 0, 1, 1, 1)
    grid.attach(Gtk.Entry(), 1, 1, 1, 1)
    window.set_child(grid)
    window.present()
app = Gtk.Application(application_id='org.example.Spin', flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', activate)
app.run([])
"""


def _until(condition: Callable[[], bool], limit: float = 30.0) -> bool:
    """Whether `condition` comes to hold within `limit` seconds (the app writes its value
    when it has taken the click)."""
    deadline = time.monotonic() + limit
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _parts(observation: Observation) -> dict[str, tuple[int, int]]:
    return {
        c.label: c.center
        for c in observation.components
        if c.kind == "button" and c.label in ("-", "+") and c.caption == "Copies"
    }


def test_a_spin_buttons_minus_and_plus_are_buttons_that_step_it(tmp_path: Path) -> None:
    script, value = tmp_path / "spin.py", tmp_path / "value"
    script.write_text(_APP)
    app = App(["/usr/bin/python3", str(script), str(value)], timeout=60.0)
    with VirtualDesktop((1024, 768), [app]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            wait_for(source, lambda s: sum(c.kind == "field" for c in s.components) >= 2)
            perception = Perception(ocr=False, accessibility=source)
            observation = perception.perceive(d.screenshot())
            parts = _parts(observation)
            assert set(parts) == {"-", "+"}, observation.text
            (spin,) = [
                c for c in observation.components if c.kind == "field" and c.caption == "Copies"
            ]
            assert all(spin.box[0] < x < spin.box[0] + spin.box[2] for x, _ in parts.values())
            assert parts["-"][0] < parts["+"][0]
            title = [
                c for c in observation.components if c.kind == "field" and c.caption == "Title"
            ]
            assert len(title) == 1
            assert [c for c in observation.components if c.label in ("-", "+")] == [
                c for c in observation.components if c.caption == "Copies" and c.kind == "button"
            ]  # none beside the entry
            d.execute(Click(x=parts["+"][0], y=parts["+"][1]))
            assert _until(lambda: value.exists() and value.read_text() == "4")
            d.execute(Click(x=parts["-"][0], y=parts["-"][1]))
            assert _until(lambda: value.read_text() == "3"), value.read_text()
        finally:
            source.close()
