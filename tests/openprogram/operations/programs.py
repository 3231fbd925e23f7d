"""Programs the operations tests run in child processes (killed and resumed).

`python -m tests.openprogram.operations.programs STORE SESSION LOG ROUNDS EFFECT` runs an
agent whose model asks, in each of ROUNDS rounds, for two tool calls that each return one
operation appending to LOG; it resumes the session when it exists.
"""

from __future__ import annotations

import sys
from typing import Any

from openprogram import Runtime, ScriptedModel, Session, llm
from openprogram.operations import Operation, operation_tool, operation_tools
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds

PER_ROUND = 2


def responder(rounds: int) -> Any:
    def reply(request: Any) -> Any:
        done = sum(1 for m in request.messages if m["role"] == "tool")
        round = done // PER_ROUND
        if round >= rounds:
            return "all done"
        names = [f"r{round}-{i}" for i in range(PER_ROUND)]
        return {"tool_calls": [{"name": "step", "arguments": {"name": n}} for n in names]}

    return reply


def main(store: str, session: str, log: str, rounds: int, effect: str) -> None:
    kind = "test.append" if effect == "idempotent" else "test.append_once"

    @operation_tool
    def step(name: str) -> Operation:
        """Do one step of the work."""
        return Operation(kind, {"log": log, "name": name, "sleep_s": 0.03})

    with (
        Session.open(store, session, resume=True, create=True),
        Runtime(ScriptedModel(responder(rounds))),
    ):
        print(llm("work", tools=[step], max_tool_turns=rounds + 1))


def background(store: str, session: str, log: str) -> None:
    """Start one background operation (0.5 s long), then wait for it through the tool."""

    @operation_tool(background=True)
    def build() -> Operation:
        """Start the build."""
        return Operation("test.append", {"log": log, "name": "build", "sleep_s": 0.5})

    start = {"tool_calls": [{"name": "build", "arguments": {}}]}
    with Session.open(store, session, resume=True, create=True) as opened:
        with Runtime(ScriptedModel(lambda r: "started" if _answered(r) else start)):
            llm("build it", tools=[build])
        (record,) = opened.operations()
        wait = {"tool_calls": [{"name": "wait_operation", "arguments": {"operation": record.id}}]}
        with Runtime(ScriptedModel(lambda r: "waited" if _answered(r) else wait)):
            print(llm("is it built?", tools=operation_tools()))


def _answered(request: Any) -> bool:
    return any(m["role"] == "tool" for m in request.messages[-1:])


if __name__ == "__main__":
    if sys.argv[4] == "background":
        background(sys.argv[1], sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
