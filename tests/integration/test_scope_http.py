"""Which session records, over real HTTP: litellm to the shipped local server, with no
Session (the note, once) and with nested Sessions (the innermost records)."""

from __future__ import annotations

import logging

from openprogram import Runtime, Session, agentic_function, current_session, llm
from openprogram.agentic._resume import forget_notes
from openprogram.core import _context
from openprogram.testing import OpenAIServer


@agentic_function
def ask(question: str) -> str:
    return llm(question)


def test_no_session_notes_once_and_nested_sessions_keep_their_own_calls(caplog):
    caplog.set_level(logging.WARNING, "openprogram")
    _context.reset_default_session()
    forget_notes()
    try:
        with OpenAIServer(["one", "two", "three", "four"]) as server:
            runtime = Runtime("openai/local", api_base=server.url, api_key="test")
            with runtime:
                assert ask("first?") == "one"
                assert ask("second?") == "two"
                default = current_session()
                with Session() as outer:
                    assert ask("outer?") == "three"
                    with Session() as inner:
                        assert ask("inner?") == "four"
    finally:
        _context.reset_default_session()
    notes = [r for r in caplog.records if "default session" in r.getMessage()]
    assert len(notes) == 1 and "inside ask()" in notes[0].getMessage()
    assert [n.input for n in default.dag.find(name="ask", kind="code")] == [
        {"question": "first?"},
        {"question": "second?"},
    ]
    assert [n.output for n in outer.dag.find(kind="llm")] == ["three"]
    assert [n.output for n in inner.dag.find(kind="llm")] == ["four"]
