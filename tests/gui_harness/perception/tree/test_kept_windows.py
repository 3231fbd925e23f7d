"""A window that comes or goes costs its own tree, not the app's: a GTK 3 app's menu
opens in a window of its own, and closes, while the main window's kept tree is read
again only where its events say it changed (AccessibilitySource keeps the trees of an
app that tells its windows; AppWalk.refresh lists its windows again). A real app on
Xvfb, its keypad of 100 buttons the part that must not be read again."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from gui_harness.actions import Click, Keypress
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for

_KEYS = 10  # a keypad of _KEYS × _KEYS buttons

_APP = f"""
import gi
gi.require_version('Gtk', '3.0')
from gi.repository import Gtk
window = Gtk.Window(title='Keypad')
window.set_default_size(700, 560)
box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
bar = Gtk.MenuBar()
top = Gtk.MenuItem(label='Edit')
menu = Gtk.Menu()
for n in range(6):
    menu.append(Gtk.MenuItem(label=f'Entry {{n}}'))
top.set_submenu(menu)
bar.append(top)
box.pack_start(bar, False, False, 0)
keys = Gtk.Grid()
for row in range({_KEYS}):
    for column in range({_KEYS}):
        keys.attach(Gtk.Button(label=f'K{{row}}{{column}}'), column, row, 1, 1)
box.pack_start(keys, True, True, 0)
window.add(box)
window.connect('destroy', Gtk.main_quit)
window.show_all()
Gtk.main()
"""


def _has_gtk3() -> bool:
    code = "import gi; gi.require_version('Gtk', '3.0'); from gi.repository import Gtk"
    return subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True).returncode == 0


def _keys(seen: AccessibilitySnapshot) -> set[str]:
    return {c.label for c in seen.components if c.kind == "button" and (c.label or "")[:1] == "K"}


def _whole(desktop: VirtualDesktop) -> AccessibilitySnapshot:
    """A read by a source that keeps nothing: every window of the app read whole."""
    fresh = AccessibilitySource(
        desktop.accessibility_bus,
        screen=desktop.size,
        timeout=30.0,
        windows=desktop.desktop.visible_windows,
    )
    try:
        return fresh.snapshot()
    finally:
        fresh.close()


def _until(
    desktop: VirtualDesktop,
    source: AccessibilitySource,
    action: Click | Keypress,
    shown: object,
) -> AccessibilitySnapshot:
    """`action` done, and done again while a busy app has not shown its effect; the
    first snapshot after the action in which `shown` holds (what the kept trees cost)."""
    deadline = time.monotonic() + 60
    while True:
        source.mark()
        desktop.execute(action)
        source.wait_caught_up(timeout=10)
        again = time.monotonic() + 15
        while time.monotonic() < min(again, deadline):
            seen = source.snapshot()
            if shown(seen):  # type: ignore[operator]
                return seen
            time.sleep(0.2)
        if time.monotonic() >= deadline:
            return seen


@pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for /usr/bin/python3")
def test_a_menu_that_opens_and_closes_costs_its_own_window_not_the_main_windows_tree(
    tmp_path: Path,
) -> None:
    script = tmp_path / "keypad.py"
    script.write_text(_APP)
    every = {f"K{row}{column}" for row in range(_KEYS) for column in range(_KEYS)}
    with VirtualDesktop((1024, 768), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: _keys(s) == every)
            wait_for(source, lambda s: s.calls <= 1, limit=30)  # settled: kept, not read
            main = _whole(d)  # the main window read whole: what must not be paid again
            assert _keys(main) == every
            (edit,) = labelled(seen, "button", "Edit")

            def opened(s: AccessibilitySnapshot) -> bool:
                return bool(labelled(s, "button", "Entry 5")) and len(s.windows) == 2

            menu = _until(d, source, Click(x=edit.center[0], y=edit.center[1]), opened)
            assert opened(menu), menu.components
            both = _whole(d)  # the menu's window and the main one, read whole
            keys = _keys(menu)
            assert keys == _keys(both) and len(keys) > _KEYS, sorted(every - keys)

            def closed(s: AccessibilitySnapshot) -> bool:
                return not labelled(s, "button", "Entry 5") and len(s.windows) == 1

            back = _until(d, source, Keypress(keys=["escape"]), closed)
            assert closed(back), back.components
            assert _keys(back) == every
        finally:
            source.close()
    # the main window's 100 buttons were kept: only the menu's window and what the
    # events named were read (~130 calls; read afresh, as before, ~440 with the roles
    # known, more than half the main window's whole read, ~540)
    assert main.calls < both.calls
    assert menu.calls < main.calls / 2, (menu.calls, main.calls, both.calls)
    assert back.calls < main.calls / 2, (back.calls, main.calls)
