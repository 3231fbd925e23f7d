"""Which session records: llm() with no Session says once where it went; nested
`with Session():` blocks record into the innermost, the outer keeping its own calls."""

from __future__ import annotations

import logging
import re

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, current_session, llm
from openprogram.agentic._resume import forget_notes
from openprogram.core import _context


@pytest.fixture
def fresh_default():
    _context.reset_default_session()
    forget_notes()
    yield
    _context.reset_default_session()


def test_llm_without_a_session_says_once_where_it_recorded(fresh_default, caplog):
    caplog.set_level(logging.WARNING, "openprogram")
    with Runtime(ScriptedModel(["a", "b"])):
        llm("first")
        llm("second")
    notes = [r.getMessage() for r in caplog.records if "default session" in r.getMessage()]
    assert len(notes) == 1
    assert "outside any @agentic_function (recorded as 'main'" in notes[0]
    assert "with Session('runs.db')" in notes[0] and "current_session().dag" in notes[0]
    assert len(current_session().dag.find(kind="llm")) == 2


def test_inside_a_function_the_note_names_it(fresh_default, caplog):
    caplog.set_level(logging.WARNING, "openprogram")

    @agentic_function
    def summarise(text: str) -> str:
        return llm(f"Summarise {text}")

    with Runtime(ScriptedModel(["short"])):
        summarise("a long text")
    assert "called inside summarise() with no `with Session()`" in caplog.text


def test_no_note_when_a_session_is_given(fresh_default, caplog):
    caplog.set_level(logging.WARNING, "openprogram")
    with Session(), Runtime(ScriptedModel(["a"])):
        llm("first")
    assert "default session" not in caplog.text


@agentic_function
def step(x: int) -> int:
    return x


def test_nested_sessions_record_into_the_innermost_and_the_outer_keeps_its_own():
    inner = []

    @agentic_function
    def job() -> None:
        step(1)
        with Session() as session:
            inner.append(session)
            step(2)
            llm("inside")
        step(3)

    with Session() as outer, Runtime(ScriptedModel(["ok"])):
        job()
    assert [(n.name, n.input) for n in outer.dag.nodes] == [
        ("job", {}),
        ("step", {"x": 1}),
        ("step", {"x": 3}),
    ]
    # inside job's call, the inner session's nodes are its own top-level ones
    assert [(n.kind, n.parent) for n in inner[0].dag.nodes] == [("code", None), ("llm", None)]


def test_the_inner_session_holds_its_calls_as_top_level_nodes(tmp_path):
    store = str(tmp_path / "s.db")
    with Session(store) as outer, Runtime(ScriptedModel(["ok"])):
        step(1)
        with Session(store) as inner:
            step(2)
            llm("inside")
        step(3)
    with Session.open(store, inner.id) as reopened:
        assert [(n.kind, n.name, n.parent) for n in reopened.dag.nodes] == [
            ("code", "step", None),
            ("llm", "main", None),
        ]
    with Session.open(store, outer.id) as reopened:
        assert [n.input for n in reopened.dag.nodes] == [{"x": 1}, {"x": 3}]


def test_a_plain_function_calling_llm_in_a_session_is_named_once_with_the_fix(
    fresh_default, caplog
):
    caplog.set_level(logging.WARNING, "openprogram")

    def review(draft: str) -> str:  # meant to be @agentic_function(render_range=...)
        return llm(f"Approve or reject: {draft}")

    @agentic_function
    def reviewed(draft: str) -> str:
        return llm(f"Approve or reject: {draft}")

    with Session() as session, Runtime(ScriptedModel(["approve"] * 4)):
        review("a")
        review("b")
        reviewed("c")
        llm("a top-level question, written at the top level")  # the test itself: plain too
    notes = [r.getMessage() for r in caplog.records if "not an @agentic_function" in r.getMessage()]
    names = [re.search(r"called from (\w+)\(\)", note).group(1) for note in notes]
    assert names == [
        "review",
        "test_a_plain_function_calling_llm_in_a_session_is_named_once_with_the_fix",
    ]
    assert "recorded as 'main' at the top level" in notes[0]
    assert "Decorate" in notes[0] and "@agentic_function" in notes[0]
    assert [n.name for n in session.dag.find(kind="llm")] == ["main", "main", "reviewed", "main"]


def test_module_level_code_calling_llm_is_not_told_to_decorate(fresh_default, caplog):
    caplog.set_level(logging.WARNING, "openprogram")
    with Session(), Runtime(ScriptedModel(["a"])):
        exec("llm('hello')", {"llm": llm})  # a script's or a notebook cell's top level
    assert "not an @agentic_function" not in caplog.text
