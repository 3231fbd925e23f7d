"""gui_agent with a confirm hook that asks a person: answered in process, or suspended
(stop_reason "waiting") and resumed step by step without repeating an action."""

from __future__ import annotations

from gui_harness.actions import Policy
from gui_harness.agent import gui_agent
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.demo.policy import NAME, demo_policy
from gui_harness.desktop.fake import FakeDesktop
from openprogram import Runtime, ScriptedModel, Session, ask_user

SAVED = {"name": NAME, "subscribe": True, "color": None, "save": 1}


def test_a_confirm_hook_that_asks_is_answered_by_the_runtimes_asker():
    desktop = FakeDesktop.demo_form()
    asked: list[str] = []

    def asker(question):
        asked.append(question.text)
        return "yes"

    with Session() as session, Runtime(ScriptedModel(demo_policy), ask=asker):
        result = gui_agent(
            TASK, desktop=desktop, settle_timeout=0.2, policy=Policy(confirm=ask_user)
        )
    assert result.success and desktop.saved_state == SAVED
    assert len(asked) == len(desktop.actions) == 4
    assert asked[0].startswith('Allow the GUI agent to do {"type": "click"')
    assert len(session.dag.find(name="ask_user")) == 4


def test_a_no_refuses_the_action_and_the_planner_hears_it():
    desktop = FakeDesktop.demo_form()
    with Session(), Runtime(ScriptedModel(demo_policy), ask=lambda q: "no"):
        result = gui_agent(
            TASK, max_steps=2, desktop=desktop, settle_timeout=0.2, policy=Policy(confirm=ask_user)
        )
    assert desktop.actions == []
    assert result.steps[0]["status"] == "rejected" and "confirm hook" in result.steps[0]["error"]


def test_without_an_answer_the_run_waits_and_resumes_without_repeating_an_action(tmp_path):
    store = str(tmp_path / "runs.db")
    desktop = FakeDesktop.demo_form()  # a desktop that outlives the agent's runs
    policy = Policy(confirm=ask_user)
    with Session(store, id="gui") as session, Runtime(ScriptedModel(demo_policy)):
        result = gui_agent(TASK, desktop=desktop, settle_timeout=0.2, policy=policy)
    assert result.stop_reason == "waiting" and not result.success
    assert desktop.actions == []
    (agent,) = session.dag.find(name="gui_agent")
    assert agent.status == "waiting" and agent.meta["stop_reason"] == result.detail
    assert [n.status for n in session.dag.find(name="gui_step")] == ["waiting"]
    (question,) = session.pending()
    suspensions = 1
    while result.stop_reason == "waiting":
        reopened = Session.open(store, "gui")
        (question,) = reopened.pending()
        reopened.answer(question.id, "yes")
        reopened.close()
        with (
            Session.open(store, "gui", resume=True) as resumed,
            Runtime(ScriptedModel(demo_policy)),
        ):
            result = gui_agent(TASK, desktop=desktop, settle_timeout=0.2, policy=policy)
        suspensions += result.stop_reason == "waiting"
    assert result.success and desktop.saved_state == SAVED
    assert suspensions == 4 and len(desktop.actions) == 4  # each action done once
    assert resumed.pending() == []
    assert {n.status for n in resumed.dag.nodes} == {"completed"}
    assert len(resumed.dag.find(name="gui_agent")) == 1
