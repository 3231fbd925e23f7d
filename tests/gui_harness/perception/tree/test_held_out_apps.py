"""Apps the desktop suite does not use (issue #35), read through AccessibilitySource with
the desktop's windows: a GTK 4/libadwaita editor's popover menu and Save As dialog come
whole and where they are drawn, and a Qt file manager shows no phantom over its title
and menu bars and every tab it has. The hand-made lists of each app's visible controls
(data/held_out_controls.json) are what recall is measured against."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gui_harness.actions import Click, Keypress
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Perception
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.gui_harness.perception.tree.test_qt6_states import _fresh

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
]

SCREEN = (1280, 800)
CONTROLS = json.loads((Path(__file__).parent / "data" / "held_out_controls.json").read_text())


def _recall(components, controls) -> tuple[int, int]:
    """(found, labelled right) of `controls` ([label, x, y]) among `components`."""
    found = right = 0
    for label, x, y in controls:
        hits = [c for c in components if c.box[0] <= x < c.box[0] + c.box[2]]
        hits = [c for c in hits if c.box[1] <= y < c.box[1] + c.box[3]]
        if not hits:
            continue
        found += 1
        best = min(hits, key=lambda c: c.box[2] * c.box[3])
        text = (best.label or "").replace("…", "").lower()
        right += not label or (bool(text) and (label.lower() in text or text in label.lower()))
    return found, right


@pytest.mark.skipif(shutil.which("gnome-text-editor") is None, reason="scripts/setup.sh --dev")
def test_a_gtk4_popover_menu_and_save_dialog_are_read_whole_where_they_are_drawn():
    with VirtualDesktop(SCREEN, [App(["gnome-text-editor"], timeout=60.0)]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            timeout=5.0,
            windows=desktop.desktop.visible_windows,
        )
        try:
            wait_for(source, lambda s: bool(labelled(s, "button", "Menu")))
            screens = CONTROLS["gnome-text-editor"]["screens"]
            for name, keys, sign in (
                ("main menu", ["F10"], "About Text Editor"),
                ("save as", ["ctrl", "shift", "s"], "Cancel"),
            ):
                desktop.execute(Keypress(keys=keys))
                wait_for(source, lambda s, sign=sign: bool(labelled(s, "button", sign)))
                desktop.wait_settled(timeout=5.0)
                seen = Perception(accessibility=source, ocr=False).perceive(desktop.screenshot())
                controls = screens[name]["controls"]
                found, right = _recall(seen.components, controls)
                assert found == len(controls), name
                assert right >= 0.9 * len(controls), (name, right, len(controls))
                desktop.execute(Keypress(keys=["escape"]))
                wait_for(source, lambda s, sign=sign: not labelled(s, "button", sign))
        finally:
            source.close()


@pytest.mark.skipif(shutil.which("pcmanfm-qt") is None, reason="scripts/setup.sh --dev")
def test_a_qt_file_manager_has_no_phantoms_and_every_tab_it_shows(tmp_path):
    (tmp_path / "notes.txt").write_text("x")
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    # a home of its own: nothing shared with a pcmanfm-qt another test runs meanwhile
    home = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_RUNTIME_DIR": str(runtime)}  # fmt: skip
    app = App(["pcmanfm-qt", str(tmp_path)], env=home, timeout=60.0)
    with VirtualDesktop(SCREEN, [app]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            timeout=5.0,
            windows=desktop.desktop.visible_windows,
        )
        try:
            first = wait_for(source, lambda s: bool(labelled(s, "button", "File")))
            (window,) = desktop.desktop.visible_windows()
            menu = labelled(first, "button", "File")[0]
            # nothing of a closed drop-down's list spans the title and menu bars
            assert not [
                c
                for c in first.components
                if c.box[1] < menu.box[1] + menu.box[3] and c.box[2] > window.width // 2
            ]
            assert not labelled(first, "button", "Directory Tree")
            assert labelled(first, "button", "Places")  # a tree's row head names its row
            tabs = [c for c in first.components if c.kind == "tab"]
            desktop.desktop.raise_window(window.id)  # the keys go to it, however loaded
            # a click on its current tab gives it the focus as a user would (the window
            # manager may keep an activation request waiting on a loaded machine)
            desktop.execute(Click(x=tabs[0].center[0], y=tabs[0].center[1]))
            desktop.wait_settled(timeout=5.0)

            def count(snapshot: AccessibilitySnapshot) -> int:
                return len([c for c in snapshot.components if c.kind == "tab"])

            # Qt says nothing of a new tab. A key pressed while a loaded app still settles
            # can be lost: a source that kept nothing says whether it landed (else it is
            # pressed again, at most 3 times); the kept source then has every tab
            shown = len(tabs)
            for _ in range(3):
                source.mark()
                desktop.execute(Keypress(keys=["ctrl", "t"]))
                assert source.wait_caught_up(timeout=30.0)
                shown = count(_fresh(desktop, lambda s: count(s) > len(tabs)))
                if shown > len(tabs):
                    break
            assert shown == len(tabs) + 1, (len(tabs), shown)
            after = wait_for(source, lambda s: count(s) == shown, limit=30)
            assert count(after) == shown, (shown, count(after))
            # Qt never says its drop-down is open: its options show on its popup window
            lists = labelled(first, "dropdown", "Lists")[0]
            desktop.execute(Click(x=lists.center[0], y=lists.center[1]))
            shown = wait_for(source, lambda s: bool(labelled(s, "button", "Directory Tree")))
            (option,) = labelled(shown, "button", "Directory Tree")
            popup = desktop.desktop.visible_windows()[-1]
            assert (
                popup.x <= option.box[0] and option.box[0] + option.box[2] <= popup.x + popup.width
            )
            desktop.execute(Keypress(keys=["escape"]))
            wait_for(source, lambda s: not labelled(s, "button", "Directory Tree"))
            # Qt keeps an open menu's items under its menu bar; they are drawn in a popup
            # window of their own, over the window's toolbar: on it, not cut away under it
            desktop.execute(Click(x=menu.center[0], y=menu.center[1]))
            wait_for(source, lambda s: len(desktop.desktop.visible_windows()) > 1)
            popup = desktop.desktop.visible_windows()[-1]

            def inside(snapshot: AccessibilitySnapshot) -> set[str]:
                return {
                    c.label
                    for c in snapshot.components
                    if popup.x <= c.box[0]
                    and popup.y <= c.box[1]
                    and c.box[0] + c.box[2] <= popup.x + popup.width
                    and c.box[1] + c.box[3] <= popup.y + popup.height
                }

            # a snapshot read once the popup is there (one read before it maps is not)
            labels = inside(wait_for(source, lambda s: "New Window" in inside(s)))
            assert "New Window" in labels, labels
            assert not labels & {"Go Back", "Go Up", "Reload"}, labels  # the toolbar under it
            desktop.execute(Keypress(keys=["escape"]))
        finally:
            source.close()
