"""`openprogram mcp serve --transport http` as a real process under attack: the token,
Host and Origin checks, a remote bind only on purpose, calls that run side by side, and
calls stopped when their client goes away (issue 32, items 1 and 11; issue 36, item 8).
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading

import anyio
import pytest
from click.testing import CliRunner
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from openprogram import Session
from openprogram.cli import cli
from openprogram.mcp import MCPServer
from openprogram.mcp.serve import DEFAULT_MAX_CALLS
from openprogram.store import open_store
from openprogram.testing import OpenAIServer
from tests.support.mcp_servers import ROOT
from tests.support.mcp_serving import Served, post_initialize, served

FUNCTIONS = "tests.support.mcp_functions"


async def call(server: Served, tool: str, arguments: dict) -> object:
    async with (
        create_mcp_http_client(headers=server.auth) as http,
        streamable_http_client(server.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        return await session.call_tool(tool, arguments)


@pytest.mark.slow
def test_http_needs_this_starts_token_its_own_host_and_no_browser(tmp_path):
    token_file = tmp_path / "serve.token"
    with served(f"{FUNCTIONS}:add", "--store", "memory", "--token-file", str(token_file)) as server:
        assert server.url == f"http://127.0.0.1:{server.port}/mcp"
        assert server.token_file == token_file
        assert stat.S_IMODE(token_file.stat().st_mode) == 0o600
        assert len(server.token) >= 40
        assert server.token not in server.stderr  # not a terminal: only the file has it

        for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": server.token}):
            refused = post_initialize(server.url, **headers)
            assert refused.status_code == 401, headers
            assert refused.headers["www-authenticate"].startswith("Bearer")
            assert "needs its token" in refused.json()["error"]
        assert post_initialize(server.url, **server.auth).status_code == 200

        # with the token, but another Host (DNS rebinding), another port or a web page
        rebinding = post_initialize(
            server.url, Host=f"attacker.example:{server.port}", **server.auth
        )
        assert rebinding.status_code == 421
        assert post_initialize(server.url, Host="127.0.0.1:1", **server.auth).status_code == 421
        page = post_initialize(server.url, Origin=f"http://127.0.0.1:{server.port}", **server.auth)
        assert page.status_code == 403
        assert post_initialize(
            server.url, Host=f"localhost:{server.port}", **server.auth
        ).is_success

        try:  # the SDK's own client, without the token
            anyio.run(streamless_call, server)
        except Exception as exc:  # an ExceptionGroup around the SDK's MCPError
            assert "Server returned an error response" in repr(exc)
        else:
            pytest.fail("the SDK's client called a tool without the token")
        assert anyio.run(call, server, "add", {"a": 2, "b": 3}).content[0].text == "5"

        # our own client, as docs/mcp.md shows it
        with MCPServer.http(server.url, name="ours", headers=server.auth) as ours, Session():
            assert ours.tool("add")(a=4, b=5) == "9"  # an int is sent as text
    assert server.process.returncode is not None
    assert not token_file.exists()  # removed when the server stopped


async def streamless_call(server: Served) -> object:
    with anyio.fail_after(30):
        async with (
            streamable_http_client(server.url) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool("add", {"a": 1, "b": 1})


def test_a_host_other_machines_reach_needs_allow_remote_and_warns():
    result = CliRunner().invoke(
        cli, ["mcp", "serve", f"{FUNCTIONS}:add", "--transport", "http", "--host", "0.0.0.0"]
    )
    assert result.exit_code == 1
    assert "not a loopback address" in result.output and "--allow-remote" in result.output
    assert "Traceback" not in result.output


@pytest.mark.slow
def test_a_remote_bind_warns_and_still_checks_host_and_token(tmp_path):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    arguments = ("--store", "memory", "--host", "0.0.0.0", "--allow-remote")
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    with served(f"{FUNCTIONS}:add", *arguments, env=env) as server:
        assert "WARNING: serving on 0.0.0.0" in server.stderr
        # the default token file: private to the user
        assert server.token_file == runtime / "openprogram" / f"mcp-{server.port}.token"
        assert stat.S_IMODE(server.token_file.parent.stat().st_mode) == 0o700
        assert stat.S_IMODE(server.token_file.stat().st_mode) == 0o600
        url = f"http://127.0.0.1:{server.port}/mcp"
        assert post_initialize(url).status_code == 401
        rebinding = post_initialize(url, Host=f"attacker.example:{server.port}", **server.auth)
        assert rebinding.status_code == 421
        assert post_initialize(url, **server.auth).is_success


@pytest.mark.slow
def test_slow_calls_of_one_tool_do_not_hold_up_another_tools_call(tmp_path):
    holds = 60
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(60)
        port = listener.getsockname()[1]
        arguments = ("--store", str(tmp_path / "s.db"), "--token-file", str(tmp_path / "t"))
        with served(f"{FUNCTIONS}:hold", f"{FUNCTIONS}:add", *arguments) as server:

            async def main() -> tuple[list, object]:
                async with (
                    create_mcp_http_client(headers=server.auth) as http,
                    streamable_http_client(server.url, http_client=http) as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    held: list = []
                    async with anyio.create_task_group() as group:

                        async def one() -> None:
                            held.append(await session.call_tool("hold", {"port": port}))

                        for _ in range(holds):
                            group.start_soon(one)
                        # every call that can run is running, and stays so
                        connections = [
                            (await anyio.to_thread.run_sync(listener.accept))[0]
                            for _ in range(min(holds, DEFAULT_MAX_CALLS))
                        ]
                        with anyio.fail_after(30):
                            quick = await session.call_tool("add", {"a": 2, "b": 3})
                        for connection in connections:
                            connection.close()
                        for _ in range(holds - len(connections)):  # the ones that waited
                            (await anyio.to_thread.run_sync(listener.accept))[0].close()
                    return held, quick

            held, quick = anyio.run(main)
    assert quick.content[0].text == "5"
    assert [r.content[0].text for r in held] == ["released"] * holds


@pytest.mark.parametrize("leaving", ["cancels the call", "is killed"])
@pytest.mark.slow
def test_a_call_whose_client_goes_away_stops_before_its_next_model_request(tmp_path, leaving):
    asked, answer = threading.Event(), threading.Event()

    def respond(body: dict) -> str:
        asked.set()
        answer.wait(30)
        return "ok"

    store = str(tmp_path / "s.db")
    with OpenAIServer(respond) as model:
        arguments = (
            "--store", store, "--token-file", str(tmp_path / "t"),
            "--model", "openai/test-model", "--api-base", model.url,
        )  # fmt: skip
        env = {"OPENAI_API_KEY": "sk-test-0123456789abcdefghij"}
        with served(f"{FUNCTIONS}:chatter", *arguments, env=env) as server:
            if leaving == "cancels the call":

                async def main() -> None:
                    async with (
                        create_mcp_http_client(headers=server.auth) as http,
                        streamable_http_client(server.url, http_client=http) as (read, write),
                        ClientSession(read, write) as session,
                    ):
                        await session.initialize()
                        async with anyio.create_task_group() as group:
                            group.start_soon(session.call_tool, "chatter", {"rounds": 30})
                            await anyio.to_thread.run_sync(asked.wait, 30)
                            group.cancel_scope.cancel()

                anyio.run(main)
            else:
                client = subprocess.Popen(
                    [sys.executable, "-c", CLIENT, server.url, server.token],
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                )
                assert asked.wait(60)
                client.kill()
                client.wait()
            # the reply waits until the server has noticed: else a second request races it
            server.wait_for_line("lost its client")
            answer.set()
            node = wait_for_end(store, "chatter")
            assert len(model.requests) == 1
    assert node.status == "stopped"
    assert node.meta["stop_reason"] == "the MCP client cancelled the call or went away"


CLIENT = """
import asyncio, sys
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

async def main(url, token):
    async with (
        create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        await session.call_tool("chatter", {"rounds": 30})

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def wait_for_end(store: str, name: str, timeout: float = 30.0):
    """The node `name` of the store's one session once it has ended (the server writes
    it in another process; nothing there can be awaited from here)."""
    import time

    deadline = time.monotonic() + timeout
    opened, _ = open_store(store)
    try:
        while time.monotonic() < deadline:
            for info in opened.list_sessions():
                session = Session.open(store, info.id)  # read only: the server writes it
                try:
                    nodes = session.dag.find(name=name, kind="code")
                finally:
                    session.close()
                if nodes and nodes[0].status != "running":
                    return nodes[0]
            time.sleep(0.05)
    finally:
        opened.close()
    pytest.fail(f"{name} was still running after {timeout} s")


@pytest.mark.slow
def test_a_killed_servers_token_file_is_removed_by_the_next_start(tmp_path):
    """Issue 40, item 11: a server SIGKILLed cannot remove its token file; before, it
    stayed in the runtime folder for good (a secret of a dead server, one per port).
    Each server holds its file (flock) while it lives; the next start removes the token
    files nobody holds, and leaves a live server's."""
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    with served(f"{FUNCTIONS}:add", "--store", "memory", env=env) as killed:
        killed.process.kill()
        killed.process.wait()
        stale = killed.token_file
    assert stale.exists()  # nothing could remove it
    with (
        served(f"{FUNCTIONS}:add", "--store", "memory", env=env) as live,
        served(f"{FUNCTIONS}:add", "--store", "memory", env=env) as next_one,
    ):
        assert not stale.exists()
        assert live.token_file.exists() and next_one.token_file.exists()
        assert post_initialize(live.url, **live.auth).status_code == 200
