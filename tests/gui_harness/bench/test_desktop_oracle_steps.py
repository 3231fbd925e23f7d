"""The desktop oracle's steps under gui_agent, on a FakeDesktop with a perception that
shows a sheet first without its cells (a tree read cut short), then with them: a click
on a cell waits for the cells rather than answering what the harness would refuse, and
an answer refused anyway (asked again on the same screen) is taken again on the next; a
click that changed nothing on the (fake) screen is taken once more; the first step
waits until an app laying its window out again has done so; and a scroll step turns the
wheel over its target, found by its label, by the target's number."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from gui_harness.agent import gui_agent
from gui_harness.bench.desktop_oracle import DesktopOracle
from gui_harness.bench.desktop_spec import DesktopTask
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.perception import Component, Observation, describe
from gui_harness.perception.cells import Grid
from openprogram import Runtime, ScriptedModel, Session

SHEET = Grid(columns=(100, 180, 260, 340), rows=(100, 120, 140, 160, 180))


class _Sheet:
    """Perceives one grid labelled "Sheet Sheet1", its cells known from look `cells_from`."""

    def __init__(self, cells_from: int) -> None:
        self.looks = 0
        self.cells_from = cells_from

    def perceive(self, image: Any) -> Observation:
        self.looks += 1
        grid = SHEET if self.looks >= self.cells_from else None
        sheet = Component(1, "grid", (100, 100, 240, 80), "Sheet Sheet1", 1.0, grid=grid)
        return Observation(image, (sheet,), describe([sheet]))


def _task() -> DesktopTask:
    return DesktopTask.model_validate(
        {
            "id": "cells",
            "app": "fake",
            "instruction": "Click B3.",
            "config": [{"type": "launch", "argv": ["true"]}],
            "evaluator": [{"type": "clipboard", "expected": "x"}],
            "oracle": [{"click": {"kind": "grid", "label_contains": "Sheet"}, "cell": "B3"}],
        }
    )


def _run(perception: _Sheet) -> tuple[Any, FakeDesktop, Session]:
    """The oracle's Calc-like task on a fake desktop seen through `perception`."""
    desktop = FakeDesktop.demo_form()
    with Session() as session, Runtime(ScriptedModel(DesktopOracle(_task()))):
        result = gui_agent("Click B3.", desktop=desktop, perception=perception)
    return result, desktop, session


def test_a_cell_click_waits_for_the_grids_cells() -> None:
    result, desktop, session = _run(_Sheet(cells_from=3))
    assert result.success
    actions = [n.input["action"] for n in session.dag.find(name="dispatch_action")]
    # the fake screen does not change when clicked: once it stayed the same over two
    # waits, the oracle takes the click as not taken and clicks once more
    assert [a["type"] for a in actions] == ["wait", "wait", "click", "wait", "wait", "click"]
    assert actions[2]["cell"] == actions[-1]["cell"] == "B3"
    assert [(a.x, a.y) for a in desktop.actions if a.type == "click"] == [(220, 150)] * 2
    assert len(session.dag.find(kind="llm", name="plan_next_action")) == 7  # no re-ask


class _Growing(_Sheet):
    """The sheet's first two looks (the second is the oracle's first step, once the screen
    held still) show two rows only: B3 is not on them."""

    def perceive(self, image: Any) -> Observation:
        seen = super().perceive(image)
        if self.looks > 2:
            return seen
        short = Grid(columns=SHEET.columns, rows=SHEET.rows[:3])
        sheet = Component(1, "grid", (100, 100, 240, 40), "Sheet Sheet1", 1.0, grid=short)
        return Observation(image, (sheet,), describe([sheet]))


def test_an_answer_refused_on_its_screen_is_planned_again_on_the_next() -> None:
    result, desktop, session = _run(_Growing(cells_from=1))
    assert result.success
    plans = [n.output for n in session.dag.find(kind="llm", name="plan_next_action")]
    assert "hold still" in plans[0]  # the first screen: does it hold still?
    assert '"cell": "B3"' in plans[1] and "look again" in plans[2]  # refused, re-asked
    actions = [n.input["action"] for n in session.dag.find(name="dispatch_action")]
    assert [a["type"] for a in actions] == ["wait", "wait", "click", "wait", "wait", "click"]
    assert [(a.x, a.y) for a in desktop.actions if a.type == "click"] == [(220, 150)] * 2


class _Relaid:
    """An app still laying its window out: the first look shows its Save button at the
    top of a screen drawn otherwise (a bar across it); from the second on, where it stays."""

    def __init__(self) -> None:
        self.looks = 0

    def perceive(self, image: Any) -> Observation:
        self.looks += 1
        box = (100, 100, 80, 30) if self.looks > 1 else (100, 40, 80, 30)
        if self.looks == 1:
            image = image.copy()
            image.paste((0, 0, 0), (0, 200, image.width, 260))
        save = Component(1, "button", box, "Save", 1.0)
        return Observation(image, (save,), describe([save]))


def test_the_first_step_waits_until_the_first_screen_holds_still() -> None:
    task = DesktopTask.model_validate(
        {
            "id": "relaid",
            "app": "fake",
            "instruction": "Press Save.",
            "config": [{"type": "launch", "argv": ["true"]}],
            "evaluator": [{"type": "clipboard", "expected": "x"}],
            "oracle": [{"click": {"label": "Save"}}],
        }
    )
    desktop = FakeDesktop.demo_form()
    with Session() as session, Runtime(ScriptedModel(DesktopOracle(task))):
        result = gui_agent("Press Save.", desktop=desktop, perception=_Relaid())
    assert result.success
    actions = [n.input["action"] for n in session.dag.find(name="dispatch_action")]
    assert [a["type"] for a in actions][:3] == ["wait", "wait", "click"]
    assert next((a.x, a.y) for a in desktop.actions if a.type == "click") == (140, 115)


class _Pane:
    """A pane whose field shows only once the wheel turned over its text."""

    def __init__(self, desktop: FakeDesktop) -> None:
        self.desktop = desktop

    def perceive(self, image: Any) -> Observation:
        pane = Component(1, "text", (100, 300, 200, 20), "Source text", 1.0)
        seen = [pane]
        if any(a.type == "scroll" for a in self.desktop.actions):
            seen.append(Component(2, "field", (100, 340, 300, 24), None, 1.0, caption="Note"))
        return Observation(image, tuple(seen), describe(seen))


def test_a_scroll_step_turns_the_wheel_over_its_target_by_its_number() -> None:
    task = DesktopTask.model_validate(
        {
            "id": "scrolled",
            "app": "fake",
            "instruction": "Write in the note.",
            "config": [{"type": "launch", "argv": ["true"]}],
            "evaluator": [{"type": "clipboard", "expected": "x"}],
            "oracle": [
                {"scroll": {"label": "Source text"}, "down": 2},
                {"click": {"label": "Note", "kind": "field"}},
            ],
        }
    )
    desktop = FakeDesktop.demo_form()
    with Session() as session, Runtime(ScriptedModel(DesktopOracle(task))):
        result = gui_agent("Write in the note.", desktop=desktop, perception=_Pane(desktop))
    assert result.success
    actions = [n.input["action"] for n in session.dag.find(name="dispatch_action")]
    scroll = next(a for a in actions if a["type"] == "scroll")
    assert (scroll["element"], scroll["scroll_y"]) == (1, 2)
    ((x, y, down),) = [(a.x, a.y, a.scroll_y) for a in desktop.actions if a.type == "scroll"]
    assert (x, y, down) == (200, 310, 2)
    assert next((a.x, a.y) for a in desktop.actions if a.type == "click") == (250, 352)


def test_a_scroll_step_of_no_click_is_refused() -> None:
    step = {"scroll": {"label": "Pane"}, "down": 0}
    task = {
        "id": "still",
        "app": "fake",
        "instruction": "Scroll.",
        "config": [{"type": "launch", "argv": ["true"]}],
        "evaluator": [{"type": "clipboard", "expected": "x"}],
        "oracle": [step],
    }
    with pytest.raises(ValidationError, match="at least one click"):
        DesktopTask.model_validate(task)


class _Recaptioned:
    """A field captioned "Note" until it is clicked; then (focused) captioned otherwise,
    with the (fake) screen unchanged, as Linguist's translation box is once focused."""

    def __init__(self, desktop: FakeDesktop) -> None:
        self.desktop = desktop

    def perceive(self, image: Any) -> Observation:
        clicked = any(a.type == "click" for a in self.desktop.actions)
        field = Component(1, "field", (100, 340, 300, 24), None, 1.0, caption="Source text")
        if not clicked:
            field = Component(1, "field", (100, 340, 300, 24), None, 1.0, caption="Note")
        return Observation(image, (field,), describe([field]))


def test_a_click_whose_target_changed_is_taken_though_the_screen_did_not() -> None:
    task = DesktopTask.model_validate(
        {
            "id": "recaptioned",
            "app": "fake",
            "instruction": "Write in the note.",
            "config": [{"type": "launch", "argv": ["true"]}],
            "evaluator": [{"type": "clipboard", "expected": "x"}],
            "oracle": [{"click": {"label": "Note", "kind": "field"}}, {"type": "hello"}],
        }
    )
    desktop = FakeDesktop.demo_form()
    with Runtime(ScriptedModel(DesktopOracle(task))):
        result = gui_agent("Write in the note.", desktop=desktop, perception=_Recaptioned(desktop))
    assert result.success, result.detail
    assert [a.type for a in desktop.actions if a.type in ("click", "type")] == ["click", "type"]
