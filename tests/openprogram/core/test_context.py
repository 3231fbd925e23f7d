"""The call context: one frozen value per call, replaced (never changed) as calls nest."""

from __future__ import annotations

import dataclasses
import threading

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.core import _context


def test_each_call_runs_in_a_context_of_its_own_and_the_callers_is_left_as_it_was():
    seen: list[_context.CallContext] = []

    @agentic_function
    def inner() -> None:
        seen.append(_context.call_context())

    @agentic_function
    def outer() -> None:
        seen.append(_context.call_context())
        inner()
        seen.append(_context.call_context())

    with Session() as session, Runtime(ScriptedModel([])) as runtime:
        before = _context.call_context()
        outer()
        assert _context.call_context() is before
    outer_node, inner_node = session.dag.nodes
    first, nested, after = seen
    assert (first.frame, nested.frame, after.frame) == (outer_node.id, inner_node.id, outer_node.id)
    assert first is after  # the caller's context came back, the same object
    assert first.session is session and first.runtime is runtime
    with pytest.raises(dataclasses.FrozenInstanceError):
        first.frame = None  # type: ignore[misc]


def test_a_context_entered_for_a_block_holds_only_inside_it_and_only_in_this_thread():
    seen: list[str | None] = []
    with _context.entered(frame="f1") as inside:
        assert _context.frame_id() == "f1" and inside.frame == "f1"
        worker = threading.Thread(target=lambda: seen.append(_context.frame_id()))
        worker.start()
        worker.join()
    assert _context.frame_id() is None and seen == [None]


def test_the_compactor_and_a_tool_call_do_not_leak_into_the_calls_inside():
    @agentic_function
    def summarize(text: str) -> str:
        return text[:5]

    inner_seen: list[_context.CallContext] = []

    @agentic_function
    def helper() -> str:
        inner_seen.append(_context.call_context())
        return "ok"

    @agentic_function(compactor=summarize)
    def work() -> str:
        return str(llm("go", tools=[helper]))

    model = ScriptedModel([{"tool_calls": [{"name": "helper", "arguments": {}}]}, "done"])
    with Session(), Runtime(model):
        assert work() == "done"
    (inside,) = inner_seen
    assert inside.compactor is summarize  # the innermost running function's own
    assert inside.tool_call is None  # taken by the call that answers it
