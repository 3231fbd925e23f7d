"""Captions by layout, for the controls the tree links no caption to (issue 41): a real
GTK 4 form whose labels have no colon and are linked to nothing. A field and a drop-down
take the label left of them on their row (a longer one too, standing off in a column of
its own), a multi-line field the label above it; a field with a button between it and
the nearest text has no caption, nor has one whose only text is far off; and the rule,
captions.caption_of(), is the one the pixel path uses."""

from __future__ import annotations

from pathlib import Path

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from gui_harness.perception.captions import caption_of
from tests.gui_harness.perception.tree.test_desktop_accessibility import wait_for
from tests.support.toolkits import GTK4

pytestmark = GTK4

_APP = """
import gi
gi.require_version('Gtk', '4.0')
from gi.repository import Gio, Gtk

def activate(app):
    window = Gtk.ApplicationWindow(application=app, title='Form')
    window.set_default_size(640, 520)
    grid = Gtk.Grid(column_spacing=12, row_spacing=8, margin_start=16, margin_top=16)
    grid.attach(Gtk.Label(label='Full name', xalign=0), 0, 0, 1, 1)
    grid.attach(Gtk.Entry(), 1, 0, 1, 1)
    grid.attach(Gtk.Label(label='Kind', xalign=0), 0, 1, 1, 1)
    grid.attach(Gtk.DropDown.new_from_strings(['Alpha', 'Beta']), 1, 1, 1, 1)
    grid.attach(Gtk.Label(label='Notes', xalign=0), 0, 2, 2, 1)
    notes = Gtk.TextView()
    notes.set_size_request(360, 80)
    grid.attach(notes, 0, 3, 2, 1)
    row = Gtk.Box(spacing=8)
    row.append(Gtk.Label(label='Search'))
    row.append(Gtk.Button(label='Go'))
    row.append(Gtk.Entry())
    grid.attach(row, 0, 4, 2, 1)
    far = Gtk.Box(spacing=8)
    far.append(Gtk.Label(label='Delay of auto-selection in single click mode'))
    spacer = Gtk.Box()
    spacer.set_size_request(70, 1)
    far.append(spacer)
    far.append(Gtk.Entry())
    grid.attach(far, 0, 5, 2, 1)
    window.set_child(grid)
    window.present()

app = Gtk.Application(application_id='org.example.Form', flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', activate)
app.run([])
"""


def test_fields_of_a_form_take_the_caption_left_of_them_or_above_them(tmp_path: Path) -> None:
    script = tmp_path / "form.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: sum(c.kind == "field" for c in s.components) >= 4)
        finally:
            source.close()
    fields = sorted((c for c in seen.components if c.kind == "field"), key=lambda c: c.box[1])
    (kind,) = [c for c in seen.components if c.kind == "dropdown"]
    far = "Delay of auto-selection in single click mode"  # 86 px left of its field
    assert [f.caption for f in fields] == ["Full name", "Notes", None, far], seen.components
    assert fields[1].box[3] >= 60  # the multi-line one, captioned above
    assert kind.caption == "Kind" and kind.label == "Alpha"


def test_the_layout_rule_prefers_the_row_and_stops_at_a_control_or_a_long_line() -> None:
    field = (200, 100, 240, 30)
    texts = [((120, 105, 60, 20), "Email"), ((200, 74, 80, 18), "Contact")]
    assert caption_of(field, texts, []) == "Email"  # left on its row before above it
    assert caption_of(field, texts[1:], []) == "Contact"  # above, where it starts
    assert caption_of(field, texts, [(185, 104, 12, 22)]) == "Contact"  # a control between
    assert caption_of(field, [((20, 105, 50, 20), "Email")], []) is None  # too far left
    assert caption_of(field, [((40, 105, 60, 20), "Email")], []) == "Email"  # a column's
    assert caption_of(field, [((300, 74, 80, 18), "Contact")], []) is None  # not aligned
    long_line = "Fill in the form below and press Save when done"
    assert caption_of(field, [((200, 74, 300, 18), long_line)], []) is None
