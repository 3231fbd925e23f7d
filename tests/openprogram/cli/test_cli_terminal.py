"""What the `openprogram` command prints carries no control sequence from a model, a tool
or a stored value (a reply cannot set the terminal's title or clipboard); bad answers and
ids are clear errors. Each command runs as its own process over a real SQLite store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram import (
    Runtime,
    RunWaiting,
    ScriptedModel,
    Session,
    agentic_function,
    ask_user,
    llm,
)
from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[3]
OSC = "\x1b]52;c;cm0gLXJmIH4K\x07\x1b]0;owned\x07"  # set the clipboard, then the title
HOSTILE = f"hi{OSC}\x1b[2J\x9b31m\u202eevil"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")


def openprogram(*arguments: str, stdin: str = "", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "openprogram", *arguments],
        input=stdin, capture_output=True, text=True, timeout=120, errors="surrogateescape",
        env={**os.environ, "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "test", **env},
    )  # fmt: skip


def assert_safe(result: subprocess.CompletedProcess) -> None:
    for raw in RAW:
        assert raw not in result.stdout and raw not in result.stderr, (raw, result)
    assert "Traceback" not in result.stderr, result.stderr


@agentic_function
def fetch(url: str) -> str:
    return llm(f"Summarise {url}")


@agentic_function
def broken() -> None:
    raise ValueError(f"bad {OSC}")


@agentic_function
def proceed() -> str:
    return ask_user(f"Proceed?{HOSTILE}", choices=["yes", f"no{HOSTILE}"])


@pytest.fixture
def store(tmp_path: Path) -> str:
    """Session "evil…" (its id holds escapes too) with a hostile reply, error and question."""
    path = str(tmp_path / "runs.db")
    with pytest.raises(RunWaiting), Session(path, id=f"evil{OSC}") as session:
        with Runtime(ScriptedModel([HOSTILE])):
            fetch(f"https://example.com/{HOSTILE}")
        with pytest.raises(ValueError):
            broken()
        proceed()
    assert len(session.pending()) == 1
    return path


@pytest.mark.parametrize(
    "command",
    [
        ["sessions", "list"],
        ["sessions", "show", "evil", "--values"],
        ["sessions", "pending"],
        ["sessions", "pending", "--json"],
        ["sessions", "render", "evil", "llm:fetch#1"],
        ["sessions", "render", "evil", "llm:fetch#1", "--json"],
        ["sessions", "export", "evil", "-o", "-", "-f", "mermaid"],
        ["sessions", "report", "evil", "-o", "-"],
    ],
)
@pytest.mark.slow
def test_session_commands_print_stored_text_with_its_escapes_escaped(store: str, command: Any):
    result = openprogram(*command, "--store", store)
    assert result.returncode == 0, result.stderr
    assert_safe(result)
    if command[1] not in ("export", "report"):  # their labels show names only
        assert "\\x1b]" in result.stdout or "\\u001b]" in result.stdout  # shown, not acted on


@pytest.mark.slow
def test_an_error_of_a_command_is_printed_escaped(store: str):
    result = openprogram("sessions", "fork", "evil", "nowhere#9", "--store", store)
    assert result.returncode == 1 and "Error: " in result.stderr
    assert_safe(result)


@pytest.mark.slow
def test_chat_escapes_the_models_reply():
    with OpenAIServer(lambda body: HOSTILE) as server:
        result = openprogram(
            "chat", "--model", "openai/local", "--api-base", server.url, "--store", "memory",
            stdin="hello\n",
        )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert_safe(result)
    assert result.stdout.startswith("hi\\x1b]52;c;cm0gLXJmIH4K\\x07")


@pytest.mark.slow
def test_a_20000_deep_json_answer_is_a_clear_error(tmp_path: Path):
    store = str(tmp_path / "runs.db")

    @agentic_function
    def choose() -> Any:
        return ask_user("Which?", schema=None, choices=[[1], [2]])

    with pytest.raises(RunWaiting), Session(store, id="deep") as session:
        choose()
    (question,) = session.pending()
    deep = "[" * 20_000 + "]" * 20_000
    result = openprogram("sessions", "answer", "deep", question.id, deep, "--store", store)
    assert result.returncode == 2, result.stderr
    assert "nested too deeply" in result.stderr and "Traceback" not in result.stderr
    nan = openprogram("sessions", "answer", "deep", question.id, "[NaN]", "--store", store)
    assert nan.returncode == 2 and "NaN and infinity are not numbers" in nan.stderr
    assert Session.open(store, "deep").pending() == [question]  # nothing changed


@pytest.mark.slow
def test_a_session_id_that_is_not_utf8_is_a_clear_error(store: str):
    bad = b"\xff\x1b]0;t\x07".decode("utf-8", "surrogateescape")
    for command in (["sessions", "show", bad], ["sessions", "pending", bad]):
        result = openprogram(*command, "--store", store)
        assert result.returncode == 2 and "is not UTF-8 text" in result.stderr, result.stderr
        assert_safe(result)


@pytest.mark.slow
def test_sessions_show_prints_a_long_question_whole(tmp_path: Path):
    from openprogram import needs_approval

    @agentic_function
    def write(content: str, path: str) -> str:
        return "written"

    store = str(tmp_path / "runs.db")
    with pytest.raises(RunWaiting), Session(store, id="long"):
        needs_approval(write)("x" * 600, "/root/.ssh/id_rsa")
    result = openprogram("sessions", "show", "long", "--store", store)
    assert result.returncode == 0, result.stderr
    assert "path='/root/.ssh/id_rsa')?" in result.stdout


@pytest.mark.slow
def test_json_written_to_stdout_stays_valid_and_holds_the_text_exactly(store: str):
    import json

    exported = openprogram("sessions", "export", "evil", "-o", "-", "-f", "json", "--store", store)
    pending = openprogram("sessions", "pending", "--json", "--store", store)
    for result in (exported, pending):
        assert result.returncode == 0, result.stderr
        assert_safe(result)
    texts: list[str] = []
    json.loads(exported.stdout, object_pairs_hook=lambda pairs: texts.extend(
        str(value) for _, value in pairs) or dict(pairs))  # fmt: skip
    assert any(HOSTILE in text for text in texts)
    (question,) = json.loads(pending.stdout)
    assert question["text"] == f"Proceed?{HOSTILE}"
