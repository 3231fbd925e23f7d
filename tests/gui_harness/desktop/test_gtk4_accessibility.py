"""A GTK 4 app that animates publishes its accessibility tree on a VirtualDesktop:
gtk4-widget-factory (a spinner and pulsing progress bars on its first page) registers
with the AT-SPI registry and answers a whole tree walk. With GTK 4's GL renderer on
Xvfb's software GL its main loop was never idle: it never registered (GTK 4.8 does so
from an idle callback), or each snapshot ran out of time ("did not answer")."""

from __future__ import annotations

import shutil
import time

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(
        shutil.which("gtk4-widget-factory") is None,
        reason="gtk4-widget-factory is not installed (Debian's gtk-4-examples)",
    ),
    pytest.mark.heavy_app,
]

_LIMIT_S = 20.0  # it registers within a second or two once its main loop goes idle


def _whole_tree(source: AccessibilitySource) -> AccessibilitySnapshot:
    """The first snapshot in which the app answered every call (no note), or the last."""
    deadline = time.monotonic() + _LIMIT_S
    while True:
        snapshot = source.snapshot()
        if (snapshot.apps and snapshot.note is None) or time.monotonic() > deadline:
            return snapshot
        time.sleep(0.25)


def test_an_animating_gtk4_app_registers_and_answers_a_whole_tree_walk() -> None:
    with VirtualDesktop((1280, 800), [App(["gtk4-widget-factory"])]) as desktop:
        # a busy machine may need more than the default second for 2 500 calls: what this
        # asserts is that the app answers at all, not how fast (that is benchmarks/')
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=10.0)
        try:
            snapshot = _whole_tree(source)
            again = source.snapshot()
        finally:
            source.close()
    assert snapshot.apps == 1, snapshot.note  # it joined the registry
    assert snapshot.note is None  # and answered every call in time
    found = {(c.kind, c.label) for c in snapshot.components}
    assert ("checkbox", "checkbutton") in found
    assert ("button", "togglebutton") in found
    assert ("link", "link button") in found
    assert again.note is None and len(again.components) == len(snapshot.components)
