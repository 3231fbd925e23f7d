"""The fused path on real MiniWoB++ pages in a headed Chromium under Xvfb: every visible
interactive DOM element is covered by a component with the page's own label."""

from __future__ import annotations

import importlib.util
import shutil
import time
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, Perception
from tests.support.miniwob_page import DomElement, MiniWobPage, chromium_binary

pytestmark = [
    pytest.mark.x11,
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(chromium_binary() is None, reason="needs chromium (scripts/setup.sh --dev)"),
    pytest.mark.skipif(
        importlib.util.find_spec("miniwob") is None,
        reason='needs MiniWoB++ pages: pip install "openprogram[bench]"',
    ),
    pytest.mark.skipif(
        shutil.which("chromedriver") is None or shutil.which("dbus-daemon") is None,
        reason="needs chromium-driver, dbus-daemon and at-spi2-core (scripts/setup.sh --dev)",
    ),
]


def iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    ix = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    iy = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return 0.0
    inter = ix * iy
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def cover(element: DomElement, components: tuple[Component, ...]) -> Component | None:
    best = max(components, key=lambda c: iou(c.box, element.box), default=None)
    return best if best is not None and iou(best.box, element.box) >= 0.5 else None


@pytest.mark.parametrize(
    ("task", "kinds"),
    [
        ("click-checkboxes", {"checkbox", "button"}),
        ("click-tab", {"tab"}),
        ("choose-list", {"dropdown", "button"}),
        ("enter-text", {"field", "button"}),
    ],
)
def test_every_interactive_element_of_a_miniwob_page_is_a_labelled_component(task, kinds):
    page = MiniWobPage(task, seed=7)
    desktop = VirtualDesktop((800, 600), apps=[page.app])
    desktop.start()
    try:
        page.attach()
        command_line = Path(f"/proc/{desktop.pids[-1]}/cmdline").read_bytes()
        assert b"--force-renderer-accessibility" in command_line  # added by the desktop
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size)
        perception = Perception(ocr=False, accessibility=source)
        truth = page.elements()
        assert truth
        # Chromium updates its tree a moment after it repaints: look until it caught up
        deadline = time.monotonic() + 30
        while True:
            observation = perception.perceive(desktop.screenshot())
            tree = tuple(c for c in observation.components if c.source == "accessibility")
            missing = [e for e in truth if cover(e, tree) is None]
            if not missing or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        source.close()
    finally:
        page.close()
        desktop.close()
    assert observation.notes == ()
    assert not missing, (missing, observation.text)
    for element in truth:
        component = cover(element, observation.components)
        assert component is not None and component.source == "accessibility", element
        if element.label:
            assert component.label == element.label, (element, component)
    assert kinds <= {c.kind for c in observation.components if c.source == "accessibility"}
    # the instruction above the controls is no control: pixels supply it
    assert any(c.source == "pixels" and c.kind == "text" for c in observation.components)
