"""A control's label is the text drawn in it, whatever name the tree gives it: GTK 4.8
and libadwaita name a button from the raw mnemonic string plus the caption ("_Save
Save", "Add I_tem Add Item"), a check button or a stack switcher's tab from the raw
string alone ("_Remember me", "Page _1"); an app may name a button internally
("save_btn") while it draws "Save". A name that is its own drawn text ("file_name.txt")
or that the app gave on purpose to a glyph ("Close dialog" on "×") is kept. A real
libadwaita window and dialog on Xvfb."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.support.toolkits import GTK4

pytestmark = GTK4

_APP = """
import gi
gi.require_version('Gtk', '4.0')
gi.require_version('Adw', '1')
from gi.repository import Adw, Gio, Gtk

def activate(app):
    window = Adw.ApplicationWindow(application=app, title='Names')
    window.set_default_size(800, 560)
    outer = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    bar = Adw.HeaderBar()
    save = Gtk.Button.new_with_mnemonic('_Save')
    save.add_css_class('suggested-action')
    bar.pack_start(save)
    outer.append(bar)
    stack = Gtk.Stack()
    for i in (1, 2):
        page = Gtk.Box()
        page.append(Gtk.Button(label=f'Body {i}'))
        stack.add_titled(page, f'p{i}', f'Page _{i}').set_use_underline(True)
    outer.append(Gtk.StackSwitcher(stack=stack))
    outer.append(stack)
    row = Gtk.Box(spacing=8)
    row.append(Gtk.Button.new_with_mnemonic('Add I_tem'))
    internal = Gtk.Button(label='Apply')
    internal.update_property([Gtk.AccessibleProperty.LABEL], ['apply_btn'])
    row.append(internal)
    glyph = Gtk.Button(label='×')
    glyph.update_property([Gtk.AccessibleProperty.LABEL], ['Close dialog'])
    row.append(glyph)
    row.append(Gtk.Button(label='file_name.txt'))
    outer.append(row)
    outer.append(Gtk.CheckButton.new_with_mnemonic('_Remember me'))
    status = Adw.StatusPage(title='No files')
    create = Gtk.Button.new_with_mnemonic('_Create File')
    create.add_css_class('suggested-action')
    status.set_child(create)
    outer.append(status)
    window.set_content(outer)
    window.present()
    dialog = Gtk.Dialog(title='Pick', transient_for=window, use_header_bar=1)
    dialog.add_button('_Cancel', 1)
    dialog.add_button('_Open', 2)
    dialog.set_default_size(320, 160)
    dialog.present()

app = Adw.Application(application_id='org.example.Names', flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', activate)
app.run([])
"""


def test_controls_are_labelled_by_the_text_they_draw_not_their_mnemonic_or_internal_name(
    tmp_path: Path,
) -> None:
    script = tmp_path / "names.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "file_name.txt")))
            seen = wait_for(
                source,
                lambda s: len(s.windows) == 2 and bool(labelled(s, "checkbox", "Remember me")),
                limit=20,
            )
            labels = [(c.kind, c.label) for c in seen.components]
            expected = [
                ("button", "Save"),
                ("button", "Add Item"),
                ("button", "Apply"),
                ("button", "Close dialog"),
                ("button", "file_name.txt"),
                ("button", "Create File"),
                ("button", "Open"),
                ("button", "Cancel"),
                ("checkbox", "Remember me"),
                ("tab", "Page 1"),
                ("tab", "Page 2"),
            ]
            for kind, label in expected:
                assert (kind, label) in labels, (kind, label, labels)
            marked = [
                label for _, label in labels if label and "_" in label.replace("file_name", "")
            ]
            assert not marked, labels
        finally:
            source.close()


_GTK3_ICONS = """
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk
window = Gtk.Window(title='Icons')
window.set_default_size(500, 240)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
entry = Gtk.Entry()
entry.set_icon_from_icon_name(Gtk.EntryIconPosition.SECONDARY, 'view-refresh-symbolic')
box.pack_start(entry, False, False, 0)
store = Gtk.ListStore(str)
store.append(['emblem-default-symbolic'])
combo = Gtk.ComboBox(model=store)
icon = Gtk.CellRendererPixbuf()
combo.pack_start(icon, True)
combo.add_attribute(icon, 'icon-name', 0)
combo.set_active(0)
box.pack_start(combo, False, False, 0)
box.pack_start(Gtk.Button(label='document-save'), False, False, 0)
window.add(box)
window.connect('destroy', Gtk.main_quit)
window.show_all()
Gtk.main()
"""


def _has_gtk3() -> bool:
    code = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
    return subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True).returncode == 0


@pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for /usr/bin/python3")
def test_a_symbolic_icons_theme_name_is_read_as_its_words(tmp_path: Path) -> None:
    """GTK 3 names an entry's icon, and a drop-down that shows icons, by the theme's
    icon name ("view-refresh-symbolic"): the label is what it says ("View Refresh"); a
    button whose drawn text is hyphenated keeps it."""
    script = tmp_path / "icons.py"
    script.write_text(_GTK3_ICONS)
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "document-save")))
        finally:
            source.close()
    labels = [(c.kind, c.label) for c in seen.components]
    assert ("icon", "View Refresh") in labels, labels
    assert ("dropdown", "Emblem Default") in labels, labels
    assert not [label for _, label in labels if label and label.endswith("-symbolic")], labels


_STAND_INS = """
import gi
gi.require_version('Gtk', '4.0')
from gi.repository import Gio, Gtk

class EditorSourceView(Gtk.TextView):
    __gtype_name__ = 'EditorSourceView'

def activate(app):
    window = Gtk.ApplicationWindow(application=app, title='Stand-ins')
    window.set_default_size(600, 400)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
    nb = Gtk.Notebook()
    page = Gtk.Box(); page.append(Gtk.Button(label='Inside'))
    nb.append_page(page, Gtk.Label(label='Sunset'))
    box.append(nb)
    dd = Gtk.DropDown.new_from_strings(['(None)', 'Text files'])
    dd.set_tooltip_text('Select which types of files are shown')
    box.append(dd)
    mode = Gtk.Button(label='Basic')
    mode.update_property([Gtk.AccessibleProperty.LABEL], ['Mode selection'])
    box.append(mode)
    times = Gtk.Button(label='×')
    times.update_property([Gtk.AccessibleProperty.LABEL], ['Multiply'])
    box.append(times)
    view = EditorSourceView(); view.set_size_request(400, 120)
    box.append(view)
    window.set_child(box)
    window.present()

app = Gtk.Application(application_id='org.example.Standins', flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', activate)
app.run([])
"""


def test_stand_in_names_tooltips_and_class_names_give_way_to_what_is_drawn(
    tmp_path: Path,
) -> None:
    """GTK 4.8 names a notebook's tab "Tab" (one tab: no sibling tells it apart), a
    drop-down by its tooltip, and a widget of the app's own class by that class
    ("EditorSourceView"); an app names a button by what it does ("Mode selection",
    gnome-calculator's, showing "Basic"): the tab, the drop-down and the button are
    labelled by the words they draw, the text view has no label; a glyph button's name
    ("Multiply" on "×") stays."""
    script = tmp_path / "standins.py"
    script.write_text(_STAND_INS)
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: any(c.kind == "field" for c in s.components))
        finally:
            source.close()
    labels = [(c.kind, c.label) for c in seen.components]
    assert ("tab", "Sunset") in labels, labels
    assert ("dropdown", "(None)") in labels, labels
    assert ("field", None) in labels, labels
    assert ("button", "Basic") in labels, labels  # its name "Mode selection" is not drawn
    assert ("button", "Multiply") in labels, labels  # a glyph's name stays
