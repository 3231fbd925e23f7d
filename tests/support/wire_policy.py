"""The demo policy over HTTP: `answer(body)` answers a chat-completions request body as
demo_policy would, reading only what crossed the wire (the local OpenAI-compatible
server's responder in the tests where a real model path drives the demo form)."""

from __future__ import annotations

import json
from typing import Any

from gui_harness.demo.policy import demo_policy

__all__ = ["WireRequest", "answer"]


class WireRequest:
    """What demo_policy reads, rebuilt from an HTTP request body alone."""

    def __init__(self, body: dict[str, Any]) -> None:
        parts = body["messages"][-1]["content"]
        texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"]
        lines = [t for t in texts if t.startswith(("[", "user:", "assistant:"))]
        self.history = "\n".join(lines)
        self.text = "\n".join(t for t in texts if t not in lines)
        if "You operate a computer" in self.text:
            self.function = "plan_next_action"
        elif "You check whether" in self.text:
            self.function = "verify_step"
        else:
            self.function = "conclusion"


def answer(body: dict[str, Any]) -> str:
    """demo_policy's reply to the request `body`, as the text a model sends back."""
    return json.dumps(demo_policy(WireRequest(body)))  # type: ignore[arg-type]
