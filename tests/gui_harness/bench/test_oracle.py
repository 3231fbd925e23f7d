"""The oracle planner: real MiniWoB++ pages in a headed Chromium on Xvfb, real clicks and
keys through gui_agent, judged by the page's own reward."""

from __future__ import annotations

import pytest

from gui_harness import gui_agent
from gui_harness.bench import ORACLE_TASKS, MiniWobPage, Oracle, pick_component
from openprogram import Runtime, ScriptedModel, Session
from openprogram.errors import UsageError
from tests.gui_harness.bench.conftest import needs_miniwob


def test_pick_component_takes_the_one_centred_in_the_element_covering_most():
    components = {1: (0, 0, 10, 10), 2: (95, 45, 30, 20), 3: (100, 50, 20, 10)}
    assert pick_component((100, 50, 20, 10), components) == 3
    assert pick_component((300, 300, 10, 10), components) is None  # nothing over it: no guess


def test_oracle_knows_at_least_twenty_tasks_of_each_kind():
    assert len(ORACLE_TASKS) >= 20
    for kind in ("click-button", "enter-text", "choose-list", "click-tab", "click-dialog",
                 "click-checkboxes"):  # fmt: skip
        assert kind in ORACLE_TASKS


@pytest.mark.parametrize(
    ("task", "seed"), [("click-button", 3), ("login-user", 1), ("choose-list", 0)]
)
@pytest.mark.parametrize("_marks", [pytest.param(None, marks=needs_miniwob())])
def test_oracle_solves_the_task_through_numbered_components(task, seed, _marks):
    with MiniWobPage(task, seed) as page:
        assert page.reward() == 0 and not page.done  # the episode is running
        oracle = Oracle(page)
        with Session(), Runtime(ScriptedModel(oracle)) as runtime:
            result = gui_agent(page.utterance, desktop=page.desktop, runtime=runtime)
        assert page.done
        assert page.reward() == 1.0, result.detail
    planned = [s["action"]["type"] for s in result.steps]
    assert planned[-1] == "done" and result.success
    # every pointer action named a component of the observation, never a coordinate
    clicks = [s["action"] for s in result.steps if s["action"]["type"] == "click"]
    assert clicks and all(set(c) >= {"element"} and "x" not in c for c in clicks)


@pytest.mark.parametrize("_marks", [pytest.param(None, marks=needs_miniwob())])
def test_a_wrong_answer_is_judged_by_the_page_not_the_agent(_marks):
    with MiniWobPage("click-button", 0) as page:
        wrong = next(
            b
            for b in page.driver.find_elements("css selector", "#area button")
            if b.text != page.fields["target"]
        )
        x, y, w, h = page.box(wrong)
        from gui_harness.actions import Click

        page.desktop.execute(Click(x=x + w // 2, y=y + h // 2))
        assert page.done
        assert page.reward() < 0
        with Session(), Runtime(ScriptedModel(Oracle(page))) as runtime:
            result = gui_agent(page.utterance, desktop=page.desktop, runtime=runtime)
    assert not result.success and result.stop_reason == "fail"


def test_unknown_tasks_are_refused_with_close_names():
    with pytest.raises(UsageError, match=r"unknown MiniWoB\+\+ task 'click-buton'.*click-button"):
        MiniWobPage("click-buton")


def test_the_oracle_refuses_a_task_it_cannot_solve():
    page = MiniWobPage("drag-box")
    with pytest.raises(UsageError, match=r"cannot solve MiniWoB.* 'drag-box'"):
        Oracle(page)
