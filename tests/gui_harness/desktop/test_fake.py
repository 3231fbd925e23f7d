"""FakeDesktop: widget behaviour, recorded actions and events, and what its screenshots show."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from gui_harness.actions import (
    Action,
    Click,
    DoubleClick,
    Drag,
    Keypress,
    Move,
    Scroll,
    Type,
    Wait,
)
from gui_harness.desktop.base import Desktop
from gui_harness.desktop.fake import Button, Checkbox, FakeDesktop, TextField
from openprogram.errors import UsageError


def centre(desktop: FakeDesktop, name: str) -> Click:
    x, y, w, h = desktop.widget(name).box
    return Click(x=x + w // 2, y=y + h // 2)


def test_fake_desktop_implements_the_desktop_protocol():
    desktop = FakeDesktop()
    assert isinstance(desktop, Desktop)
    assert desktop.size == (800, 600)
    image = desktop.screenshot()
    assert image.mode == "RGB"
    assert image.size == (800, 600)


def test_filling_the_demo_form_and_saving_records_its_state():
    desktop = FakeDesktop.demo_form()
    assert desktop.state() == {"name": "", "subscribe": False, "color": None, "save": 0}
    steps: list[Action] = [
        centre(desktop, "name"),
        Type(text="Adaa"),
        Keypress(keys=["backspace"]),
        centre(desktop, "subscribe"),
        centre(desktop, "green"),
        centre(desktop, "blue"),
        centre(desktop, "save"),
    ]
    for action in steps:
        desktop.execute(action)
    expected = {"name": "Ada", "subscribe": True, "color": "blue", "save": 1}
    assert desktop.state() == expected
    assert desktop.saved_state == expected
    assert desktop.actions == steps
    assert desktop.events == [
        ("focus", "name"),
        ("type", "name"),
        ("backspace", "name"),
        ("toggle", "subscribe"),
        ("select", "green"),
        ("press", "green"),
        ("select", "blue"),
        ("press", "blue"),
        ("press", "save"),
    ]
    save = desktop.widget("save")
    assert isinstance(save, Button)
    assert save.presses == 1


def test_typing_without_focus_changes_nothing_and_clicking_away_drops_focus():
    desktop = FakeDesktop.demo_form()
    desktop.execute(Type(text="lost"))
    desktop.execute(centre(desktop, "name"))
    desktop.execute(Click(x=700, y=500))
    desktop.execute(Type(text="also lost"))
    assert desktop.state()["name"] == ""
    assert desktop.focus is None


def test_checkbox_label_is_clickable_and_double_click_toggles_twice():
    desktop = FakeDesktop.demo_form()
    x, y, w, h = desktop.widget("subscribe").box
    desktop.execute(Click(x=x + w + 20, y=y + h // 2))
    assert desktop.state()["subscribe"] is True
    desktop.execute(DoubleClick(x=x + 5, y=y + 5))
    assert desktop.state()["subscribe"] is True


def test_right_click_move_scroll_drag_and_wait_only_move_the_pointer():
    desktop = FakeDesktop.demo_form()
    save = centre(desktop, "save")
    desktop.execute(Click(x=save.x, y=save.y, button="right"))
    desktop.execute(Move(x=5, y=6))
    desktop.execute(Scroll(x=7, y=8, scroll_y=3))
    desktop.execute(Scroll(scroll_y=-1))
    assert desktop.pointer == (7, 8)
    desktop.execute(Drag(path=[(1, 1), (20, 30)]))
    desktop.execute(Wait(ms=10))
    assert desktop.pointer == (20, 30)
    assert desktop.events == []
    assert len(desktop.actions) == 6


def test_on_action_hook_sees_every_action_after_it_ran():
    seen = []
    desktop = FakeDesktop.demo_form()
    desktop.on_action = lambda d, action: seen.append((action, d.state()["subscribe"]))
    tick = centre(desktop, "subscribe")
    desktop.execute(tick)
    assert seen == [(tick, True)]


def test_unresolved_elements_and_duplicate_names_are_usage_errors():
    desktop = FakeDesktop.demo_form()
    with pytest.raises(UsageError, match="resolve"):
        desktop.execute(Click(element=1))
    with pytest.raises(UsageError, match="already on screen"):
        desktop.add(Button("save", (0, 0, 10, 10), "Again"))
    with pytest.raises(UsageError, match="unique"):
        FakeDesktop(widgets=[TextField("a", (0, 0, 5, 5)), TextField("a", (9, 9, 5, 5))])
    with pytest.raises(KeyError, match="no widget 'nope'"):
        desktop.widget("nope")


def test_later_widgets_are_on_top_for_hit_testing():
    desktop = FakeDesktop(widgets=[Button("under", (0, 0, 100, 100), "Under")])
    desktop.add(Checkbox("over", (10, 10, 20, 20), ""))
    desktop.execute(Click(x=15, y=15))
    assert desktop.state() == {"under": 0, "over": True}


def test_screenshot_shows_state_changes():
    desktop = FakeDesktop.demo_form()
    before = np.asarray(desktop.screenshot())
    desktop.execute(centre(desktop, "subscribe"))
    after = np.asarray(desktop.screenshot())
    x, y, w, h = desktop.widget("subscribe").box
    changed = np.argwhere((before != after).any(axis=2))
    assert len(changed) > 0
    assert changed.min(axis=0).tolist() >= [y, x]
    assert changed.max(axis=0).tolist() < [y + h, x + w]


def test_every_widget_is_found_by_a_contour_detector():
    desktop = FakeDesktop.demo_form()
    gray = cv2.cvtColor(np.asarray(desktop.screenshot()), cv2.COLOR_RGB2GRAY)
    contours, _ = cv2.findContours(cv2.Canny(gray, 50, 150), cv2.RETR_EXTERNAL, 2)
    found = [cv2.boundingRect(c) for c in contours]
    for widget in desktop.widgets:
        x, y, w, h = widget.box
        assert any(
            abs(fx - x) <= 2 and abs(fy - y) <= 2 and abs(fw - w) <= 3 and abs(fh - h) <= 3
            for fx, fy, fw, fh in found
        ), widget.name


def test_press_hold_and_release_and_triple_clicks_reach_the_widgets():
    from gui_harness.actions import KeyDown, KeyUp, MouseDown, MouseUp, TripleClick
    from gui_harness.errors import InvalidAction

    desktop = FakeDesktop.demo_form()
    box = centre(desktop, "subscribe")
    desktop.execute(MouseDown(x=box.x, y=box.y))
    assert desktop.held_buttons == ["left"] and desktop.widget("subscribe").checked is False
    desktop.execute(MouseUp(x=box.x, y=box.y))
    assert desktop.widget("subscribe").checked is True and desktop.held_buttons == []
    desktop.execute(TripleClick(x=box.x, y=box.y))
    assert desktop.widget("subscribe").checked is False
    desktop.execute(KeyDown(keys=["shift"]))
    with pytest.raises(InvalidAction, match="not all held"):
        desktop.execute(KeyUp(keys=["ctrl"]))
    desktop.execute(KeyUp(keys=["shift"]))
    assert desktop.held_keys == []
