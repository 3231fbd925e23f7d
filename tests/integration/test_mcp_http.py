"""MCP tools in a tool loop through litellm over HTTP to the local OpenAI-compatible
server: the filesystem reference server on a temp folder (stdio), and server-everything
over streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from openprogram import ConfigError, Runtime, Session, agentic_function, llm
from openprogram.mcp import MCPServer
from openprogram.testing import OpenAIServer
from tests.support.mcp_servers import free_port, npm_server, wait_for_port

KEY = "sk-test-0123456789abcdefghij"


@pytest.fixture
def model():
    with OpenAIServer(default_reply=None) as running:
        yield running


def runtime_for(server: OpenAIServer) -> Runtime:
    return Runtime("openai/test-model", api_base=server.url, api_key=KEY)


def start_everything(port: int) -> subprocess.Popen:
    argv = [*npm_server("server-everything"), "streamableHttp"]
    process = subprocess.Popen(
        argv, env={**os.environ, "PORT": str(port)}, stderr=subprocess.DEVNULL
    )
    wait_for_port(port, process)
    return process


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(timeout=10)


@pytest.fixture(scope="module")
def everything_http():
    port = free_port()
    process = start_everything(port)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)


@agentic_function
def organise(task: str, tools: list) -> str:
    return llm(task, tools=tools, max_tool_turns=4)


def test_an_agent_writes_and_reads_files_through_the_filesystem_server(model, tmp_path):
    folder = tmp_path / "notes"
    folder.mkdir()
    target = str(folder / "todo.txt")
    model.reply(
        tool_calls=[
            {"name": "files_write_file", "arguments": {"path": target, "content": "buy milk"}}
        ]
    )
    model.reply(tool_calls=[{"name": "files_read_text_file", "arguments": {"path": target}}])
    model.reply(tool_calls=[{"name": "files_read_text_file", "arguments": {"path": "/etc/passwd"}}])
    model.reply("The note says: buy milk")
    argv = [*npm_server("server-filesystem"), str(folder)]
    with (
        MCPServer.stdio(argv, name="files") as files,
        Session() as session,
        runtime_for(model),
    ):
        answer = organise("Write a todo note, then read it back.", files.tools())
    assert answer == "The note says: buy milk"
    assert (folder / "todo.txt").read_text() == "buy milk"
    first = model.requests[0].body
    offered = {tool["function"]["name"]: tool["function"] for tool in first["tools"]}
    assert offered["files_write_file"]["parameters"]["required"] == ["path", "content"]
    top, written, read, refused = session.dag.find(kind="code")
    assert top.name == "organise" and top.status == "completed"  # tools as an argument
    assert written.meta["mcp"] == {"server": "files", "tool": "write_file"}
    assert read.output == {"content": "buy milk"}  # its structured result
    assert refused.status == "error" and "Access denied" in refused.error  # outside the folder
    tool_messages = [m for m in model.requests[3].body["messages"] if m["role"] == "tool"]
    assert json.loads(tool_messages[1]["content"]) == {"content": "buy milk"}
    assert tool_messages[2]["content"].startswith("error: MCPServerError: files/read_text_file")


def test_server_everything_over_streamable_http_in_a_tool_loop(model, everything_http):
    model.reply(
        tool_calls=[
            {"name": "everything_echo", "arguments": {"message": "over http"}},
            {"name": "everything_get-sum", "arguments": {"a": 20, "b": 22}},
        ]
    )
    model.reply("42, and the echo came back")
    with (
        MCPServer.http(
            everything_http, name="everything", headers={"X-Client": "openprogram-tests"}
        ) as everything,
        Session() as session,
        runtime_for(model),
    ):
        assert organise("echo and add", everything.tools()) == "42, and the echo came back"
        assert everything.transport == "http"
    echo, total = session.dag.find(kind="code")[1:]
    assert echo.output == "Echo: over http"
    assert "42" in total.output
    sent = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert sent[0]["content"] == "Echo: over http"
    assert json.dumps(model.requests[0].body["tools"]).count("everything_") >= 10


def test_an_http_server_restarted_between_calls_gets_a_new_session():
    port = free_port()
    process = start_everything(port)
    try:
        with MCPServer.http(f"http://127.0.0.1:{port}/mcp", name="everything") as server:
            echo = server.tool("echo")
            with Session() as session:
                assert echo(message="before") == "Echo: before"
                stop(process)  # the new process knows nothing of our session
                process = start_everything(port)
                assert echo(message="after") == "Echo: after"
            assert server.restarts == 1
    finally:
        stop(process)
    assert [n.status for n in session.dag.find(kind="code")] == ["completed", "completed"]


def test_an_http_server_that_is_not_there_is_a_config_error():
    port = free_port()
    server = MCPServer.http(f"http://127.0.0.1:{port}/mcp", name="gone", init_timeout=5)
    with pytest.raises(ConfigError, match="MCP server 'gone'"), server:
        pass
