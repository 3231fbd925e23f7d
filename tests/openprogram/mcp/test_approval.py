"""An MCP tool needing approval shows the person every argument the call will use, with
no control character a terminal would act on (a real MCP server over stdio)."""

from __future__ import annotations

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm, needs_approval
from openprogram.mcp import MCPServer
from tests.support.mcp_servers import fault_server


@pytest.fixture
def faults():
    with MCPServer.stdio(fault_server(), name="faults", timeout=5) as server:
        yield server


def test_an_mcp_approval_shows_every_argument_escaped(faults):
    arguments = {"message": "fine " * 200, "\x1b[2J\x1b[Hnote\x1b]0;owned\x07": "/root/.ssh/id_rsa"}
    script = {"agent": [{"tool_calls": [{"name": "faults_echo", "arguments": arguments}]}, "ok"]}
    asked: list[str] = []

    def ask(question):
        asked.append(question.text)
        return "no"

    @agentic_function
    def agent(task: str) -> str:
        return llm(task, tools=[needs_approval(faults.tool("echo"))])

    with Session(), Runtime(ScriptedModel(script), ask=ask):
        assert agent("echo") == "ok"
    (text,) = asked
    assert "\x1b" not in text and "\x07" not in text
    assert text.endswith(r"\x1b[2J\x1b[Hnote\x1b]0;owned\x07='/root/.ssh/id_rsa')?")
    assert text.startswith("Allow faults_echo(message='fine fine") and "characters elided" in text
