"""`openprogram mcp serve` as a real process, driven by the mcp SDK's own client over
stdio and over streamable HTTP; every call a session in the store."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import threading

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.memory import create_client_server_memory_streams

from openprogram import Session, agentic_function
from openprogram.cli import cli
from openprogram.errors import ConfigError
from openprogram.mcp.serve import build_server, find_function
from openprogram.store import MemoryStore, open_store
from openprogram.testing import OpenAIServer
from tests.support import mcp_functions
from tests.support.mcp_servers import ROOT, openprogram_command
from tests.support.mcp_serving import served

FUNCTIONS = "tests.support.mcp_functions"
TARGETS = [f"{FUNCTIONS}:{name}" for name in ("add", "forecast", "broken", "red_square")]


async def exercise(session: ClientSession) -> dict:
    await session.initialize()
    listing = (await session.list_tools()).tools
    results = {
        "tools": {tool.name: tool for tool in listing},
        "add": await session.call_tool("add", {"a": 2, "b": 3}),
        "forecast": await session.call_tool("forecast", {"city": "Oslo"}),
        "broken": await session.call_tool("broken", {"reason": "testing"}),
        "red_square": await session.call_tool("red_square", {"size": 4}),
        "bad": await session.call_tool("add", {"a": "two"}),
        "unknown": await session.call_tool("nope", {}),
    }
    return results


def check(results: dict, store: str) -> None:
    tools = results["tools"]
    assert sorted(tools) == ["add", "broken", "forecast", "red_square"]
    assert tools["add"].description == "Add two integers."
    assert tools["add"].input_schema == mcp_functions.add.spec["parameters"]
    added = results["add"]
    assert not added.is_error and added.content[0].text == "5"
    weather = results["forecast"]
    assert weather.structured_content == {"city": "Oslo", "temperature": 21}
    broken = results["broken"]
    assert broken.is_error
    assert broken.content[0].text == "RuntimeError: broken on purpose: testing"
    caption, image = results["red_square"].content
    assert caption.text == "a red 4x4 square"
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG")
    assert results["bad"].is_error and "invalid arguments for add" in results["bad"].content[0].text
    assert (
        results["unknown"].is_error
        and "there is no tool 'nope'" in results["unknown"].content[0].text
    )
    session_id = added.meta["openprogram/session"]
    with Session.open(store, session_id) as recorded:
        (node,) = recorded.dag.find(name="add")
        assert node.input == {"a": 2, "b": 3} and node.output == 5
    with Session.open(store, broken.meta["openprogram/session"]) as recorded:
        (node,) = recorded.dag.find(name="broken")
        assert node.status == "error" and "broken on purpose" in node.error


@pytest.mark.slow
def test_served_over_stdio_to_the_sdks_client(tmp_path):
    store = str(tmp_path / "served.db")
    parameters = StdioServerParameters(
        command=openprogram_command()[0],
        args=[*openprogram_command("mcp", "serve", *TARGETS, "--store", store)[1:]],
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        cwd=ROOT,
    )

    async def main():
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            return await exercise(session)

    check(asyncio.run(main()), store)


@pytest.mark.slow
def test_served_over_streamable_http_to_the_sdks_client(tmp_path):
    store = str(tmp_path / "served.db")
    token_file = tmp_path / "token"
    with served(*TARGETS, "--store", store, "--token-file", str(token_file)) as server:

        async def main():
            async with (
                create_mcp_http_client(headers=server.auth) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                return await exercise(session)

        check(asyncio.run(main()), store)


@pytest.mark.slow
def test_what_a_server_sends_is_scrubbed_of_secrets_as_what_it_stores(tmp_path):
    store = str(tmp_path / "served.db")
    password = "hunter2-correct-horse-battery"
    argv = openprogram_command(
        "mcp", "serve", f"{FUNCTIONS}:sign_in", f"{FUNCTIONS}:settings", "--store", store
    )
    parameters = StdioServerParameters(
        command=argv[0],
        args=argv[1:],
        env={"PYTHONPATH": str(ROOT), "SERVICE_PASSWORD": password},
        cwd=ROOT,
    )

    async def main():
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return (
                await session.call_tool("sign_in", {"user": "ada"}),
                await session.call_tool("settings", {}),
                await session.call_tool("sign_in", {"user": password}),
            )

    failed, returned, echoed = asyncio.run(main())
    for result in (failed, returned, echoed):
        assert password not in result.model_dump_json()
    assert failed.is_error
    assert failed.content[0].text == "PermissionError: login failed for ada with ***"
    assert returned.structured_content == {"user": "ada", "password": "***"}
    assert echoed.content[0].text == "PermissionError: login failed for *** with ***"
    with Session.open(store, failed.meta["openprogram/session"]) as recorded:
        (node,) = recorded.dag.find(name="sign_in")
        assert node.error == "PermissionError: login failed for ada with ***"


@pytest.mark.slow
def test_a_served_agent_asks_the_model_given_by_model_and_api_base(tmp_path):
    store = str(tmp_path / "served.db")
    with OpenAIServer(default_reply="A short summary, five words.") as model:
        argv = openprogram_command(
            "mcp", "serve", "tests.support.mcp_functions:summarise",
            "--store", store, "--model", "openai/test-model", "--api-base", model.url,
        )  # fmt: skip
        parameters = StdioServerParameters(
            command=argv[0],
            args=argv[1:],
            cwd=ROOT,
            env={
                "PYTHONPATH": str(ROOT),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "OPENAI_API_KEY": "sk-test-0123456789abcdefghij",
            },
        )

        async def main():
            async with (
                stdio_client(parameters) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return await session.call_tool("summarise", {"text": "a long story"})

        result = asyncio.run(main())
        assert model.requests[0].body["model"] == "test-model"
    assert not result.is_error, result.content
    assert result.content[0].text == "A short summary, five words."
    with Session.open(store, result.meta["openprogram/session"]) as recorded:
        assert [(n.kind, n.name) for n in recorded.dag.nodes] == [
            ("code", "summarise"),
            ("llm", "summarise"),
        ]


def test_find_function_says_what_is_wrong():
    assert find_function("tests.support.mcp_functions:add") is mcp_functions.add
    with pytest.raises(ConfigError, match="not an agentic function"):
        find_function("tests.support.mcp_functions:plain")
    with pytest.raises(ConfigError, match="has no 'missing'"):
        find_function("tests.support.mcp_functions:missing")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module'"):
        find_function("no_such_module:f")
    with pytest.raises(ConfigError, match="neither MODULE:FUNCTION nor a registered tool"):
        find_function("no_such_tool")


def test_the_command_reports_a_bad_target_without_a_traceback():
    result = CliRunner().invoke(cli, ["mcp", "serve", "tests.support.mcp_functions:plain"])
    assert result.exit_code == 1
    assert "is not an agentic function" in result.output
    assert "Traceback" not in result.output


def test_an_async_function_is_awaited_and_cancelled_at_once_with_its_call():
    started = threading.Event()

    @agentic_function
    async def greet(name: str) -> str:
        """Greet someone."""
        await asyncio.sleep(0)
        return f"hello {name}"

    @agentic_function
    async def wait_forever() -> str:
        """Never answers by itself."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    store = MemoryStore()
    server = build_server([greet, wait_forever], store=store)
    greeted: list = []

    async def main() -> None:
        with anyio.fail_after(60):
            async with (
                create_client_server_memory_streams() as (client, served),
                anyio.create_task_group() as group,
            ):
                options = server.create_initialization_options()
                group.start_soon(server.run, served[0], served[1], options)
                async with ClientSession(client[0], client[1]) as session:
                    await session.initialize()
                    greeted.append(await session.call_tool("greet", {"name": "Ada"}))
                    async with anyio.create_task_group() as calls:
                        calls.start_soon(session.call_tool, "wait_forever", {})
                        await anyio.to_thread.run_sync(started.wait, 30)
                        calls.cancel_scope.cancel()
                group.cancel_scope.cancel()  # the server waits for the call to end first

    anyio.run(main)
    assert greeted[0].content[0].text == "hello Ada"  # not "<coroutine object ...>"
    (info,) = [i for i in store.list_sessions() if i.id != greeted[0].meta["openprogram/session"]]
    (node,) = Session.open(store, info.id).dag.find(name="wait_forever")
    assert node.status == "cancelled" and node.output is None


@pytest.mark.slow
def test_a_stdio_call_whose_client_leaves_stops_before_its_next_model_request(tmp_path):
    asked, answer = threading.Event(), threading.Event()

    def respond(body: dict) -> str:
        asked.set()
        answer.wait(30)
        return "ok"

    store = str(tmp_path / "served.db")
    with OpenAIServer(respond) as model:
        argv = openprogram_command(
            "mcp", "serve", f"{FUNCTIONS}:chatter", "--store", store,
            "--model", "openai/test-model", "--api-base", model.url,
        )  # fmt: skip
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            "OPENAI_API_KEY": "sk-test-0123456789abcdefghij",
        }
        server = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        try:
            client = {"name": "t", "version": "1"}
            hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": client}
            send(server, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
            assert '"id":1' in server.stdout.readline()
            send(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            call = {"name": "chatter", "arguments": {"rounds": 30}}
            send(server, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
            assert asked.wait(60)
            server.stdin.close()  # the client leaves mid-call
            answer.set()
            assert server.wait(60) == 0
        finally:
            if server.poll() is None:
                server.kill()
            server.stdout.close()
        assert len(model.requests) == 1
    opened, _ = open_store(store)
    (info,) = opened.list_sessions()
    opened.close()
    recorded = Session.open(store, info.id)
    (node,) = recorded.dag.find(name="chatter", kind="code")
    recorded.close()
    assert node.status == "stopped"


def send(process: subprocess.Popen, message: dict) -> None:
    process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
