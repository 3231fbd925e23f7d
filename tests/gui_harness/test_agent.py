"""gui_agent on a FakeDesktop: the done gate, re-asks, limits, policy, errors, context."""

from __future__ import annotations

import pytest

from gui_harness.actions import Policy
from gui_harness.agent import gui_agent
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.demo.policy import NAME, demo_policy
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.perception import ComponentMemory, OcrWorker, Perception
from openprogram import ModelAuthError, Runtime, ScriptedModel, Session
from openprogram.callbacks.base import Callback
from openprogram.render.render import seen_by

OK = {"success": True, "observation": "fine", "task_complete": False}
COMPLETE = {"success": True, "observation": "saved", "task_complete": True}
END = {"summary": "the form", "task_appears_complete": False}


def plan(action, goal="g"):
    return {"goal": goal, "action": action}


def run(script, *, max_steps=6, **options):
    desktop = FakeDesktop.demo_form()
    model = ScriptedModel(script)
    with Session() as session, Runtime(model):
        result = gui_agent(
            TASK, max_steps=max_steps, desktop=desktop, settle_timeout=0.2, **options
        )
    return result, desktop, model, session


def test_the_demo_policy_fills_and_saves_the_form():
    result, desktop, _, _ = run(demo_policy)
    assert result.success and result.stop_reason == "done"
    assert desktop.saved_state == {"name": NAME, "subscribe": True, "color": None, "save": 1}
    assert [s["goal"] for s in result.steps][:4] == [
        "click the Name field",
        f"type {NAME}",
        "tick Subscribe",
        "press Save",
    ]
    assert result.usage.calls == 5 + 4 + 1  # plans, verifications, conclusion


def test_done_without_a_confirming_verification_is_not_accepted():
    script = {
        "plan_next_action": [
            plan({"type": "done"}),
            plan({"type": "done"}),
            plan({"type": "done"}),
        ],
        "verify_step": [OK, COMPLETE],
        "conclusion": [END],
    }
    result, _, _, _ = run(script)
    assert [s["status"] for s in result.steps] == ["done_rejected", "done_rejected", "done"]
    assert result.success and len(result.steps) == 3
    assert result.summary == "the form"


def test_an_invalid_action_gets_one_re_ask_and_a_second_is_recorded_not_done():
    script = {
        "plan_next_action": [
            plan({"type": "teleport"}),
            plan({"type": "click", "element": 2}),
            plan({"type": "click", "element": 99}),
            plan({"type": "fly"}),
        ],
        "verify_step": [OK],
        "conclusion": [END],
    }
    result, _, model, _ = run(script, max_steps=2)
    first, second = result.steps
    assert first["status"] == "acted" and first["action"]["element"] == 2
    assert second["status"] == "invalid" and "invalid action" in second["error"]
    assert not result.success and result.stop_reason == "max_steps"
    reask = [r for r in model.requests if r.function == "plan_next_action"][1]
    assert "cannot be used" in reask.text and "teleport" in reask.text


def test_an_unreadable_plan_is_never_done():
    script = {
        "plan_next_action": ["I think we are done!", "still not json"],
        "conclusion": [END],
    }
    result, _, _, _ = run(script, max_steps=1)
    assert result.steps[0]["status"] == "invalid"
    assert "unreadable plan" in result.steps[0]["error"]
    assert not result.success


def test_max_steps_stops_the_run():
    script = {
        "plan_next_action": [plan({"type": "wait", "ms": 1})] * 3,
        "verify_step": [OK] * 2,
        "conclusion": [END],
    }
    result, _, _, _ = run(script, max_steps=3)
    assert result.stop_reason == "max_steps" and len(result.steps) == 3


def test_timeout_stops_before_the_next_step():
    script = {"plan_next_action": [plan({"type": "wait", "ms": 1})], "conclusion": [END]}
    result, _, _, _ = run(script, max_steps=5, timeout_s=0)
    assert result.stop_reason == "timeout" and result.steps == []


def test_a_policy_rejection_is_recorded_and_fed_back():
    script = {
        "plan_next_action": [
            plan({"type": "keypress", "keys": ["alt", "f4"]}),
            plan({"type": "fail", "reason": "blocked"}),
        ],
        "verify_step": [
            {"success": False, "observation": "nothing happened", "task_complete": False}
        ],
        "conclusion": [END],
    }
    result, desktop, model, _ = run(script)
    assert result.steps[0]["status"] == "rejected"
    assert "rejected by policy" in result.steps[0]["error"]
    assert desktop.actions == []
    assert result.stop_reason == "fail"
    planner = [r for r in model.requests if r.function == "plan_next_action"][1]
    assert "rejected by policy" in planner.history


def test_a_confirm_hook_can_refuse_actions():
    script = {
        "plan_next_action": [plan({"type": "click", "element": 2}), plan({"type": "fail"})],
        "verify_step": [OK],
        "conclusion": [END],
    }
    result, desktop, _, _ = run(script, policy=Policy(confirm=lambda action: False))
    assert result.steps[0]["status"] == "rejected" and desktop.actions == []


def test_an_auth_error_stops_at_once():
    script = {"plan_next_action": [ModelAuthError("bad key"), plan({"type": "wait"})]}
    result, _, model, _ = run(script)
    assert result.stop_reason == "error" and "bad key" in result.detail
    assert len(model.requests) == 1  # no retries, no conclusion


def test_a_callback_gate_stops_the_run_before_a_step():
    class TwoSteps(Callback):
        stop_reason = "two steps are enough"

        def __init__(self):
            self.steps = 0

        def on_run_continue(self, runtime, *, kind, frame):
            if kind == "gui_step":
                self.steps += 1
            return self.steps <= 2

    desktop = FakeDesktop.demo_form()
    with Session(), Runtime(ScriptedModel(demo_policy), callbacks=[TwoSteps()]):
        result = gui_agent(TASK, desktop=desktop, settle_timeout=0.2)
    assert result.stop_reason == "stopped" and result.detail == "two steps are enough"
    assert len(result.steps) == 2


def test_planner_sees_prior_steps_io_but_verifier_sees_only_its_own_call():
    _, _, _, session = run(demo_policy)
    dag = session.dag
    plan_4 = dag.find(name="plan_next_action", kind="llm")[3]
    planner_saw = seen_by(dag, plan_4).text()
    assert (
        '[gui_step #1] input={"step": 1} output={"step": 1, "goal": "click the Name field"'
        in planner_saw
    )
    assert "[verify_step #3]" in planner_saw
    assert "assistant:" not in planner_saw  # other leaves' exchanges stay hidden
    verify_3 = dag.find(name="verify_step", kind="llm")[2]
    verifier_saw = seen_by(dag, verify_3).text().splitlines()
    assert len(verifier_saw) == 1 and verifier_saw[0].startswith("[verify_step #3] input=")


def test_history_window_caps_the_planner_to_the_last_steps():
    _, _, _, session = run(demo_policy, history_window=1)
    dag = session.dag
    plan_5 = dag.find(name="plan_next_action", kind="llm")[4]
    lines = seen_by(dag, plan_5).text().splitlines()
    assert [line.split("]")[0] + "]" for line in lines] == [
        "[gui_step #4]",
        "[gui_step #5]",
        "[observe #5]",
        "[verify_step #4]",
        "[plan_next_action #5]",
    ]


def test_screenshots_are_stored_once_each_and_referenced():
    _, _, _, session = run(demo_policy)
    observe_nodes = session.dag.find(name="observe", kind="code")
    refs = {n.output["screenshot"].sha256 for n in observe_nodes}
    assert refs <= set(session.dag.blobs)


def test_the_result_renders_in_a_notebook_with_the_runs_tree_and_thumbnails():
    result, _, _, _ = run(demo_policy)
    page = result._repr_html_()
    assert "press Save" in page and "success" in page
    assert "gui_step" in page and "data:image/" in page


@pytest.mark.parametrize("bad", [{"max_steps": 0}, {"history_window": -1}])
def test_bad_limits_are_usage_errors(bad):
    with Session(), Runtime(ScriptedModel([])), pytest.raises(ValueError):
        gui_agent(TASK, desktop=FakeDesktop.demo_form(), **bad)


def test_a_remote_desktops_own_policy_refusal_is_fed_back_not_fatal():
    from gui_harness.desktop.remote import RemoteDesktop
    from gui_harness.desktop.server import serve_desktop

    fake = FakeDesktop.demo_form()
    script = {
        "plan_next_action": [plan({"type": "click", "element": 2}), plan({"type": "fail"})],
        "verify_step": [OK],
        "conclusion": [END],
    }
    strict = Policy(confirm=lambda action: False)
    with serve_desktop(fake, policy=strict) as server, Session(), Runtime(ScriptedModel(script)):
        result = gui_agent(
            TASK, desktop=RemoteDesktop(server.url, token=server.token), settle_timeout=0.2
        )
    assert result.steps[0]["status"] == "rejected"
    assert "rejected by the desktop" in result.steps[0]["error"]
    assert fake.actions == []


def test_a_raising_budget_gate_ends_the_run_as_stopped():
    from openprogram import BudgetManager

    with (
        Session(),
        Runtime(ScriptedModel(demo_policy), callbacks=[BudgetManager(0, raise_error=True)]),
    ):
        result = gui_agent(TASK, desktop=FakeDesktop.demo_form(), settle_timeout=0.2)
    assert result.stop_reason == "stopped" and result.steps == []


def test_used_components_are_remembered_for_next_time():
    looker = Perception()  # OCR reads in the background: let it read the form first
    looker.perceive(FakeDesktop.demo_form().screenshot())
    assert looker._worker is not None and looker._worker.wait_idle(timeout=120)
    run(demo_policy, app="demo-form")
    entries = ComponentMemory("demo-form").entries
    assert "Save" in {entry.label for entry in entries}
    assert "checkbox" not in {entry.kind for entry in entries}  # named by its caption


def test_the_agents_own_default_policy_refuses_a_terminal_chord():
    script = {
        "plan_next_action": [
            plan({"type": "keypress", "keys": ["ctrl", "alt", "t"]}),
            plan({"type": "fail"}),
        ],
        "verify_step": [OK],
        "conclusion": [END],
    }
    result, desktop, _, _ = run(script)
    assert result.steps[0]["status"] == "rejected"
    assert "rejected by policy" in result.steps[0]["error"]
    assert "deny list" in result.steps[0]["error"]
    assert desktop.actions == []


def test_a_remote_desktop_with_the_wrong_token_stops_the_run_at_once():
    from gui_harness.desktop.remote import RemoteDesktop
    from gui_harness.desktop.server import serve_desktop

    fake = FakeDesktop.demo_form()
    model = ScriptedModel({"plan_next_action": [plan({"type": "wait"})] * 5})
    with serve_desktop(fake) as server, Session(), Runtime(model):
        remote = RemoteDesktop(server.url, token="not-the-token-of-this-server")
        result = gui_agent(TASK, desktop=remote, settle_timeout=0.2)
    assert result.stop_reason == "error"
    assert "the token is not this server's" in (result.detail or "")
    assert result.steps == []  # no retries: three tries would have left three error steps
    assert model.requests == [] and fake.actions == []


class _Crash(Exception):
    """The process dying mid-run, as far as the recording can tell."""


def _primed(reading: str, desktop: FakeDesktop) -> Perception:
    """A Perception whose OCR reads every crop as `reading`, its cache already holding
    the first screen (so the first observation is labelled)."""
    worker = OcrWorker(lambda crop: reading)
    perception = Perception(ocr=worker)
    perception.perceive(desktop.screenshot())
    assert worker.wait_idle(timeout=60)
    return perception


def test_a_resumed_run_shows_the_recorded_labels_not_what_ocr_reads_now(tmp_path):
    store = str(tmp_path / "runs.db")
    desktop = FakeDesktop.demo_form()
    plans = 0

    def crashing(request):
        nonlocal plans
        plans += request.function == "plan_next_action"
        if plans == 4:
            raise _Crash("the process died here")
        return demo_policy(request)

    with (
        Session(store, id="ocr") as session,
        Runtime(ScriptedModel(crashing)),
        pytest.raises(_Crash),
    ):
        gui_agent(TASK, desktop=desktop, settle_timeout=0.2, perception=_primed("first", desktop))
    first = session.dag.find(name="observe", kind="code")[0].output
    assert first["components"] == len(first["shown"])
    assert "first" in {c["label"] for c in first["shown"]}

    again = FakeDesktop.demo_form()
    with (
        Session.open(store, "ocr", resume=True) as resumed,
        Runtime(ScriptedModel(demo_policy)),
    ):
        result = gui_agent(
            TASK, desktop=again, settle_timeout=0.2, perception=_primed("second", again)
        )
    assert result.success
    # steps 3 and 4 observed before the crash: the planner saw "first", and so do their
    # outcomes, though OCR now reads "second" on the same pixels
    assert [s["goal"] for s in result.steps[2:4]] == ["tick Subscribe", "press Save"]
    assert result.steps[2]["target"] == result.steps[3]["target"] == "first"
    live = resumed.dag.find(name="observe", kind="code")[-1].output
    assert live["step"] == 5 and "second" in {c["label"] for c in live["shown"]}


def test_memory_learns_a_clicked_button_but_not_a_checkbox_named_by_its_caption(tmp_path):
    desktop = FakeDesktop.demo_form()
    perception = _primed("Caption", desktop)
    perception.memory = memory = ComponentMemory("demo", tmp_path)
    shown = perception.perceive(desktop.screenshot())
    box = next(c.index for c in shown.components if c.kind == "checkbox")
    button = next(c.index for c in shown.components if c.kind == "button")
    assert shown.component(box).label == shown.component(button).label == "Caption"
    script = {
        "plan_next_action": [
            plan({"type": "click", "element": box}),
            plan({"type": "click", "element": button}),
            plan({"type": "done"}),
        ],
        "verify_step": [OK, COMPLETE],
        "conclusion": [END],
    }
    with Session(), Runtime(ScriptedModel(script)):
        gui_agent(TASK, desktop=desktop, settle_timeout=0.2, perception=perception)
    # every unticked box looks alike: remembering one would name them all after it
    assert [entry.kind for entry in memory.entries] == ["button"]


def test_keys_held_by_the_plan_make_chords_with_later_keys_and_are_released_at_the_end():
    script = {
        "plan_next_action": [
            plan({"type": "key_down", "keys": ["ctrl", "alt"]}),
            plan({"type": "keypress", "keys": ["t"]}),  # ctrl+alt+t: a terminal
            plan({"type": "key_up", "keys": ["f5"]}),  # not held: the desktop cannot
            plan({"type": "key_down", "keys": ["shift"]}),
            plan({"type": "fail", "reason": "stop"}),
        ],
        "verify_step": [OK] * 4,
        "conclusion": [END],
    }
    result, desktop, _, _ = run(script)
    statuses = [step["status"] for step in result.steps]
    assert statuses == ["acted", "rejected", "rejected", "acted", "fail"]
    assert "'ctrl+alt+t' is not allowed" in result.steps[1]["error"]
    assert "the desktop cannot do it" in result.steps[2]["error"]
    assert desktop.held_keys == [] and desktop.held_buttons == []  # released when it ended
