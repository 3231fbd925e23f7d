"""Stale aims: an element that moved after it was observed is clicked where it is now,
one changed beyond recognition is refused once (then the planner's second try goes
through), and a blinking caret or a hover tint changes nothing. The rule on drawn
pictures, then gui_agent on a real Xvfb display whose Tk form window moves between the
observation and the click."""

from __future__ import annotations

import shutil
import time
from typing import Any

import numpy as np
import pytest
import Xlib.display
from PIL import Image, ImageDraw

from gui_harness._aim import aim, area, click_point, shows_change
from gui_harness.actions import Click
from gui_harness.agent import gui_agent
from gui_harness.current import current_observation, latest_outcome
from gui_harness.demo.app import demo_app, read_state
from gui_harness.desktop.fake import Button, FakeDesktop
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, Perception
from openprogram import ModelRequest, Runtime, ScriptedModel, Session

BOX = (100, 100, 80, 30)  # a button: x, y, w, h
POINT = (140, 115)


def _screen(dx: int = 0, dy: int = 0, label: str = "Save") -> Image.Image:
    image = Image.new("RGB", (400, 300), (240, 240, 240))
    draw = ImageDraw.Draw(image)
    x, y, w, h = BOX
    draw.rectangle((x + dx, y + dy, x + dx + w, y + dy + h), fill=(200, 200, 210), outline=0)
    draw.text((x + dx + 20, y + dy + 8), label, fill=(0, 0, 0))
    draw.ellipse((20, 20, 60, 60), fill=(30, 90, 200))  # something else on the screen
    return image


def _at(
    now: Image.Image, point: tuple[int, int] = POINT, box: tuple[int, int, int, int] = BOX
) -> Image.Image:
    """The part of the screen `now` that dispatch grabs to aim at `point` in `box`."""
    return now.crop(area(point, box, now.size))


def test_an_unchanged_element_is_aimed_where_it_was() -> None:
    found = aim(_screen(), _at(_screen()), POINT, BOX)
    assert (found.shift, found.changed) == ((0, 0), False)


def test_a_caret_or_a_hover_tint_is_no_change() -> None:
    now = _screen()
    draw = ImageDraw.Draw(now)
    draw.line((135, 105, 135, 125), fill=(0, 0, 0), width=1)  # a caret
    pixels = np.asarray(now).astype(np.int16)
    pixels[101:130, 101:180] += 12  # a hover tint
    now = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    assert aim(_screen(), _at(now), POINT, BOX).shift == (0, 0)
    assert not aim(_screen(), _at(now), POINT, BOX).changed


def test_a_moved_element_is_found_and_followed() -> None:
    found = aim(_screen(), _at(_screen(dx=-30, dy=25)), POINT, BOX)
    assert (found.shift, found.changed) == ((-30, 25), False)


def test_an_element_changed_beyond_recognition_is_changed() -> None:
    found = aim(_screen(), _at(_screen(label="Quit now")), POINT, BOX)
    assert found.changed


def test_a_pattern_that_repeats_places_nothing() -> None:
    def sheet(dy: int) -> Image.Image:
        image = Image.new("RGB", (400, 300), "white")
        draw = ImageDraw.Draw(image)
        for y in range(dy % 17, 300, 17):
            draw.line((0, y, 400, y), fill=(160, 160, 160))
        for x in range(0, 400, 64):
            draw.line((x, 0, x, 300), fill=(160, 160, 160))
        return image

    found = aim(sheet(0), _at(sheet(8), (150, 150), (0, 0, 400, 300)), (150, 150), (0, 0, 400, 300))
    assert found.changed  # a blank sheet shifted: every row looks like the next


def test_a_part_of_another_size_is_changed() -> None:
    assert aim(_screen(), Image.new("RGB", (300, 300)), POINT, BOX).changed


class _RelabellingPlanner:
    """Clicks the one button after giving it a new label, `times` times in all."""

    def __init__(self, button: Button, times: int) -> None:
        self.button, self.times = button, times
        self.outcomes: list[Any] = []

    def __call__(self, request: ModelRequest) -> dict[str, Any] | str:
        if request.function == "verify_step":
            done = self.button.presses > 0
            return {"success": True, "observation": "ok", "task_complete": done}
        if request.function == "conclusion":
            return {"summary": "pressed", "task_appears_complete": True}
        self.outcomes.append(latest_outcome())
        if self.button.presses:
            return {"goal": "finish", "action": {"type": "done", "reason": "pressed"}}
        (seen,) = [c for c in current_observation().components if c.kind == "button"]
        if len(self.outcomes) <= self.times:  # the app redraws it after the observation
            self.button.label = f"Stop number {len(self.outcomes)}"
        return {"goal": "press it", "action": {"type": "click", "element": seen.index}}


@pytest.mark.parametrize("relabels", [1, 5])
def test_a_changed_element_is_refused_once_then_clicked(relabels: int) -> None:
    button = Button("go", (300, 200, 160, 48), "Go")
    desktop = FakeDesktop(widgets=[button])
    planner = _RelabellingPlanner(button, relabels)
    with Session() as session, Runtime(ScriptedModel(planner)):
        result = gui_agent("Press the button", desktop=desktop, settle_timeout=0.1)
    assert result.success and button.presses == 1
    first, second = (n.output for n in session.dag.find(name="dispatch_action"))
    assert not first["executed"] and "no longer looks as it did" in first["error"]
    assert second["executed"]  # its screen held still, or a second change in a row
    assert planner.outcomes[0] is None
    assert planner.outcomes[1]["status"] == "rejected"


# -- a real display ----------------------------------------------------------------------


def _move_window(display: str, pid: int | None, desktop: VirtualDesktop, by: int) -> None:
    """Move the demo form's window `by` pixels right and down, and wait until X has
    drawn it there (the screen holds still again)."""
    (window,) = [w for w in desktop.desktop.visible_windows() if w.pid == pid]
    connection = Xlib.display.Display(display)
    try:
        target = connection.create_resource_object("window", window.id)
        target.configure(x=window.x + by, y=window.y + by)
        connection.sync()
    finally:
        connection.close()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # the server moves it when it handles the request
        (moved,) = [w for w in desktop.desktop.visible_windows() if w.pid == pid]
        if (moved.x, moved.y) == (window.x + by, window.y + by):
            break
    assert desktop.wait_settled(timeout=5.0)


class _MovingPlanner:
    """Clicks Subscribe, moving the form's window between the observation and the
    click; then finishes."""

    def __init__(self, desktop: VirtualDesktop, pid: int | None) -> None:
        self.desktop, self.pid = desktop, pid
        self.outcomes: list[Any] = []

    def __call__(self, request: ModelRequest) -> dict[str, Any] | str:
        if request.function == "verify_step":
            return {"success": True, "observation": "ok", "task_complete": True}
        if request.function == "conclusion":
            return {"summary": "ticked", "task_appears_complete": True}
        self.outcomes.append(latest_outcome())
        if len(self.outcomes) > 1:
            return {"goal": "finish", "action": {"type": "done", "reason": "ticked"}}
        (box,) = [c for c in current_observation().components if c.kind == "checkbox"]
        assert self.desktop.display is not None
        _move_window(self.desktop.display, self.pid, self.desktop, 40)
        return {"goal": "tick Subscribe", "action": {"type": "click", "element": box.index}}


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_click_follows_a_window_that_moved_after_it_was_observed(tmp_path) -> None:
    state_path = tmp_path / "state.json"
    with VirtualDesktop((800, 600), [demo_app(state_path)], window_manager=False) as desktop:
        planner = _MovingPlanner(desktop, desktop.pids[-1])
        with Session() as session, Runtime(ScriptedModel(planner)):
            result = gui_agent("Tick Subscribe", desktop=desktop, settle_timeout=1.0)
        state = read_state(state_path)
    assert result.success
    (dispatched,) = session.dag.find(name="dispatch_action")
    assert dispatched.output["moved"] == [40, 40]
    assert state is not None and state["form"]["subscribe"] is True
    assert [c["widget"] for c in state["clicks"]] == ["subscribe"]


# -- where on an element a click acts ----------------------------------------------------


class _Seen:
    """A component as click_point reads it: kind, box and states."""

    def __init__(self, kind: str, box: tuple[int, int, int, int], states: tuple[str, ...] = ()):
        self.kind, self.box, self.states = kind, box, states


def _row(label_at: int, *, switch: bool = False) -> Image.Image:
    """A 600×40 row (a list row, a collapsed expander) at (50, 100) with its label
    `label_at` px from its left, and maybe a switch at its right end."""
    image = Image.new("RGB", (800, 400), (246, 245, 244))
    draw = ImageDraw.Draw(image)
    draw.rectangle((50, 100, 649, 139), fill=(255, 255, 255), outline=(200, 200, 200))
    draw.polygon([(50 + label_at, 114), (50 + label_at + 8, 120), (50 + label_at, 126)], fill=0)
    draw.text((50 + label_at + 14, 113), "Other options", fill=(0, 0, 0))
    if switch:
        draw.rounded_rectangle((590, 108, 636, 131), 11, fill=(53, 132, 228))
    return image


def test_a_wide_control_with_a_blank_middle_is_clicked_on_its_label() -> None:
    for switch in (False, True):
        x, y = click_point(_row(10, switch=switch), _Seen("button", (50, 100, 600, 40)))
        assert 60 <= x <= 150 and 110 <= y <= 130, (switch, x, y)  # the arrow and label


def test_a_wide_control_labelled_across_its_middle_is_clicked_in_the_middle() -> None:
    assert click_point(_row(290), _Seen("button", (50, 100, 600, 40))) == (350, 120)


def test_fields_narrow_controls_and_no_picture_keep_the_middle() -> None:
    image = _row(10)
    assert click_point(image, _Seen("field", (50, 100, 600, 40))) == (350, 120)
    assert click_point(image, _Seen("button", (50, 100, 150, 40))) == (125, 120)
    assert click_point(None, _Seen("button", (50, 100, 600, 40))) == (350, 120)


def test_a_low_slider_keeps_the_middle() -> None:
    # no line of text to aim at: the filled part of its track is no label
    image = Image.new("RGB", (800, 400), (246, 245, 244))
    draw = ImageDraw.Draw(image)
    draw.rectangle((60, 204, 640, 207), fill=(225, 225, 225))  # the track, pale
    draw.rectangle((60, 204, 200, 207), fill=(53, 132, 228))  # filled up to the knob
    draw.ellipse((200, 201, 210, 210), fill=(255, 255, 255), outline=(150, 150, 150))
    assert click_point(image, _Seen("button", (50, 200, 600, 12))) == (350, 206)


def test_an_expanded_expander_is_clicked_on_its_title_not_what_it_revealed() -> None:
    image = _row(10)
    draw = ImageDraw.Draw(image)
    for top in range(150, 330, 30):  # the check boxes it revealed, below its title
        draw.rectangle((70, top, 84, top + 14), outline=0)
        draw.text((92, top), "Match case", fill=(0, 0, 0))
    box = (50, 100, 600, 240)
    x, y = click_point(image, _Seen("button", box, ("expanded",)))
    assert 60 <= x <= 150 and 110 <= y <= 130
    assert click_point(image, _Seen("button", box)) == (350, 220)  # not expanded: the middle


def test_a_tick_shows_a_change_and_a_caret_does_not() -> None:
    before = _row(10)
    caret = before.copy()
    ImageDraw.Draw(caret).line((400, 110, 400, 130), fill=0)
    assert not shows_change(before, caret)
    ticked = before.copy()
    ImageDraw.Draw(ticked).line([(300, 120), (304, 125), (312, 113)], fill=0, width=2)
    assert shows_change(before, ticked)


def test_a_click_that_changes_nothing_is_reported_to_verify() -> None:
    button = Button("go", (300, 200, 160, 48), "Go")  # pressing it draws nothing new
    desktop = FakeDesktop(widgets=[button])
    outcomes: list[Any] = []

    def planner(request: ModelRequest) -> dict[str, Any]:
        if request.function == "verify_step":
            return {"success": True, "observation": "ok", "task_complete": True}
        if request.function == "conclusion":
            return {"summary": "pressed", "task_appears_complete": True}
        outcomes.append(latest_outcome())
        if button.presses:
            return {"goal": "finish", "action": {"type": "done", "reason": "pressed"}}
        (seen,) = [c for c in current_observation().components if c.kind == "button"]
        return {"goal": "press it", "action": {"type": "click", "element": seen.index}}

    with Session(), Runtime(ScriptedModel(planner)):
        gui_agent("Press the button", desktop=desktop, settle_timeout=0.1)
    assert button.presses == 1
    assert outcomes[1]["screen_changed"] is False


def _expander(source: AccessibilitySource) -> list[Component]:
    return [c for c in source.snapshot().components if c.label == "Expander"]


class _ExpanderPlanner:
    """Clicks the Expander element once, then finishes."""

    def __init__(self) -> None:
        self.outcomes: list[Any] = []

    def __call__(self, request: ModelRequest) -> dict[str, Any]:
        if request.function == "verify_step":
            return {"success": True, "observation": "ok", "task_complete": True}
        if request.function == "conclusion":
            return {"summary": "clicked", "task_appears_complete": True}
        self.outcomes.append(latest_outcome())
        if len(self.outcomes) > 1:
            return {"goal": "finish", "action": {"type": "done", "reason": "clicked"}}
        (seen,) = [c for c in current_observation().components if c.label == "Expander"]
        return {"goal": "fold it", "action": {"type": "click", "element": seen.index}}


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
@pytest.mark.skipif(
    shutil.which("gtk3-widget-factory") is None, reason="gtk-3-examples is not installed"
)
def test_a_click_on_an_open_gtk_expander_folds_it() -> None:
    # its box holds what it revealed: its middle is an icon of the grid inside it
    with VirtualDesktop((1280, 800), [App(["gtk3-widget-factory"])]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5.0)
        try:
            deadline = time.monotonic() + 30
            while not [c for c in source.snapshot().components if c.label == "Page 2"]:
                assert time.monotonic() < deadline, "no Page 2 in the tree"
                time.sleep(0.2)
            (page,) = [c for c in source.snapshot().components if c.label == "Page 2"]
            desktop.execute(Click(x=page.center[0], y=page.center[1]))
            while not _expander(source) or _expander(source)[0].box[3] <= 60:
                assert time.monotonic() < deadline, "the Expander did not show open"
                time.sleep(0.2)
            assert desktop.wait_settled(timeout=5.0)
            planner = _ExpanderPlanner()
            perception = Perception(ocr=False, accessibility=source)
            with Session(), Runtime(ScriptedModel(planner)):
                gui_agent(
                    "Fold the expander", desktop=desktop, perception=perception,
                    settle_timeout=2.0,
                )  # fmt: skip
            (folded,) = _expander(source)
        finally:
            source.close()
    assert folded.box[3] < 40, folded  # only its title is left
    assert planner.outcomes[1].get("screen_changed") is not False
