"""Nothing covered is offered, popovers included: GTK 3 draws a popover inside its window
(no window of its own, so no window listing says what it covers; the tree lists it as
the window's last part, after the content). With gtk3-widget-factory's primary menu open,
what of the page lies under the popover (a list's column heads and rows) is not offered;
the popover's items are. A real app on Xvfb (gtk-3-examples, which scripts/setup.sh
installs)."""

from __future__ import annotations

import shutil

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
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
