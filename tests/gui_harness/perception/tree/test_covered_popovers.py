"""Nothing covered is offered, popovers included: GTK 3 draws a popover inside its window
(no window of its own, so no window listing says what it covers; the tree lists it as
the window's last part, after the content). With gtk3-widget-factory's primary menu open,
what of the page lies under the popover (a list's column heads and rows) is not offered;
the popover's items are. A real app on Xvfb (gtk-3-examples, which scripts/setup.sh
installs)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.gui_harness.perception.tree.test_gtk3_tabs import _PYTHON, _has_gtk3
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(shutil.which("gtk3-widget-factory") is None, reason="needs gtk-3-examples"),
]

_ITEMS = ("Get Busy", "Inspector", "Keyboard Shortcuts", "About Widget Factory")


def test_an_open_gtk3_popover_hides_the_page_under_it() -> None:
    with VirtualDesktop((1280, 800), [App(["gtk3-widget-factory"], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Menu")))
            (menu,) = labelled(seen, "button", "Menu")
            d.execute(Click(x=menu.center[0], y=menu.center[1]))
            # until the popover has opened (it slides in: its items are read before its
            # own box is final on a busy machine) and nothing under it is offered
            seen = wait_for(source, lambda s: _open(s) and not _under(s), limit=30)
        finally:
            source.close()
    assert _open(seen), seen.components
    assert not _under(seen), _under(seen)


def _items(seen: AccessibilitySnapshot) -> list[Component]:
    return [c for name in _ITEMS for c in labelled(seen, "button", name)]


def _open(seen: AccessibilitySnapshot) -> bool:
    return len(_items(seen)) == len(_ITEMS)


def _under(seen: AccessibilitySnapshot) -> list[Component]:
    """What of the page lies under the open popover's items (none when it is not open)."""
    items = _items(seen)
    if len(items) != len(_ITEMS):
        return []
    x0 = min(c.box[0] for c in items)
    y0 = min(c.box[1] for c in items)
    x1 = max(c.box[0] + c.box[2] for c in items)
    y1 = max(c.box[1] + c.box[3] for c in items)
    return [
        c
        for c in seen.components
        if c.source == "accessibility"
        and c not in items
        and x0 <= c.center[0] < x1
        and y0 <= c.center[1] < y1
        and c.label not in ("Dark Theme", "Slide Pages")  # the popover's check boxes
    ]


# a GTK 3 popover that moves with no event but bounds-changed (not watched) when the app
# finds a file named "move" beside this script: pointed at the far end of its wide button
_MOVING = """
import os, sys
import gi
gi.require_version('Gtk', '3.0')
gi.require_version('Gdk', '3.0')
from gi.repository import GLib, Gdk, Gtk
window = Gtk.Window(title='Moving popover')
window.set_default_size(900, 500)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
anchor = Gtk.Button(label='Anchor')
anchor.set_size_request(800, 40)
box.pack_start(anchor, False, False, 20)
box.pack_start(Gtk.Entry(text='under the popover'), False, False, 0)
window.add(box)
popover = Gtk.Popover.new(anchor)
popover.set_modal(False)
items = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
for name in ('Alpha', 'Beta'):
    items.pack_start(Gtk.Button(label=name), False, False, 2)
popover.add(items)
moved = os.path.join(os.path.dirname(sys.argv[0]), 'move')
def point(x):
    where = Gdk.Rectangle()
    where.x, where.y, where.width, where.height = x, 0, 20, 40
    popover.set_pointing_to(where)
point(20)
def poll():
    if os.path.exists(moved):
        point(700)
        return False
    return True
window.connect('destroy', Gtk.main_quit)
window.show_all()
items.show_all()
popover.popup()
GLib.timeout_add(100, poll)
Gtk.main()
"""


@pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for python3")
def test_a_gtk3_popover_that_moved_unsaid_is_read_where_it_is_now(tmp_path: Path) -> None:
    """A kept tree asks a window's later parts where they are each snapshot: GTK 3 slides
    a popover into place (and moves one pointed elsewhere) telling only bounds-changed,
    so the popover and its items were kept where they were first read (the page under
    it offered, clicks on its items landing beside them)."""
    script = tmp_path / "moving.py"
    script.write_text(_MOVING)
    with VirtualDesktop((1024, 768), [App([_PYTHON, str(script)], timeout=60.0)]) as d:
        kept = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            before = wait_for(kept, lambda s: bool(labelled(s, "button", "Alpha")))
            (alpha,) = labelled(before, "button", "Alpha")
            (tmp_path / "move").touch()

            def fresh() -> AccessibilitySnapshot:
                source = AccessibilitySource(
                    d.accessibility_bus, screen=d.size, windows=d.desktop.visible_windows
                )
                try:
                    return source.snapshot()
                finally:
                    source.close()

            # the kept source and a fresh one, read one after the other, agree on where
            # Alpha is once the app pointed it 680 px further right (a fresh read alone
            # may catch the popover mid-slide, a pixel from where it comes to rest)
            deadline = time.monotonic() + 90
            while True:
                kept_at = [c.box for c in labelled(kept.snapshot(), "button", "Alpha")]
                fresh_at = [c.box for c in labelled(fresh(), "button", "Alpha")]
                moved = bool(fresh_at) and fresh_at[0][0] > alpha.box[0] + 300
                if moved and kept_at == fresh_at:
                    break
                assert time.monotonic() < deadline, (
                    f"the kept tree read Alpha at {kept_at}, a fresh one at {fresh_at} "
                    f"(first read at {alpha.box})"
                )
                time.sleep(0.2)
        finally:
            kept.close()
