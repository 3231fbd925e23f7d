"""A tree name that is not the text drawn in its box is reconciled with it (issue 41):
a GTK 3 button the app names by an identifier ("start_group", "applyButton") while it
draws "(" or "Apply" (GTK 3 lists no label inside a button, so only the pixels say
what it draws); a drop-down named by its current option's icon ("emblem-default") or
by the app ("Font Family") while it draws its current option ("Andrea", "Sans"), whose
name becomes its caption. A name that is what it draws ("report_2024", "Save",
"Radians"), and an identifier on an icon, are kept. A real GTK 3 window on Xvfb, read
by the tree and RapidOCR."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader
from tests.support.toolkits import ACCESSIBLE

_PYTHON = "/usr/bin/python3"


def _has_gtk3() -> bool:
    code = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
    return (
        shutil.which(_PYTHON) is not None
        and subprocess.run([_PYTHON, "-c", code], capture_output=True).returncode == 0
    )


pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for /usr/bin/python3"),
    pytest.mark.skipif(rapidocr_reader() is None, reason="rapidocr-onnxruntime is not installed"),
]

_APP = """
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk
window = Gtk.Window(title='Keys')
window.set_default_size(640, 260)
grid = Gtk.Grid(row_spacing=8, column_spacing=8, margin=12)
keys = (('(', 'start_group'), ('Mod', 'modulus_divide'), ('Apply', 'applyButton'),
        ('Save', 'Save'), ('report_2024', 'report_2024'))
for column, (text, name) in enumerate(keys):
    button = Gtk.Button(label=text)
    button.get_accessible().set_name(name)
    button.set_size_request(100, 40)
    grid.attach(button, column, 0, 1, 1)
icon = Gtk.Button.new_from_icon_name('view-refresh-symbolic', Gtk.IconSize.BUTTON)
icon.get_accessible().set_name('refresh_view')
grid.attach(icon, 5, 0, 1, 1)
people = Gtk.ListStore(str, str)
people.append(['emblem-default', 'Andrea'])
people.append(['emblem-important', 'Otto'])
combo = Gtk.ComboBox(model=people)
picture = Gtk.CellRendererPixbuf()
combo.pack_start(picture, False)
combo.add_attribute(picture, 'icon-name', 0)
words = Gtk.CellRendererText()
combo.pack_start(words, True)
combo.add_attribute(words, 'text', 1)
combo.set_active(0)
grid.attach(combo, 0, 1, 2, 1)
fonts = Gtk.ComboBoxText()
for font in ('Sans', 'Serif', 'Monospace'):
    fonts.append_text(font)
fonts.set_active(0)
fonts.get_accessible().set_name('Font Family')
grid.attach(fonts, 2, 1, 2, 1)
grid.attach(Gtk.Label(label='Angle:'), 0, 2, 1, 1)
angle = Gtk.ComboBoxText()
for unit in ('Degrees', 'Radians'):
    angle.append_text(unit)
angle.set_active(1)
grid.attach(angle, 1, 2, 2, 1)
window.add(grid)
window.connect('destroy', Gtk.main_quit)
window.show_all()
Gtk.main()
"""

_WANTED = {
    ("button", "(", None),
    ("button", "Mod", None),
    ("button", "Apply", None),
    ("button", "Save", None),
    ("button", "report_2024", None),
    ("button", "refresh_view", None),
    ("dropdown", "Andrea", None),
    ("dropdown", "Sans", "Font Family"),
    ("dropdown", "Radians", "Angle:"),
}


def _said(components: tuple[Component, ...]) -> set[tuple[str, str | None, str | None]]:
    return {(c.kind, c.label, c.caption) for c in components if c.source == "accessibility"}


def test_names_not_drawn_give_way_to_the_drawn_text(tmp_path: Path) -> None:
    script = tmp_path / "keys.py"
    script.write_text(_APP)
    with VirtualDesktop((800, 500), [App([_PYTHON, str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        worker = OcrWorker()
        try:
            perception = Perception(accessibility=source, ocr=worker)
            deadline = time.monotonic() + 60
            while True:  # until the app has published its tree and OCR has read it
                seen = perception.perceive(d.screenshot())
                said = _said(seen.components)
                if said >= _WANTED or time.monotonic() > deadline:
                    break
                worker.wait_idle(timeout=10)
        finally:
            worker.close()
            source.close()
    assert said >= _WANTED, (sorted(_WANTED - said, key=str), said)
    names = {label for _, label, _ in said}
    assert not names & {"start_group", "modulus_divide", "applyButton", "emblem-default"}, said
