"""Multi-turn chat: the session is the conversation (chat.py), sent as real user,
assistant and tool messages (issue 36.4), and `openprogram chat` driven over a pipe
against the shipped local server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram import Runtime, ScriptedModel, Session, UsageError, agentic_function, llm
from openprogram.render.render import render_context
from openprogram.session.chat import chat_turn
from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[3]


def test_each_turn_sees_the_earlier_turns_as_user_and_assistant_messages(tmp_path):
    model = ScriptedModel(["Hello Ada.", "You are Ada."])
    store = str(tmp_path / "chat.db")
    with Session(store) as session, Runtime(model, system="Be brief."):
        assert chat_turn(session, "I am Ada.") == "Hello Ada."
    with Session.open(store, session.id) as reopened, Runtime(model, system="Be brief."):
        assert chat_turn(reopened, "Who am I?") == "You are Ada."
    assert model.requests[1].messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "I am Ada."},
        {"role": "assistant", "content": "Hello Ada."},
        {"role": "user", "content": "Who am I?"},
    ]
    turns = reopened.dag.find(name="respond", kind="code")
    assert [(t.input["message"], t.output) for t in turns] == [
        ("I am Ada.", "Hello Ada."),
        ("Who am I?", "You are Ada."),
    ]


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


TOOL_ROUND = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}


@pytest.mark.slow
def test_earlier_tool_rounds_go_as_tool_calls_and_tool_messages_over_http():
    script = [TOOL_ROUND, "It is 5.", "You are welcome."]
    with OpenAIServer(script) as server, Session() as session:
        runtime = Runtime("openai/local", api_base=server.url, api_key="test")
        with runtime:
            assert chat_turn(session, "What is 2+3?", tools=[add]) == "It is 5."
            assert chat_turn(session, "Thanks!", tools=[add]) == "You are welcome."
        received = [request.body["messages"] for request in server.requests]
    (call,) = received[1][1]["tool_calls"]
    assert received[2] == [
        {"role": "user", "content": "What is 2+3?"},
        {"role": "assistant", "tool_calls": [call]},  # litellm leaves out content: None
        {"role": "tool", "content": "5", "tool_call_id": call["id"]},
        {"role": "assistant", "content": "It is 5."},
        {"role": "user", "content": "Thanks!"},
    ]
    assert call["function"] == {"name": "add", "arguments": '{"a": 2, "b": 3}'}
    for node in session.dag.find(kind="llm"):  # what each exchange saw can be rebuilt
        seen = render_context(session.dag, node.parent, before=node.seq, content=node.input)
        assert seen.messages_hash == node.messages_hash


def test_other_llm_exposed_calls_render_their_tool_rounds_as_before():
    """Only a chat's turns reveal their tool results: any other call's messages (and so
    the hashes that resume and replay compare) are what they were."""

    @agentic_function(expose="llm")
    def answer(question: str) -> str:
        return llm(question, tools=[add])

    model = ScriptedModel([TOOL_ROUND, "5", "ok"])
    with Session(), Runtime(model):
        answer("2+3?")
        answer("and?")
    assert model.requests[2].messages == [
        {"role": "user", "content": "2+3?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": '[calls add({"a": 2, "b": 3})]'},
                {"type": "text", "text": "5"},
            ],
        },
        {"role": "user", "content": "and?"},
    ]


def test_a_turn_outside_its_session_is_a_usage_error():
    session = Session()
    with Session(), Runtime(ScriptedModel(["hi"])), pytest.raises(UsageError, match="enter it"):
        chat_turn(session, "Hello")


def chat(server: OpenAIServer, store: Path, lines: str, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "chat",
         "--model", "openai/local", "--api-base", server.url, "--store", str(store), *more],
        input=lines, capture_output=True, text=True, timeout=120,
        env={**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.slow
def test_the_chat_command_streams_answers_and_continues_a_session(tmp_path):
    def answer(body: dict) -> str:
        users = [m for m in body["messages"] if m["role"] == "user"]
        return f"Heard {len(users)} message(s)."

    store = tmp_path / "chat.db"
    with OpenAIServer(answer) as server:
        first = chat(server, store, "I am Ada.\n\nMy cat is Tom.\n")
        session_id = re.search(r"session (\w+)", first.stderr).group(1)  # type: ignore[union-attr]
        second = chat(server, store, "What is my cat called?\n/exit\nnever sent\n",
                      "--session", session_id)  # fmt: skip
        requests = server.requests

    assert first.returncode == 0, first.stderr
    assert first.stdout == "Heard 1 message(s).\nHeard 2 message(s).\n"
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Heard 3 message(s).\n"
    assert "continuing after 2 message(s)" in second.stderr
    assert len(requests) == 3 and all(r.body["stream"] is True for r in requests)
    assert requests[-1].body["messages"] == [
        {"role": "user", "content": "I am Ada."},
        {"role": "assistant", "content": "Heard 1 message(s)."},
        {"role": "user", "content": "My cat is Tom."},
        {"role": "assistant", "content": "Heard 2 message(s)."},
        {"role": "user", "content": "What is my cat called?"},
    ]


@pytest.mark.slow
def test_the_printed_continue_command_works_when_pasted(tmp_path, monkeypatch):
    import shlex

    store = tmp_path / "chat.db"
    with OpenAIServer(lambda body: "Noted.") as server:
        first = chat(server, store, "I am Ada.\n", "--system", "Be 'brief'; no jokes.")
        line = first.stderr.split("continue it later with: ", 1)[1].splitlines()[0]
        words = shlex.split(line)
        assert words[:2] == ["openprogram", "chat"]
        assert words[words.index("--store") + 1] == str(store)
        assert words[words.index("--api-base") + 1] == server.url
        assert words[words.index("--system") + 1] == "Be 'brief'; no jokes."
        monkeypatch.chdir(tmp_path.parent)  # pasted elsewhere: the store is still found
        pasted = subprocess.run(
            [sys.executable, "-c", "from openprogram.cli import main; main()", *words[1:]],
            input="And again.\n", capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    assert pasted.returncode == 0, pasted.stderr
    assert "continuing after 1 message(s)" in pasted.stderr
