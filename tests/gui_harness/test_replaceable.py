"""gui_agent's replaceable parts: your own leaves, perception and prompts (DESIGN.md §8)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from gui_harness import (
    Observation,
    Perception,
    Prompts,
    ask_for_action,
    current_observation,
    current_prompts,
    gui_agent,
    latest_verification,
    look,
    observe_screen,
)
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.demo.policy import demo_policy
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.perception import describe
from gui_harness.prompts import PLAN
from openprogram import (
    ModelRequest,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    llm,
)
from openprogram.render.render import seen_by


def run(model: Any, **options: Any):
    desktop = FakeDesktop.demo_form()
    with Session() as session, Runtime(ScriptedModel(model)):
        result = gui_agent(TASK, max_steps=8, desktop=desktop, settle_timeout=0.2, **options)
    return result, desktop, session


@agentic_function(render_range={"callers": 2})
def reflect(step: int) -> str:
    return llm(f"step {step}: what happened so far?")


@agentic_function
def plan_next_action(task: str, step: int) -> dict[str, Any]:
    note = reflect(step)
    observation = current_observation()
    prompt = current_prompts().plan_prompt(
        task, step, observation.size, observation.text, latest_verification()
    )
    return ask_for_action(f"{prompt}\nNote: {note}")


def with_reflection(request: ModelRequest) -> Any:
    if request.function == "reflect":
        return f"looked back at {request.history.count(chr(10)) + 1} lines"
    return demo_policy(request)


def test_a_replaced_planner_runs_in_the_loop_with_its_own_render_range():
    result, desktop, session = run(with_reflection, plan_next_action=plan_next_action)
    assert result.success and desktop.saved_state["save"] == 1
    dag = session.dag
    plans = dag.find(name="plan_next_action", kind="code")
    reflections = dag.find(name="reflect", kind="code")
    assert len(reflections) == len(plans) == len(result.steps)
    assert all(r.parent == p.id for r, p in zip(reflections, plans, strict=True))
    last = dag.find(name="reflect", kind="llm")[-1]
    assert len(seen_by(dag, last).text().splitlines()) == 3  # two callers + its own call line
    planned = dag.find(name="plan_next_action", kind="llm")[-1]
    assert "Note: looked back at 3 lines" in planned.input[0]["text"]


class Labelled(Perception):
    """Adds the app's own knowledge: the widest field is the Name field."""

    def perceive(self, image: Any) -> Observation:
        seen = super().perceive(image)
        widest = max((c for c in seen.components if c.kind == "field"), key=lambda c: c.box[2])
        parts = [replace(c, label="Name field") if c is widest else c for c in seen.components]
        return Observation(seen.image, tuple(parts), describe(parts))


def test_a_replaced_perception_is_what_every_leaf_sees():
    result, _, session = run(demo_policy, perception=Labelled(ocr=False))
    assert result.success
    for exchange in session.dag.find(kind="llm"):
        assert '"Name field"' in exchange.input[0]["text"]  # plan, verify and conclusion
    assert result.steps[0]["target"] == "Name field"


def test_a_replaced_observe_uses_observe_screen_and_feeds_the_planner():
    @agentic_function(render_range={"callers": 0})
    def observe(step: int) -> dict[str, Any]:
        seen = observe_screen(step)
        seen["fresh_look_components"] = len(look().components)
        return seen

    result, _, session = run(demo_policy, observe=observe)
    assert result.success
    first = session.dag.find(name="observe", kind="code")[0]
    assert first.output["fresh_look_components"] == first.output["components"] > 0


def test_an_observe_that_makes_no_observation_is_a_usage_error():
    @agentic_function
    def observe(step: int) -> dict[str, Any]:
        return {"step": step}

    with pytest.raises(UsageError, match=r"observe_screen\(step\)"):
        run(demo_policy, observe=observe)


def test_replaced_verify_step_and_conclusion_are_called():
    @agentic_function(render_range={"callers": 0})
    def verify_step(task: str, previous: dict[str, Any], step: int) -> dict[str, Any]:
        saved = previous.get("goal") == "press Save"
        return {"success": True, "observation": "mine", "task_complete": saved}

    @agentic_function(render_range={"callers": 0})
    def conclusion(task: str, outcome: str) -> str:
        return f"my summary of {len(current_observation().components)} components"

    result, _, session = run(demo_policy, verify_step=verify_step, conclusion=conclusion)
    assert result.success and result.summary.startswith("my summary of ")
    assert not [n for n in session.dag.find(kind="llm") if n.name != "plan_next_action"]


@pytest.mark.parametrize(
    ("name", "fn", "message"),
    [
        ("plan_next_action", "not a function", r"is not a function"),
        ("plan_next_action", lambda task, step: {}, r"not an agentic function"),
        ("observe", agentic_function(lambda: {}), r"cannot be called as gui_agent calls it"),
        (
            "verify_step",
            agentic_function(lambda task, prev, step: {}),
            r"names its parameters \('task', 'prev', 'step'\)",
        ),
    ],
)
def test_a_replacement_that_does_not_fit_is_a_usage_error_naming_the_signature(name, fn, message):
    with pytest.raises(UsageError, match=message) as caught:
        run(demo_policy, **{name: fn})
    assert f"{name}=" in str(caught.value) and f"def {name}(" in str(caught.value)


def test_an_async_replacement_is_refused():
    @agentic_function
    async def plan_next_action(task: str, step: int) -> dict[str, Any]:
        return {}

    with pytest.raises(UsageError, match="is async"):
        run(demo_policy, plan_next_action=plan_next_action)


def test_a_planner_returning_the_wrong_shape_is_a_usage_error():
    @agentic_function
    def plan_next_action(task: str, step: int) -> Any:
        return "click Save"

    with pytest.raises(UsageError, match=r"returned 'click Save'; it must return dict"):
        run(demo_policy, plan_next_action=plan_next_action)


def test_a_perception_without_perceive_or_returning_garbage_is_a_usage_error():
    with pytest.raises(UsageError, match=r"has no perceive\(image\) method"):
        run(demo_policy, perception=object())

    class Broken:
        def perceive(self, image: Any) -> Any:
            return ["a component"]

    with pytest.raises(UsageError, match=r"must return a gui_harness\.Observation"):
        run(demo_policy, perception=Broken())


def test_prompts_are_overridable_per_run():
    mine = Prompts(plan=PLAN + "\nHouse rule: never press Cancel.")
    _, _, session = run(demo_policy, prompts=mine)
    for exchange in session.dag.find(name="plan_next_action", kind="llm"):
        if exchange.input[0]["text"].startswith("You operate"):
            assert exchange.input[0]["text"].endswith("House rule: never press Cancel.")


@pytest.mark.parametrize(
    ("template", "message"),
    [("Do {taks}", r"names the field \{taks\}"), ("Do {task", "not a valid template")],
)
def test_a_prompt_template_with_a_bad_field_is_a_usage_error(template, message):
    with pytest.raises(UsageError, match=message):
        Prompts(verify=template)


def test_the_hooks_outside_gui_agent_say_how_to_use_them():
    with pytest.raises(UsageError, match="runs inside gui_agent"):
        current_observation()
