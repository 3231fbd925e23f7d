"""A GTK 3 notebook's tab whose label is a widget of its own (a box holding an icon and a
label: the tab has no name) is named by the text drawn in it, not by every label of its
page, which GTK 3 lists below the tab (galculator's Preferences: a tab "Display" was
named "Appearance RPN stack color: RPN stack font: ..."). A real GTK 3 window on Xvfb."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import wait_for
from tests.support.toolkits import ACCESSIBLE

_PYTHON = "/usr/bin/python3"


def _has_gtk3() -> bool:
    code = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
    return (
        shutil.which(_PYTHON) is not None and subprocess.run([_PYTHON, "-c", code]).returncode == 0
    )


pytestmark = [*ACCESSIBLE, pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for python3")]

_APP = """
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk
window = Gtk.Window(title='Preferences')
window.set_default_size(520, 360)
notebook = Gtk.Notebook()
for title, captions in (('Display', ('Font colour:', 'Stack font:')), ('Units', ('Angle:',))):
    page = Gtk.Grid(row_spacing=6, column_spacing=12)
    for row, caption in enumerate(captions):
        page.attach(Gtk.Label(label=caption), 0, row, 1, 1)
        page.attach(Gtk.Entry(), 1, row, 1, 1)
    tab = Gtk.Box(spacing=4)
    icon = Gtk.Image.new_from_icon_name('document-properties', Gtk.IconSize.MENU)
    tab.pack_start(icon, False, False, 0)
    tab.pack_start(Gtk.Label(label=title), False, False, 0)
    tab.show_all()
    notebook.append_page(page, tab)
window.add(notebook)
window.connect('destroy', Gtk.main_quit)
window.show_all()
Gtk.main()
"""


def test_a_gtk3_tab_is_named_by_its_own_text_not_its_pages(tmp_path: Path) -> None:
    script = tmp_path / "tabs.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App([_PYTHON, str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: sum(c.kind == "tab" for c in s.components) >= 2)
        finally:
            source.close()
    tabs = sorted((c for c in seen.components if c.kind == "tab"), key=lambda c: c.box[0])
    assert [t.label for t in tabs] == ["Display", "Units"], seen.components
