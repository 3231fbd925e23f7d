"""PII never reaches the model over HTTP, yet the GUI types the real value."""

from __future__ import annotations

import json

from gui_harness.agent import gui_agent
from gui_harness.desktop.fake import FakeDesktop
from openprogram import PIIRedactor, Runtime, Session
from openprogram.testing import OpenAIServer

EMAIL = "alice.smith@example.com"
TASK = f"Type {EMAIL} into the Name field"


def model_side(body: dict) -> str:
    """A tiny 'model' that only ever sees what crossed the wire."""
    prompt = json.dumps(body["messages"][-1]["content"])
    if "You check whether" in prompt:
        typed = "<EMAIL_1>" in json.dumps(body["messages"][-1]["content"])
        return json.dumps({"success": True, "observation": "ok", "task_complete": typed})
    if "You operate a computer" in prompt:
        if '"type": "type"' in json.dumps(body["messages"]) or "This is step 3" in prompt:
            return json.dumps({"goal": "finish", "action": {"type": "done", "reason": "typed"}})
        if "This is step 1" in prompt:
            return json.dumps({"goal": "focus", "action": {"type": "click", "x": 310, "y": 76}})
        placeholder = prompt[
            prompt.index("<EMAIL_") : prompt.index(">", prompt.index("<EMAIL_")) + 1
        ]
        return json.dumps({"goal": "type it", "action": {"type": "type", "text": placeholder}})
    return json.dumps({"summary": "The Name field shows it.", "task_appears_complete": True})


def test_http_bodies_carry_no_raw_pii_but_the_type_action_types_the_real_value():
    desktop = FakeDesktop.demo_form()
    with OpenAIServer(responder=model_side) as server:
        runtime = Runtime(
            "openai/test-model",
            api_base=server.url,
            api_key="sk-test",
            callbacks=[PIIRedactor()],
        )
        with Session() as session, runtime:
            result = gui_agent(TASK, max_steps=4, desktop=desktop, settle_timeout=0.2)
        bodies = [json.dumps(r.body) for r in server.requests]
    assert bodies and all(EMAIL not in body for body in bodies)
    assert any("<EMAIL_1>" in body for body in bodies)
    assert desktop.state()["name"] == EMAIL
    assert result.success
    assert EMAIL in json.dumps(session.dag.find(name="gui_agent")[0].input)  # the DAG keeps it
