"""A GTK 4 toggle button says whether it is pressed in: GTK 4.8 gives it the push
button's role and, pressed in, AT-SPI's PRESSED state (never CHECKED), which perception
reads as "checked", on a fresh read and in a kept tree alike; a plain button next to it
stays unchecked."""

from __future__ import annotations

from pathlib import Path

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.support.toolkits import GTK4

pytestmark = GTK4

_APP = """
import gi
gi.require_version('Gtk', '4.0')
from gi.repository import Gio, Gtk
def activate(app):
    window = Gtk.ApplicationWindow(application=app, title='Format')
    window.set_default_size(400, 200)
    box = Gtk.Box(spacing=12, halign=Gtk.Align.CENTER, valign=Gtk.Align.CENTER)
    box.append(Gtk.ToggleButton(label='Bold'))
    box.append(Gtk.Button(label='Apply'))
    window.set_child(box)
    window.present()
app = Gtk.Application(application_id='org.example.Toggle', flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', activate)
app.run([])
"""


def _checked(seen: AccessibilitySnapshot, label: str) -> bool:
    return any("checked" in c.states for c in labelled(seen, "button", label))


def test_a_gtk4_toggle_button_pressed_in_is_checked(tmp_path: Path) -> None:
    script = tmp_path / "toggle.py"
    script.write_text(_APP)
    with VirtualDesktop((800, 600), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Apply")))
            (bold,) = labelled(seen, "button", "Bold")
            assert not _checked(seen, "Bold")
            d.execute(Click(x=bold.center[0], y=bold.center[1]))
            seen = wait_for(source, lambda s: _checked(s, "Bold"), limit=20)
            assert _checked(seen, "Bold"), [(c.label, c.states) for c in seen.components]
            assert not _checked(seen, "Apply")
            fresh = AccessibilitySource(
                d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
            )
            try:
                assert _checked(fresh.snapshot(), "Bold")
            finally:
                fresh.close()
            d.execute(Click(x=bold.center[0], y=bold.center[1]))
            seen = wait_for(source, lambda s: not _checked(s, "Bold"), limit=20)
            assert labelled(seen, "button", "Bold") and not _checked(seen, "Bold")
        finally:
            source.close()
