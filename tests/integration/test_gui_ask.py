"""gui_agent on a real desktop (Xvfb and the Tk demo form) whose confirm hook asks a
person: the run waits before its first click, and once answered it resumes at that click
and finishes, each action done once, as the app itself reports."""

from __future__ import annotations

import shutil

import pytest

from gui_harness.actions import Policy
from gui_harness.agent import gui_agent
from gui_harness.demo.app import demo_app, read_state
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.demo.policy import NAME, demo_policy
from gui_harness.desktop.virtual import VirtualDesktop
from openprogram import Runtime, ScriptedModel, Session, ask_user

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]


def test_a_gui_run_waits_for_approval_and_resumes_at_the_action(tmp_path):
    store = str(tmp_path / "runs.db")
    state_path = tmp_path / "state.json"
    policy = Policy(confirm=ask_user)
    with VirtualDesktop(apps=[demo_app(state_path)]) as desktop:
        with Session(store, id="approve") as session, Runtime(ScriptedModel(demo_policy)):
            first = gui_agent(TASK, desktop=desktop, settle_timeout=1.0, policy=policy)
        assert first.stop_reason == "waiting" and [s.status for s in session.dag.find(
            name="gui_step")] == ["waiting"]  # fmt: skip
        (question,) = session.pending()
        assert question.text.startswith('Allow the GUI agent to do {"type": "click"')
        session.answer(question.id, "yes")

        approvals: list[str] = []

        def approve(question):
            approvals.append(question.text)
            return "yes"

        with (
            Session.open(store, "approve", resume=True) as resumed,
            Runtime(ScriptedModel(demo_policy), ask=approve),
        ):
            result = gui_agent(TASK, desktop=desktop, settle_timeout=1.0, policy=policy)
        state = read_state(state_path)

    assert result.success and result.stop_reason == "done"
    assert state["state"]["name"] == NAME and state["state"]["subscribe"] is True
    assert [c["widget"] for c in state["clicks"]] == ["name", "subscribe", "save"]
    assert len(approvals) == 3  # the first action's question was answered before
    assert [n.status for n in resumed.dag.find(name="ask_user")] == ["completed"] * 4
