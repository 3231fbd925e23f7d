"""gui_agent on a real GTK app with no set-up: the VirtualDesktop it starts switches
accessibility on, the planner acts through the fused list's numbers, and the app's own
tree reports the result."""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest

from gui_harness import gui_agent
from gui_harness.perception import read_description
from openprogram import ModelRequest, Runtime, ScriptedModel, Session

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(
        shutil.which("gtk3-widget-factory") is None or shutil.which("dbus-daemon") is None,
        reason="needs gtk-3-examples, dbus-daemon and at-spi2-core (scripts/setup.sh --dev)",
    ),
]

TASK = "Tick a check button that is not ticked yet"


def components(text: str) -> list[dict[str, Any]]:
    return [
        {
            "index": c.index,
            "kind": c.kind,
            "box": c.box,
            "label": c.label or None,
            "states": set(c.states),
        }
        for c in read_description(text)
    ]


GOAL = re.compile(r"tick the check button at \((\d+), (\d+), (\d+), (\d+)\)")


def ticked_by_us(text: str, history: str) -> list[dict[str, Any]]:
    """The check button an earlier step set out to tick (its box is in the goal the
    history shows), if the list now shows it ticked."""
    aimed = {tuple(int(v) for v in match) for match in GOAL.findall(history)}
    return [
        c
        for c in components(text)
        if c["kind"] == "checkbox" and c["box"] in aimed and "checked" in c["states"]
    ]


class Policy:
    """A deterministic planner that reads only the numbered list it is shown."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> dict[str, Any]:
        self.requests.append(request)
        if request.function == "plan_next_action":
            if ticked_by_us(request.text, request.history):
                return {"goal": "finish", "action": {"type": "done", "reason": "it is ticked"}}
            for c in components(request.text):
                if c["kind"] == "checkbox" and c["label"] and not c["states"]:
                    return {
                        "goal": f"tick the check button at {c['box']}",
                        "action": {"type": "click", "element": c["index"]},
                    }
            # nothing to tick yet (the app may still be publishing its tree): look again
            return {"goal": "find one", "action": {"type": "wait", "ms": 300}}
        if request.function == "verify_step":
            done = bool(ticked_by_us(request.text, request.history + request.text))
            return {"success": True, "observation": "looked", "task_complete": done}
        if request.function == "conclusion":
            return {"summary": "a check button is ticked", "task_appears_complete": True}
        raise ValueError(f"unexpected call {request.function!r}")


def test_gui_agent_ticks_a_gtk_check_button_through_the_fused_numbered_list():
    policy = Policy()
    with Session() as session, Runtime(ScriptedModel(policy)):
        result = gui_agent(TASK, app=["gtk3-widget-factory"], max_steps=8, settle_timeout=1.0)
    assert result.success, (result.stop_reason, result.detail, result.steps)
    plans = [r for r in policy.requests if r.function == "plan_next_action"]
    step = next(i for i, s in enumerate(result.steps) if s["action"]["type"] == "click")
    clicked = result.steps[step]["action"]
    assert "element" in clicked  # it acted through the list's numbers, not coordinates
    target = next(c for c in components(plans[step].text) if c["index"] == clicked["element"])
    assert target["kind"] == "checkbox" and target["label"] == "checkbutton"
    assert not target["states"]
    # the app's own tree, read on the final screen, reports that very box ticked
    final = next(r for r in policy.requests if r.function == "conclusion")
    now = [c for c in components(final.text) if c["box"] == target["box"]]
    assert [c["kind"] for c in now] == ["checkbox"] and "checked" in now[0]["states"]
    # each observation records what the tree said, for replays and for people
    observes = session.dag.find(name="observe", kind="code")
    recorded = observes[0].output["accessibility"]
    assert recorded["apps"] == 1 and recorded["note"] is None
    assert any(c["label"] == "checkbutton" for c in recorded["components"])
