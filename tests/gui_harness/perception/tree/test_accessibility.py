"""The accessibility source on real apps: a GTK app through its AT-SPI tree, and the
cases that must fall back to pixels (no bus, an app without a tree, a hung app)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator

import pytest

from gui_harness.actions import Click
from gui_harness.demo.app import demo_app
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.perception import (
    AccessibilitySnapshot,
    AccessibilitySource,
    Component,
    Perception,
)

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(
        shutil.which("gtk3-widget-factory") is None or shutil.which("dbus-daemon") is None,
        reason="needs gtk-3-examples, dbus-daemon and at-spi2-core (scripts/setup.sh --dev)",
    ),
]

SCREEN = (1280, 800)


def wait_for(
    source: AccessibilitySource,
    condition: Callable[[AccessibilitySnapshot], bool],
    *,
    limit: float = 30.0,
) -> AccessibilitySnapshot:
    """Snapshots until `condition` holds: an app publishes its tree a little after its
    window maps, and updates it a little after it repaints."""
    deadline = time.monotonic() + limit
    while True:
        snapshot = source.snapshot()
        if condition(snapshot) or time.monotonic() > deadline:
            return snapshot
        time.sleep(0.1)


def named(snapshot: AccessibilitySnapshot, kind: str, label: str) -> list[Component]:
    return [c for c in snapshot.components if c.kind == kind and c.label == label]


@pytest.fixture(scope="module")
def factory() -> Iterator[tuple[VirtualDesktop, AccessibilitySource]]:
    """gtk3-widget-factory on its own desktop: its window (1356 px wide) is larger than
    the 1280×800 screen."""
    with VirtualDesktop(SCREEN, apps=[["gtk3-widget-factory"]]) as desktop:
        assert desktop.accessibility_bus is not None, desktop.accessibility_note
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=2.0)
        wait_for(source, lambda s: len(named(s, "checkbox", "checkbutton")) >= 2)
        yield desktop, source
        source.close()


def test_a_gtk_app_is_read_through_its_tree_with_roles_names_and_states(factory):
    _, source = factory
    snapshot = source.snapshot()
    assert snapshot.note is None and snapshot.apps == 1
    kinds = {c.kind for c in snapshot.components}
    assert {"button", "checkbox", "radio", "dropdown", "field"} <= kinds
    assert all(c.source == "accessibility" and c.confidence == 1.0 for c in snapshot.components)
    checkbuttons = named(snapshot, "checkbox", "checkbutton")
    # the factory shows its check buttons in every state: on, off, and both greyed out
    assert ("checked",) in [c.states for c in checkbuttons]
    assert () in [c.states for c in checkbuttons]
    assert ("checked", "disabled") in [c.states for c in checkbuttons]
    assert [c.states for c in named(snapshot, "radio", "Page 1")] == [("checked",)]


def test_boxes_are_clipped_to_a_screen_smaller_than_the_window():
    small = (800, 600)
    with VirtualDesktop(small, apps=[["gtk3-widget-factory"]]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=small, timeout=2.0)
        snapshot = wait_for(source, lambda s: len(named(s, "checkbox", "checkbutton")) >= 2)
        window = max(desktop.desktop.visible_windows(), key=lambda w: w.width)
        source.close()
    assert window.x + window.width > small[0]  # the premise: the window overflows
    assert snapshot.components
    for component in snapshot.components:
        x, y, w, h = component.box
        assert x >= 0 and y >= 0 and x + w <= small[0] and y + h <= small[1], component
    # the header bar's Close button sits past the right edge: it is showing, but not here
    assert not named(snapshot, "button", "Close")


def test_a_click_through_the_tree_box_changes_the_state_the_tree_reports(factory):
    desktop, source = factory
    unchecked = [c for c in named(source.snapshot(), "checkbox", "checkbutton") if not c.states]
    target = unchecked[0]
    desktop.execute(Click(x=target.center[0], y=target.center[1]))
    snapshot = wait_for(
        source, lambda s: any(c.box == target.box and "checked" in c.states for c in s.components)
    )
    # the click landed on it: it is ticked (and focused, when its window has the focus)
    states = [c.states for c in snapshot.components if c.box == target.box]
    assert len(states) == 1 and states[0][0] == "checked"
    assert set(states[0]) <= {"checked", "focused"}
    desktop.execute(Click(x=target.center[0], y=target.center[1]))  # leave it as it was
    wait_for(
        source,
        lambda s: any(c.box == target.box and "checked" not in c.states for c in s.components),
    )


def test_after_a_click_the_tree_has_caught_up_once_its_events_stop(factory):
    """No sleep and no polling: mark, click, wait for the app's tree events to stop,
    then one snapshot sees the new state, both ways."""
    desktop, source = factory
    target = next(
        c
        for c in named(source.snapshot(), "checkbox", "checkbutton")
        if not {"checked", "disabled"} & set(c.states)
    )
    for expected in (True, False):
        source.mark()
        desktop.execute(Click(x=target.center[0], y=target.center[1]))
        assert source.wait_caught_up(timeout=30.0)
        states = [c.states for c in source.snapshot().components if c.box == target.box]
        assert len(states) == 1 and ("checked" in states[0]) is expected, states


def test_the_fused_observation_lists_tree_components_first_hand(factory):
    desktop, source = factory
    observation = Perception(ocr=False, accessibility=source).perceive(desktop.screenshot())
    assert observation.notes == ()
    assert observation.accessibility is not None
    checked = [c for c in observation.components if c.label == "checkbutton" and c.states]
    assert checked
    for component in checked:
        x, y, w, h = component.box
        line = f'#{component.index} checkbox at ({x}, {y}, {w}x{h}) "checkbutton" ['
        assert line in observation.text
    sources = {c.source for c in observation.components}
    assert sources == {"accessibility", "pixels"}  # plain labels and pictures come from pixels
    assert [c.index for c in observation.components] == list(
        range(1, len(observation.components) + 1)
    )


def test_a_hung_app_costs_its_tree_not_the_observation(factory):
    desktop, _ = factory
    # a short timeout: a hung app costs all of it (stretched by the machine's load) twice
    source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=0.5)
    app_pid = desktop.pids[-1]
    os.killpg(app_pid, signal.SIGSTOP)
    try:
        snapshot = source.snapshot()
        observation = Perception(ocr=False, accessibility=source).perceive(desktop.screenshot())
    finally:
        os.killpg(app_pid, signal.SIGCONT)
    assert snapshot.components == () and snapshot.apps == 0
    assert snapshot.note is not None and "did not answer" in snapshot.note
    assert observation.notes and "did not answer" in observation.notes[0]
    assert observation.components and all(c.source == "pixels" for c in observation.components)
    # once it runs again the same source reads it again (late replies are discarded)
    again = wait_for(source, lambda s: s.apps == 1 and bool(s.components))
    source.close()
    assert again.note is None and named(again, "radio", "Page 1")


def test_an_app_read_with_nothing_kept_is_waited_for_while_it_answers(factory):
    """The first read of an app (or of every app once the windows changed) is waited for
    past `timeout` while the app answers: a tree read in part leaves the rest to pixels,
    which offered gui_agent a check box in the factory's list, read off its pixels, for
    the check buttons the tree had not told yet. 10 ms reads nothing of its ~700 calls."""
    desktop, _ = factory
    source = AccessibilitySource(
        desktop.accessibility_bus, screen=desktop.size, timeout=0.01, first_timeout=120.0
    )
    try:
        first = source.snapshot()
        assert first.note is None and first.apps == 1
        assert len(named(first, "checkbox", "checkbutton")) >= 2
    finally:
        source.close()


@pytest.mark.parametrize(
    ("timeout", "first_timeout"), [(0.5, 0.1), (0.0, 1.0), (-1.0, 1.0), (0.5, float("nan"))]
)
def test_timeouts_that_cannot_hold_are_refused(timeout: float, first_timeout: float) -> None:
    with pytest.raises(ValueError, match="first_timeout"):
        AccessibilitySource(None, screen=SCREEN, timeout=timeout, first_timeout=first_timeout)


def _waited(note: str | None) -> float:
    """The wait a snapshot's note says an app did not answer within, in seconds."""
    assert note is not None and "did not answer" in note, note
    found = re.search(r"within ([0-9.]+)s", note)
    assert found is not None, note
    return float(found.group(1))


def test_a_hung_app_is_waited_for_longer_once_until_it_answers(factory):
    """A hung app (stopped) gets the longer first wait once, then the plain `timeout`
    while it answers nothing: it must not cost every observation the longer wait. Once
    it answers again it is waited for again, and read whole (0.05 s never would)."""
    desktop, _ = factory
    source = AccessibilitySource(
        desktop.accessibility_bus, screen=desktop.size, timeout=0.05, first_timeout=4.0
    )
    app_pid = desktop.pids[-1]
    os.killpg(app_pid, signal.SIGSTOP)
    try:
        first, second = source.snapshot(), source.snapshot()
    finally:
        os.killpg(app_pid, signal.SIGCONT)
    try:
        assert first.apps == 0 and second.apps == 0
        # waited for a quarter of first_timeout with no answer, then 0.05 s (each
        # stretched by the load as its snapshot starts): 20× apart
        assert _waited(first.note) > 5 * _waited(second.note)
        again = wait_for(source, lambda s: s.apps == 1 and s.note is None)
        assert again.note is None and named(again, "radio", "Page 1")
    finally:
        source.close()


def test_no_bus_gives_pixels_and_a_note_saying_why():
    missing = AccessibilitySource("unix:path=/nonexistent/at-spi-bus", screen=SCREEN)
    snapshot = missing.snapshot()
    assert snapshot.components == ()
    assert snapshot.note is not None and "/nonexistent/at-spi-bus" in snapshot.note
    unknown = AccessibilitySource(None, screen=SCREEN, note="no accessibility bus: no dbus")
    assert unknown.snapshot().note == "no accessibility bus: no dbus"


def test_an_app_without_accessibility_is_seen_through_pixels(tmp_path):
    """Tk publishes no AT-SPI tree: the bus answers with no apps and pixels do the work."""
    with VirtualDesktop((800, 600), apps=[demo_app(tmp_path / "state.json")]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size)
        observation = Perception(ocr=False, accessibility=source).perceive(desktop.screenshot())
        source.close()
    assert observation.accessibility is not None
    assert observation.accessibility.components == () and observation.accessibility.apps == 0
    assert observation.notes == ()
    kinds = {c.kind for c in observation.components}
    assert {"field", "checkbox", "button"} <= kinds
    assert all(c.source == "pixels" for c in observation.components)
