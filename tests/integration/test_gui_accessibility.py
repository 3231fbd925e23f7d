"""gui_agent on a real GTK app with no set-up: the VirtualDesktop it starts switches
accessibility on, the planner acts through the fused list's numbers, and the app's own
tree reports the result."""

from __future__ import annotations

import json
import re
import shutil
from typing import Any

import pytest

from gui_harness import gui_agent
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
LINE = re.compile(
    r'^#(\d+) (\w+) at \((\d+), (\d+), (\d+)x(\d+)\)(?: (".*?"))?(?: \[([a-z, ]+)\])?$', re.M
)


def components(text: str) -> list[dict[str, Any]]:
    return [
        {
            "index": int(index),
            "kind": kind,
            "box": (int(x), int(y), int(w), int(h)),
            "label": json.loads(label) if label else None,
            "states": set(states.split(", ")) if states else set(),
        }
        for index, kind, x, y, w, h, label, states in LINE.findall(text)
    ]


def ticked_by_us(text: str) -> list[dict[str, Any]]:
    """A check button that is ticked and has the focus: the one the click went to."""
    return [
        c
        for c in components(text)
        if c["kind"] == "checkbox" and {"checked", "focused"} <= c["states"]
    ]


class Policy:
    """A deterministic planner that reads only the numbered list it is shown."""

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> dict[str, Any]:
        self.requests.append(request)
        if request.function == "plan_next_action":
            if ticked_by_us(request.text):
                return {"goal": "finish", "action": {"type": "done", "reason": "it is ticked"}}
            for c in components(request.text):
                if c["kind"] == "checkbox" and c["label"] and not c["states"]:
                    return {
                        "goal": f"tick {c['label']}",
                        "action": {"type": "click", "element": c["index"]},
                    }
            return {"goal": "find one", "action": {"type": "fail", "reason": "none unticked"}}
        if request.function == "verify_step":
            done = bool(ticked_by_us(request.text))
            return {"success": True, "observation": "looked", "task_complete": done}
        if request.function == "conclusion":
            return {"summary": "; ".join(str(c) for c in ticked_by_us(request.text)),
                    "task_appears_complete": True}  # fmt: skip
        raise ValueError(f"unexpected call {request.function!r}")


def test_gui_agent_ticks_a_gtk_check_button_through_the_fused_numbered_list():
    policy = Policy()
    with Session() as session, Runtime(ScriptedModel(policy)):
        result = gui_agent(TASK, app=["gtk3-widget-factory"], max_steps=5, settle_timeout=1.0)
    assert result.success, (result.stop_reason, result.detail, result.steps)
    plans = [r for r in policy.requests if r.function == "plan_next_action"]
    first = components(plans[0].text)
    clicked = result.steps[0]["action"]
    assert clicked["type"] == "click" and "element" in clicked
    target = next(c for c in first if c["index"] == clicked["element"])
    assert target["kind"] == "checkbox" and target["label"] == "checkbutton"
    assert not target["states"]
    # the app's own tree, read on the final screen, reports that very box ticked
    final = next(r for r in policy.requests if r.function == "conclusion")
    assert [c["box"] for c in ticked_by_us(final.text)] == [target["box"]]
    # each observation records what the tree said, for replays and for people
    observes = session.dag.find(name="observe", kind="code")
    recorded = observes[0].output["accessibility"]
    assert recorded["apps"] == 1 and recorded["note"] is None
    assert any(c["label"] == "checkbutton" for c in recorded["components"])
