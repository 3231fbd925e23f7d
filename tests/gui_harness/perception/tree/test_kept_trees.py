"""A kept tree brought up to date by a real GTK 4 app's events (AppWalk.refresh) shows
what the app now shows: an expander's child once it opens (GTK 4 says only that it
expanded), where what comes after it moved (GTK 4 does not say), the state of a
control that moved as it changed, and notebook tabs by their
labels, not the stand-in name GTK 4 gives them all (gtk4_panel.py)."""

from __future__ import annotations

from pathlib import Path

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.support.toolkits import GTK4

pytestmark = GTK4

PANEL = Path(__file__).with_name("gtk4_panel.py")


def _middle(box: tuple[int, int, int, int], dx: int | None = None) -> Click:
    x, y, w, h = box
    return Click(x=x + (w // 2 if dx is None else dx), y=y + h // 2)


def _opened(seen: AccessibilitySnapshot, above: int) -> bool:
    """Whether the expander shows its field and the toggle button is below it now."""
    expander = labelled(seen, "button", "Advanced options")
    pin = labelled(seen, "button", "Pin")
    if not (labelled(seen, "field", "Access token") and expander and pin):
        return False
    bottom = expander[0].box[1] + expander[0].box[3]
    return pin[0].box[1] >= bottom > above


def _focused(seen: AccessibilitySnapshot, label: str) -> bool:
    return any("focused" in c.states for c in labelled(seen, "button", label))


def test_a_kept_gtk4_tree_shows_what_opened_moved_and_is_named_by_its_labels():
    with VirtualDesktop((1280, 800), [App(["/usr/bin/python3", str(PANEL)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Pin")))
            # every tab is named "Tab" by GTK 4.8; its label tells them apart
            tabs = [c.label for c in seen.components if c.kind == "tab"]
            assert tabs == ["Summary", "Details", "History"]
            (expander,) = labelled(seen, "button", "Advanced options")
            (pin,) = labelled(seen, "button", "Pin")
            d.execute(_middle(expander.box, dx=20))  # on its label
            # read from the kept walk: GTK 4 says only that the expander expanded (no
            # ChildrenChanged), and not that the toggle button below it moved down
            seen = wait_for(source, lambda s: _opened(s, pin.box[1]), limit=20)
            assert _opened(seen, pin.box[1]), [(c.label, c.box) for c in seen.components]
            assert labelled(seen, "button", "Save token")
            (expander,) = labelled(seen, "button", "Advanced options")  # not "... Save token"
            assert "expanded" in expander.states
            (moved,) = labelled(seen, "button", "Pin")
            d.execute(_middle(moved.box))
            # it grows (centred: it moves) as it takes the focus: its states are read too
            seen = wait_for(source, lambda s: _focused(s, "Pinned here"), limit=20)
            assert _focused(seen, "Pinned here"), [(c.label, c.states) for c in seen.components]
        finally:
            source.close()
