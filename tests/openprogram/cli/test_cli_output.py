"""`openprogram sessions diff`, `-o -` to stdout, and what `sessions show` marks (tool
calls, resumed calls), over a real SQLite store; one run recorded through litellm over
HTTP to the local server."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram import RunStopped, Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.cli import cli
from openprogram.testing import OpenAIServer


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@agentic_function
def solve(question: str) -> str:
    return llm(question, tools=[add])


def run(*arguments: str, code: int = 0):
    result = CliRunner().invoke(cli, list(arguments), prog_name="openprogram")
    assert result.exit_code == code, result.output
    return result


TOOL = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Session "scripted" (ScriptedModel) and "served" (litellm over HTTP), which differ
    in the final answer."""
    path = tmp_path / "runs.db"
    with Session(str(path), id="scripted"), Runtime(ScriptedModel([TOOL, "It is 5."])):
        solve("2 + 3?")
    with OpenAIServer([TOOL, "It is five."]) as server:
        runtime = Runtime("openai/local", api_base=server.url, api_key="test")
        with Session(str(path), id="served"), runtime:
            solve("2 + 3?")
    monkeypatch.setenv("OPENPROGRAM_STORE", str(path))
    monkeypatch.chdir(tmp_path)
    return path


def test_diff_of_two_sessions_shows_the_calls_that_differ(store):
    result = run("sessions", "diff", "scripted", "served", code=1)
    lines = result.output.splitlines()
    assert lines[0].startswith("--- scripted") and lines[1].startswith("+++ served")
    assert any(line.startswith("-") and "It is 5." in line for line in lines[2:])
    assert any(line.startswith("+") and "It is five." in line for line in lines[2:])
    assert not any(line[:1] in "+-" and "add #1" in line for line in lines[2:])


def test_a_session_compared_with_itself_has_no_differences(store):
    result = run("sessions", "diff", "scripted", "scripted")
    assert result.output.strip() == "no differences"


def test_diff_of_two_llm_calls_shows_what_each_saw_and_replied(store):
    result = run("sessions", "diff", "scripted", "llm:solve#1", "llm:solve#2", code=1)
    assert "+assistant: " in result.output or "+[add #1]" in result.output
    assert "+reply: It is 5." in result.output


@pytest.mark.slow
def test_export_to_stdout(store):
    result = run("sessions", "export", "scripted", "-o", "-", "-f", "mermaid")
    assert result.output.startswith("flowchart") or "graph" in result.output.split("\n")[0]
    assert not (store.parent / "-").exists()
    refused = run("sessions", "export", "scripted", "-o", "-", code=1)
    assert "-f graphml|mermaid|dot|json" in refused.output


@pytest.mark.slow
def test_report_to_stdout(store):
    result = run("sessions", "report", "scripted", "-o", "-")
    assert result.stdout.lstrip().startswith("<!DOCTYPE html>") or "<html" in result.stdout[:200]
    assert not (store.parent / "-").exists()


@pytest.mark.slow
def test_show_marks_tool_calls_and_what_they_were_asked_by(store):
    output = run("sessions", "show", "served").output
    assert "→ tools: add" in output
    assert "add #1" in output and "[tool call]" in output


def test_show_marks_calls_a_resumed_run_continued(tmp_path):
    store = str(tmp_path / "r.db")
    crash = {"on": True}

    @agentic_function
    def job() -> str:
        answer = solve("2 + 3?")
        if crash["on"]:
            raise RunStopped("the process died")
        return answer

    with (
        Session(store, id="run") as first,
        Runtime(ScriptedModel([TOOL, "5"])),
        pytest.raises(RunStopped),
    ):
        job()
    crash["on"] = False
    with Session.open(store, first.id, resume=True), Runtime(ScriptedModel([])):
        assert job() == "5"
    output = run("sessions", "show", "run", "--store", store).output
    [line] = [line for line in output.splitlines() if "job #1" in line]
    assert "[resumed after " in line and " down]" in line  # the downtime said apart


@pytest.mark.slow
def test_a_missing_extra_is_one_line_with_the_install_command(tmp_path):
    import os
    import subprocess
    import sys

    hide = (
        "import sys\n"
        "class Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'miniwob' or name.startswith('miniwob.'):\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Hide())\n"
        "from openprogram.cli import main\n"
        "main(['bench', 'miniwob', '--model', 'oracle', '--seeds', '0'])\n"
    )
    root = Path(__file__).resolve().parents[3]
    result = subprocess.run(
        [sys.executable, "-c", hide], capture_output=True, text=True, timeout=120,
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        'Error: MiniWoB++ needs the bench extra: pip install "openprogram[bench]" '
        "(No module named 'miniwob')"
    ]
