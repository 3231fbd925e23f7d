"""MCPServer against a hostile server (issue 32, round 4): costly schemas, colliding
tool names, huge results, huge listings; and the start-up errors a new user meets."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram import ConfigError, Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.errors import MCPServerError
from openprogram.mcp import MCPServer
from openprogram.mcp.tool import public_names
from tests.support.mcp_servers import fault_server, free_port, wait_for_port

HOSTILE = Path(__file__).parents[2] / "support" / "mcp_hostile_server.py"
NO_MATCH = "a" * 40 + "!"  # what makes `^(a|a)*$` and `^(a+)+$` backtrack for ever


def hostile(mode: str, *arguments: str) -> list[str]:
    return [sys.executable, str(HOSTILE), mode, *arguments]


def calls(*tool_calls):
    return {"tool_calls": [{"name": name, "arguments": given} for name, given in tool_calls]}


def run_agent(tools, script):
    @agentic_function
    def agent(task: str) -> str:
        return llm(task, tools=tools)

    with Session() as session, Runtime(ScriptedModel({"agent": script})):
        answer = agent("go")
    return answer, session


def test_a_schema_too_deep_or_too_big_is_refused_when_listed_and_named(caplog):
    with (
        caplog.at_level(logging.WARNING, logger="openprogram"),
        MCPServer.stdio(hostile("schemas"), name="hostile") as server,
    ):
        names = [tool.tool for tool in server.tools()]
        assert "deep" not in names and "doubling" not in names and "echo" in names
        assert "tool 'deep' has an input schema nested deeper than 64 levels" in caplog.text
        assert "tool 'doubling' has an input schema bigger than 10000" in caplog.text
        with pytest.raises(ConfigError, match="'deep' has an input schema nested deeper"):
            server.tool("deep")
        with pytest.raises(ConfigError, match="counting each \\$ref's target"):
            server.tool("doubling")


# (the old code hung in `re`; the suite's timeout ends such a hang. No shorter one here:
# `regex` counts its 5 s in CPU seconds, two of them took over 60 s at a load of 10)
@pytest.mark.slow
def test_a_backtracking_pattern_is_checked_within_the_calls_timeout():
    with MCPServer.stdio(hostile("schemas"), name="hostile", timeout=5) as server:
        script = [
            calls(("hostile_evil", {"s": NO_MATCH}), ("hostile_evil_keys", {NO_MATCH: "x"})),
            calls(("hostile_evil", {"s": "aaaa"})),
            "checked",
        ]
        answer, session = run_agent(server.tools(), script)
    assert answer == "checked"
    evil, keys, fine = session.dag.find(kind="code")[1:]
    for refused in (evil, keys):
        assert refused.meta["refused"] is True
        assert "could not be checked against its schema within 5 s" in refused.error
    assert fine.status == "completed" and fine.output == "evil ran"


# (the old code hung the MCP loop in the SDK's output check; the suite's timeout ends it)
@pytest.mark.slow
def test_a_backtracking_output_schema_is_checked_within_the_calls_timeout():
    with MCPServer.stdio(hostile("schemas"), name="hostile", timeout=5) as server:
        answer, session = run_agent(
            server.tools(), [calls(("hostile_evil_output", {})), calls(("hostile_echo", {})), "ok"]
        )
    assert answer == "ok"
    evil, echo = session.dag.find(kind="code")[1:]
    assert evil.status == "error"
    assert "could not be checked against its output schema within 5 s" in evil.error
    assert echo.output == "echo ran"  # the connection still serves


def test_tool_names_that_collide_once_sanitised_are_made_distinct_the_same_way_each_time():
    with MCPServer.stdio(hostile("names"), name="n") as server:
        tools = {tool.tool: tool.name for tool in server.tools()}
        assert tools["a_b"] == "n_a_b"  # the one needing no change keeps its name
        assert tools["a.b"].startswith("n_a_b_") and tools["a b"].startswith("n_a_b_")
        assert len(set(tools.values())) == len(tools)
        order = ["a b", "a.b", "a_b", "create", "hub_create"]
        assert public_names("n", order) == public_names("n", order[::-1]) == tools
        answer, session = run_agent(
            server.tools(), [calls((tools["a.b"], {}), (tools["a b"], {})), "both"]
        )
    assert answer == "both"
    assert [node.output for node in session.dag.find(kind="code")[1:]] == ["a.b ran", "a b ran"]


def test_a_tool_name_listed_twice_is_left_out_and_the_servers_other_tools_stay(caplog):
    """Issue 40, item 11 (round 4's leftover): a server listing `read` twice. Before,
    both became `t_read` and llm() refused the whole call (UsageError "two tools are
    named"), so one bad listing disabled every tool. Now `read` is left out, named in
    a warning, and `write` works."""
    with (
        caplog.at_level(logging.WARNING, logger="openprogram"),
        MCPServer.stdio(hostile("twice"), name="t") as server,
    ):
        offered = server.tools()
        assert [tool.tool for tool in offered] == ["write"]
        with pytest.raises(ConfigError, match="lists the tool 'read' 2 times"):
            server.tool("read")
        answer, session = run_agent(offered, [calls(("t_write", {})), "written"])
    assert "MCP server 't' lists the tool 'read' 2 times" in caplog.text
    assert answer == "written"
    assert session.dag.find(name="t_write")[0].output == "write ran"


def test_a_server_cannot_take_the_tool_names_of_another(caplog):
    with (
        caplog.at_level(logging.WARNING, logger="openprogram"),
        MCPServer.stdio(hostile("names"), name="git") as git,
    ):
        assert "hub_create" in [tool.tool for tool in git.tools()]  # no git_hub yet
        with MCPServer.stdio(hostile("names"), name="git_hub") as hub:
            offered = [*git.tools(), *hub.tools()]  # git's hub_create would be git_hub_create
            assert "hub_create" not in [tool.tool for tool in offered if tool.server is git]
            with pytest.raises(ConfigError, match="rename one of the servers"):
                git.tool("hub_create")
            answer, session = run_agent(offered, [calls(("git_hub_create", {})), "made"])
    assert "MCP server 'git': tool 'hub_create' would be named 'git_hub_create'" in caplog.text
    assert "of MCP server 'git_hub'" in caplog.text
    assert answer == "made"
    (node,) = session.dag.find(name="git_hub_create")
    assert node.meta["mcp"] == {"server": "git_hub", "tool": "create"}


def test_a_result_over_max_result_bytes_is_a_tool_error_and_the_server_keeps_serving():
    script = [
        calls(("faults_big", {"size": 20_000_000})),  # over the default 8 MiB
        calls(("faults_echo", {"message": "still here"})),
        "too big",
    ]
    with MCPServer.stdio(fault_server(), name="faults") as server:
        answer, session = run_agent(server.tools(), script)
        assert server.restarts == 0
    assert answer == "too big"
    big, echo = session.dag.find(kind="code")[1:]
    assert big.status == "error"
    assert "answered big with too much: the server's answer was 20,000,100 bytes" in big.error
    assert "over max_result_bytes=8,388,608; it was dropped unread" in big.error
    assert echo.output == "echo: still here"


def test_max_result_bytes_is_a_setting():
    with MCPServer.stdio(fault_server(), name="faults", max_result_bytes=5000) as server:
        big = server.tool("big")
        with Session():
            assert len(big(size=4000)) == 4000
            with pytest.raises(MCPServerError, match="over max_result_bytes=5,000"):
                big(size=6000)
    with pytest.raises(
        ConfigError, match=r"sent its tools in a message too large: .*raise max_result"
    ):
        MCPServer.stdio(fault_server(), name="faults", max_result_bytes=1000).connect()


@pytest.mark.slow
def test_a_listing_over_max_tools_is_cut_with_a_warning_naming_the_server(caplog):
    with (
        caplog.at_level(logging.WARNING, logger="openprogram"),
        MCPServer.stdio(hostile("many", "1500"), name="crowd") as crowd,
        MCPServer.stdio(hostile("many", "50"), name="small", max_tools=20) as small,
    ):
        assert len(crowd.tools()) == 1000  # the default
        assert len(small.tools()) == 20
        assert "MCP server 'crowd' lists more than max_tools=1000 tools" in caplog.text
        assert "MCP server 'small' lists more than max_tools=20 tools" in caplog.text
        with pytest.raises(ConfigError, match="the first max_tools=20 of more it listed"):
            small.tool("tool_30")


def test_a_server_that_closes_the_connection_is_named_by_its_command():
    argv = [sys.executable, "-c", "print('not MCP')"]
    with pytest.raises(ConfigError) as raised:
        MCPServer.stdio(argv, name="quits").connect()
    assert f"MCP server 'quits' (command {argv!r}) could not be started" in str(raised.value)
    with (
        MCPServer.stdio(fault_server(), name="faults") as server,
        Session(),
        pytest.raises(MCPServerError, match=r"\(command \[.*mcp_fault_server\.py"),
    ):
        server.tool("die")()


def test_the_command_named_in_an_error_hides_secret_looking_options():
    argv = [
        sys.executable,
        "-c",
        "pass",
        "--api-key",
        "argv-secret-0123456789",
        "--token=t0k3n-abcdefgh",
    ]
    with pytest.raises(ConfigError) as raised:
        MCPServer.stdio(argv, name="quits").connect()
    message = str(raised.value)
    assert "'--api-key', '***', '--token=***'" in message
    assert "argv-secret-0123456789" not in message and "t0k3n-abcdefgh" not in message


def test_the_first_start_of_a_stdio_server_may_take_a_minute():
    assert MCPServer.stdio(["npx", "-y", "x"], name="slow").init_timeout == 60
    assert MCPServer.http("http://127.0.0.1:1/mcp", name="up").init_timeout == 30


def test_a_recursive_schema_and_shared_definitions_are_accepted():
    from openprogram.mcp._schema import bounded_validator, problems

    tree = {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z]+$"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "additionalProperties": False,
            }
        },
    }
    validator = bounded_validator("s", "tree", tree)
    good = {"root": {"name": "a", "children": [{"name": "b", "children": []}]}}
    assert problems(validator, good, 5) == []
    bad = {"root": {"name": "a", "children": [{"name": "B!", "extra": 1}]}}
    found = [error.message for error in problems(validator, bad, 5)]
    assert "'B!' does not match '^[a-z]+$'" in found
    assert "additional properties are not allowed ('extra' unexpected)" in found


def test_a_dropped_answer_is_matched_to_its_request_by_an_id_at_either_end():
    from mcp_types import JSONRPCError

    from openprogram.mcp._stdio import RESULT_TOO_LARGE, _too_large

    first = _too_large(b'{"jsonrpc":"2.0","id":7,"result":{"content":[', b"]}}", 10**8, 10)
    last = _too_large(b'{"result":{"content":[', b'"x"}]},"id":"q-1","jsonrpc":"2.0"}', 10**8, 10)
    for message, id_ in ((first, 7), (last, "q-1")):
        assert isinstance(message.message, JSONRPCError)
        assert message.message.id == id_ and message.message.error.code == RESULT_TOO_LARGE
    nested = _too_large(b'{"result":{"id":3,', b"}}", 10**8, 10)  # no top-level id seen
    assert isinstance(nested, ValueError) and "over max_result_bytes=10" in str(nested)


@pytest.mark.parametrize("kind", ["json", "sse"])
@pytest.mark.slow
def test_an_http_answer_over_max_result_bytes_is_a_tool_error(kind):
    port = free_port()
    argv = [sys.executable, str(HOSTILE.with_name("mcp_big_http_server.py")), str(port), kind]
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        url = f"http://127.0.0.1:{port}/mcp"
        with MCPServer.http(url, name="web", max_result_bytes=100_000) as server, Session():
            big = server.tool("big")
            assert len(big(size=30_000)["result"]) == 30_000  # in the answer twice
            with pytest.raises(MCPServerError, match="over max_result_bytes=100,000"):
                big(size=200_000)
            assert big(size=10) == {"result": "x" * 10}  # the connection still serves
    finally:
        process.terminate()
        process.wait(timeout=10)
