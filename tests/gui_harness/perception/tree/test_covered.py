"""Nothing covered is offered: a large modal dialog opens over a GTK 4 window's toolbar
while a snapshot is taken, its window listed by the desktop only after the snapshot
listed the windows (the dialog mapped while the trees were read). The snapshot lists
the windows again, so the parent's buttons under the dialog are not offered with their
old boxes (one named like the dialog's own button, first in reading order), and the
dialog's button is where its window shows it. A real app on Xvfb."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from gui_harness.perception.tree._tree_windows import WindowLike
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.support.toolkits import GTK4

pytestmark = GTK4

_APP = """
import gi
gi.require_version('Gtk', '4.0')
from gi.repository import Gio, Gtk

def activate(app):
    window = Gtk.ApplicationWindow(application=app, title='Editor')
    window.set_default_size(700, 500)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    toolbar = Gtk.Box(spacing=6)
    for name in ('Save', 'Export', 'Open dialog'):
        toolbar.append(Gtk.Button(label=name))
    box.append(toolbar)
    box.append(Gtk.Entry())
    window.set_child(box)
    def open_dialog(_button):
        dialog = Gtk.Window(title='Save file', transient_for=window, modal=True)
        dialog.set_default_size(680, 480)
        inner = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, valign=Gtk.Align.END)
        inner.append(Gtk.Button(label='Save'))
        dialog.set_child(inner)
        dialog.present()
    toolbar.get_last_child().connect('clicked', open_dialog)
    window.present()

app = Gtk.Application(application_id='org.example.Covered', flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect('activate', activate)
app.run([])
"""


def test_a_dialog_mapped_during_a_snapshot_covers_the_parents_toolbar(tmp_path: Path) -> None:
    script = tmp_path / "covered.py"
    script.write_text(_APP)
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        late: list[Sequence[WindowLike]] = []  # a list to hand out once, as if taken early

        def windows() -> Sequence[WindowLike]:
            return late.pop() if late else d.desktop.visible_windows()

        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Open dialog")))
            before = d.desktop.visible_windows()
            (export,) = labelled(seen, "button", "Export")
            (opener,) = labelled(seen, "button", "Open dialog")
            d.execute(Click(x=opener.center[0], y=opener.center[1]))
            fresh = AccessibilitySource(
                d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
            )
            try:
                shown = wait_for(
                    fresh,
                    lambda s: len(s.windows) == 2 and bool(labelled(s, "button", "Save")),
                    limit=20,
                )
            finally:
                fresh.close()
            (dialog,) = [w for w in shown.windows if w.title == "Save file"]
            late.append(before)  # the next snapshot lists the windows as they were
            seen = source.snapshot()
            assert not labelled(seen, "button", "Export"), seen.components
            assert not labelled(seen, "button", "Open dialog"), seen.components
            (save,) = labelled(seen, "button", "Save")
            x, y = save.center
            assert (
                dialog.x <= x < dialog.x + dialog.width and dialog.y <= y < dialog.y + dialog.height
            )
            assert [w.title for w in seen.windows] == [w.title for w in shown.windows]
            assert export.box  # (the parent's button was offered before the dialog)
        finally:
            source.close()


_GTK3 = """
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk
window = Gtk.Window(title='Keypad')
window.set_default_size(420, 360)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
bar = Gtk.MenuBar()
top = Gtk.MenuItem(label='Edit')
menu = Gtk.Menu()
for n in range(9):
    menu.append(Gtk.MenuItem(label=f'Entry {n}'))
top.set_submenu(menu)
bar.append(top)
box.pack_start(bar, False, False, 0)
keys = Gtk.Grid()
for row in range(4):
    for column in range(4):
        keys.attach(Gtk.Button(label=f'K{row}{column}'), column, row, 1, 1)
box.pack_start(keys, True, True, 0)
window.add(box)
window.connect('destroy', Gtk.main_quit)
window.show_all()
Gtk.main()
"""


def _has_gtk3() -> bool:
    code = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
    return subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True).returncode == 0


@pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for /usr/bin/python3")
def test_an_open_gtk3_menu_hides_the_keys_under_it(tmp_path: Path) -> None:
    """GTK 3 reports a window's box as the frame the window manager draws (title bar
    and all): its window is matched by that frame, so what an open menu covers of it
    is cut or hidden (galculator's keypad under its Edit menu was offered whole)."""
    script = tmp_path / "keypad.py"
    script.write_text(_GTK3)
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "K33")))
            keys = {c.label: c.box for c in seen.components if (c.label or "").startswith("K")}
            (edit,) = labelled(seen, "button", "Edit")
            d.execute(Click(x=edit.center[0], y=edit.center[1]))
            seen = wait_for(
                source,
                lambda s: bool(labelled(s, "button", "Entry 8")) and len(s.windows) == 2,
                limit=20,
            )
        finally:
            source.close()
    main, menu = seen.windows  # the menu is a window of its own, on top
    assert menu.width < main.width
    under = [
        label
        for label, (x, y, w, h) in keys.items()
        if menu.x <= x and x + w <= menu.x + menu.width
        and menu.y <= y and y + h <= menu.y + menu.height
    ]  # fmt: skip
    assert under, (keys, menu)  # the menu covers some keys whole
    for label in under:
        assert not labelled(seen, "button", label), (label, seen.components)
    for label, (x, y, _, _) in keys.items():
        shown = labelled(seen, "button", label)
        if x >= menu.x + menu.width or y >= menu.y + menu.height:
            assert len(shown) == 1, (label, seen.components)  # clear of the menu: kept
        for key in shown:  # cut to what the menu leaves showing, when it is kept
            cx, cy = key.center
            assert not (menu.x <= cx < menu.x + menu.width and menu.y <= cy < menu.y + menu.height)
