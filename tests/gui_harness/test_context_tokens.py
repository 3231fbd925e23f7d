"""gui_agent(context_tokens=N): every plan prompt fits N tokens on a long run (DESIGN §4)."""

from __future__ import annotations

import pytest

from gui_harness.agent import gui_agent
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.desktop.fake import FakeDesktop
from openprogram import Runtime, ScriptedModel, Session, count_tokens
from openprogram.errors import UsageError
from openprogram.render.render import seen_by

OK = {"success": True, "observation": "fine", "task_complete": False}
END = {"summary": "the form", "task_appears_complete": False}


def responder(calls):
    def reply(request):
        calls[request.function] = calls.get(request.function, 0) + 1
        if request.function == "plan_next_action":
            return {"goal": "look around", "action": {"type": "wait", "ms": 1}}
        if request.function == "verify_step":
            return OK
        if request.function == "summarize_history":
            return "Waited on the form for several steps; nothing changed."
        return END

    return reply


def prompt_tokens(messages) -> int:
    """A whole prompt as the budget counts it: text by the estimate, images by size."""
    return count_tokens(messages)


def run(steps, **options):
    calls: dict[str, int] = {}
    with Session() as session, Runtime(ScriptedModel(responder(calls))):
        result = gui_agent(
            TASK,
            max_steps=steps,
            desktop=FakeDesktop.demo_form(),
            settle_timeout=0.05,
            **options,
        )
    plans = [n for n in session.dag.find(kind="llm") if n.name == "plan_next_action"]
    return result, session, plans, calls


def test_every_plan_prompt_fits_context_tokens_on_a_long_run():
    result, session, plans, calls = run(40, context_tokens=3000)
    assert result.stop_reason == "max_steps" and len(plans) == 40
    sizes = [prompt_tokens(seen_by(session.dag, node).messages) for node in plans]
    assert max(sizes) <= 3000
    assert calls.get("summarize_history", 0) >= 1
    assert calls["summarize_history"] < 40 // 2  # one per compaction, not per step


def test_without_context_tokens_the_plan_prompt_grows():
    _, session, plans, _ = run(20)
    sizes = [prompt_tokens(seen_by(session.dag, node).messages) for node in plans]
    assert sizes[-1] > sizes[0] + 500


def test_context_tokens_must_be_a_positive_int():
    with pytest.raises(UsageError, match="context_tokens"):
        gui_agent(TASK, desktop=FakeDesktop.demo_form(), context_tokens=0)


def test_the_demo_policy_still_saves_the_form_on_a_small_budget():
    from gui_harness.demo.policy import demo_policy

    desktop = FakeDesktop.demo_form()
    # small enough that the history is summarised, large enough for what always shows
    # (observations grew with captions: 1700 no longer held the newest steps)
    with Session() as session, Runtime(ScriptedModel(demo_policy)):
        result = gui_agent(TASK, desktop=desktop, settle_timeout=0.05, context_tokens=1845)
    assert result.success and desktop.saved_state["save"] == 1
    assert session.dag.find(name="summarize_history", kind="code")  # it did compact
