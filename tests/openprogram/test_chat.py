"""Multi-turn chat: the session is the conversation (chat.py), and `openprogram chat`
driven over a pipe against the shipped local server."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from openprogram import Runtime, ScriptedModel, Session
from openprogram.chat import chat_turn
from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[2]


def said(messages: list[dict]) -> str:
    """Everything a request's messages say, as one text."""
    parts = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            parts.append(content)
        else:
            parts += [p.get("text", "") for p in content]
    return "\n".join(parts)


def test_each_turn_sees_the_earlier_messages_and_answers(tmp_path):
    model = ScriptedModel(["Hello Ada.", "You are Ada."])
    store = str(tmp_path / "chat.db")
    with Session(store) as session, Runtime(model):
        assert chat_turn(session, "I am Ada.") == "Hello Ada."
    with Session.open(store, session.id) as reopened, Runtime(model):
        assert chat_turn(reopened, "Who am I?") == "You are Ada."
    second = said(model.requests[1].messages)
    assert "I am Ada." in second and "Hello Ada." in second and "Who am I?" in second
    users = reopened.dag.find(kind="user")
    assert [u.input for u in users] == ["I am Ada.", "Who am I?"]
    assert [n.output for n in reopened.dag.find(name="respond", kind="code")] == [
        "Hello Ada.",
        "You are Ada.",
    ]


def chat(server: OpenAIServer, store: Path, lines: str, *more: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "chat",
         "--model", "openai/local", "--api-base", server.url, "--store", str(store), *more],
        input=lines, capture_output=True, text=True, timeout=120,
        env={**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


def test_the_chat_command_streams_answers_and_continues_a_session(tmp_path):
    def answer(body: dict) -> str:
        return f"Heard {said(body['messages']).count('user: ')} message(s)."

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
    last = said(requests[-1].body["messages"])
    assert "I am Ada." in last and "My cat is Tom." in last and "Heard 2 message(s)." in last
    assert "never sent" not in last


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
