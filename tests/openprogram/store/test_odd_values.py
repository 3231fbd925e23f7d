"""Values no session may choke on: lone surrogates, 5 000-deep nesting, cycles, broken
containers. Each is recorded (escaped or as a marker) in every store, and a later llm()
still works; what cannot be recorded is counted in failed_writes, never silently absent."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.core.values import MAX_DEPTH
from openprogram.render.render import render_context

FILENAME = b"caf\xe9-\xff.txt".decode("utf-8", "surrogateescape")


@agentic_function
def look(name: Any) -> str:
    return llm(f"describe {name}")


@agentic_function
def keep(value: Any) -> int:
    return 1


def deep(levels: int) -> list[Any]:
    outer: list[Any] = []
    inner = outer
    for _ in range(levels):
        inner.append([])
        inner = inner[0]
    return outer


def stored(store: Any, session_id: str) -> list[Any]:
    with Session.open(store, session_id) as reopened:
        return reopened.dag.nodes


def echo(request: Any) -> str:
    return "seen: " + request.text[-20:]


def test_a_surrogate_argument_is_recorded_and_later_llm_calls_work(store):
    with Session(store) as session, Runtime(ScriptedModel(echo)):
        first = look(FILENAME)
        assert look("plain") == "seen: describe plain"
    assert first.startswith("seen: ")
    assert [n.status for n in session.dag.nodes] == ["completed"] * 4
    assert session.failed_writes == 0
    nodes = stored(store, session.id)
    assert [n.status for n in nodes] == ["completed"] * 4
    assert nodes[0].input == {"name": FILENAME}  # the exact string, surrogates and all
    assert FILENAME in nodes[1].input
    assert nodes[1].messages_hash == session.dag.nodes[1].messages_hash


def test_a_surrogate_reaches_the_model_as_a_replacement_character():
    model = ScriptedModel(["ok"])
    with Session(), Runtime(model):
        look(FILENAME)
    parts = model.requests[0].messages[-1]["content"]
    assert parts[-1]["text"] == "describe caf\ufffd-\ufffd.txt"
    for part in parts:
        part["text"].encode("utf-8")  # what goes over HTTP is valid UTF-8


@pytest.mark.slow
def test_a_5000_deep_argument_is_recorded_with_a_marker(store):
    with Session(store) as session, Runtime(ScriptedModel(echo)):
        assert keep(deep(5000)) == 1
        assert look("after").startswith("seen")
    assert session.failed_writes == 0
    (node, *_) = stored(store, session.id)
    assert node.name == "keep" and node.status == "completed"
    value, levels = node.input["value"], 0
    while isinstance(value, list):
        (value,), levels = value, levels + 1
    deeper = {"$opaque": "builtins.list", "$why": f"nested deeper than {MAX_DEPTH} levels"}
    assert (levels, value) == (MAX_DEPTH - 1, deeper)  # a call taking it runs again on resume


def test_cycles_are_recorded_as_markers(store):
    loop: list[Any] = [1]
    loop.append(loop)
    table: dict[str, Any] = {"name": "t"}
    table["self"] = table
    shared = [1, 2]
    with Session(store) as session, Runtime(ScriptedModel(echo)):
        keep(loop)
        keep({"table": table, "twice": [shared, shared]})
        assert look("after").startswith("seen")
    assert session.failed_writes == 0
    nodes = stored(store, session.id)
    cycle = {"$opaque": "builtins.list", "$why": "cycle"}
    assert nodes[0].input == {"value": [1, cycle]}  # calls taking them run again on resume
    table_cycle = {"$opaque": "builtins.dict", "$why": "cycle"}
    assert nodes[1].input == {
        "value": {"table": {"name": "t", "self": table_cycle}, "twice": [[1, 2], [1, 2]]}
    }
    text = render_context(session.dag).text()  # renders show the old markers
    assert '[keep #1] input={"value": [1, "<cycle: list>"]}' in text


class Broken(Mapping[str, Any]):
    """A mapping whose items cannot be read: its call cannot be recorded."""

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        raise OSError("the backing file is gone")

    def __len__(self) -> int:
        return 1

    def __repr__(self) -> str:
        raise OSError("no repr either")


@agentic_function
def outer() -> int:
    return keep(Broken()) + 1


def test_a_call_that_cannot_be_recorded_is_counted_and_noted(store):
    with Session(store) as session:
        assert outer() == 2
    assert session.failed_writes == 1
    (frame,) = session.dag.nodes
    assert frame.meta["unrecorded"] == ["keep: OSError: the backing file is gone"]
    (node,) = stored(store, session.id)
    assert node.meta["unrecorded"] == frame.meta["unrecorded"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=st.text(st.characters(exclude_categories=()), max_size=40))
@pytest.mark.slow
def test_any_text_round_trips_through_the_store(store, text):
    session_id = uuid.uuid4().hex[:12]
    with Session(store, id=session_id) as session, Runtime(ScriptedModel(lambda r: text)):
        assert look(text) == text
        assert look("again") == text
    assert session.failed_writes == 0
    nodes = stored(store, session_id)
    assert [n.status for n in nodes] == ["completed"] * 4
    assert nodes[0].input == {"name": text} and nodes[0].output == text
    assert [n.messages_hash for n in nodes] == [n.messages_hash for n in session.dag.nodes]


@pytest.mark.parametrize("levels", [MAX_DEPTH - 2, MAX_DEPTH - 1])
def test_the_depth_limit_counts_from_the_arguments(levels):
    with Session() as session:  # {"value": [ ... ]}: the innermost list is levels + 1 deep
        keep(deep(levels))
    text = str(session.dag.nodes[0].input)
    assert ("nested deeper" in text) == (levels + 1 >= MAX_DEPTH)


def test_a_run_with_a_surrogate_argument_resumes(durable_store):
    state = {"fail": True}

    @agentic_function
    def run() -> str:
        text = look(FILENAME)
        if state["fail"]:
            raise RuntimeError("stopped halfway")
        return text

    recording = Session(durable_store, id="odd")
    with recording as session, Runtime(ScriptedModel(echo)), pytest.raises(RuntimeError):
        run()
    state["fail"] = False
    model = ScriptedModel([])
    with Session.open(durable_store, "odd", resume=True), Runtime(model):
        assert run() == session.dag.find(name="look", kind="code")[0].output
    assert model.requests == []  # the recorded exchange was replayed, not asked again
