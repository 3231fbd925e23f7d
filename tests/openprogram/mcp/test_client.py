"""MCPServer and its tools against real servers: the npm reference server over stdio,
and a misbehaving server for the faults (killed mid-call, no initialize answer, 10 MB
results, invalid JSON-RPC, an invalid schema)."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import time

import pytest

from openprogram import (
    ConfigError,
    ReplayModel,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    allm,
    llm,
    needs_approval,
)
from openprogram.core.image import Image
from openprogram.errors import MCPServerError, UsageError
from openprogram.mcp import MCPServer, MCPTool
from openprogram.mcp._faults import session_closed as _closed
from openprogram.render.render import seen_by
from tests.support.mcp_servers import fault_server, npm_server

SECRET = "sekrit-value-0123456789"


@pytest.fixture(scope="module")
def everything():
    argv = [*npm_server("server-everything"), "stdio"]
    with MCPServer.stdio(argv, name="everything", env={"DEMO_API_KEY": SECRET}) as server:
        yield server


@pytest.fixture
def faults():
    with MCPServer.stdio(fault_server(), name="faults", timeout=5) as server:
        yield server


def calls(*tool_calls):
    return {
        "tool_calls": [{"name": name, "arguments": arguments} for name, arguments in tool_calls]
    }


def agent_with(tools):
    @agentic_function
    def agent(task: str) -> str:
        return llm(task, tools=tools)

    return agent


def test_tools_are_named_server_tool_with_the_servers_schema(everything):
    tools = {tool.name: tool for tool in everything.tools()}
    echo = tools["everything_echo"]
    assert isinstance(echo, MCPTool) and echo.tool == "echo"
    assert echo.spec["name"] == "everything_echo"
    assert echo.spec["description"]
    assert echo.spec["parameters"]["properties"]["message"]["type"] == "string"
    assert echo.spec["parameters"]["required"] == ["message"]
    assert "$schema" not in echo.spec["parameters"]
    assert "everything_get-sum" in tools


def test_a_tool_loop_records_each_call_as_a_tool_node_with_meta_mcp(everything):
    script = {
        "agent": [
            calls(
                ("everything_echo", {"message": "hi"}),
                ("everything_get-sum", {"a": 2, "b": 3}),
                ("everything_get-structured-content", {"location": "Chicago"}),
            ),
            "done",
        ]
    }
    with Session() as session, Runtime(ScriptedModel(script)):
        assert agent_with(everything.tools())("go") == "done"
    echo, total, weather = session.dag.find(kind="code")[1:]
    assert echo.name == "everything_echo" and echo.status == "completed"
    assert echo.input == {"message": "hi"}
    assert echo.output == "Echo: hi"
    assert echo.meta["mcp"] == {"server": "everything", "tool": "echo"}
    assert echo.meta["tool_call_id"] == "call_1"
    assert "5" in total.output
    assert set(weather.output) == {"temperature", "conditions", "humidity"}  # structured
    last = session.dag.find(kind="llm")[-1]
    assert "Echo: hi" in seen_by(session.dag, last).text()


def test_the_connection_is_kept_one_process_for_many_calls(everything):
    echo = everything.tool("echo")
    with Session() as session:
        for i in range(5):
            assert echo(message=str(i)) == f"Echo: {i}"
    assert everything.restarts == 0
    assert [n.meta["mcp"]["tool"] for n in session.dag.find(kind="code")] == ["echo"] * 5


def test_allm_runs_mcp_tools_concurrently(everything):
    script = {
        "agent": [
            calls(*(("everything_echo", {"message": str(i)}) for i in range(4))),
            "all echoed",
        ]
    }
    tools = everything.tools()

    @agentic_function
    async def agent(task: str) -> str:
        return await allm(task, tools=tools)

    async def main():
        with Session() as session, Runtime(ScriptedModel(script)):
            return await agent("go"), session

    answer, session = asyncio.run(main())
    assert answer == "all echoed"
    outputs = [n.output for n in session.dag.find(kind="code")[1:]]
    assert outputs == [f"Echo: {i}" for i in range(4)]


def test_async_context_manager_and_atools():
    async def main():
        async with MCPServer.stdio(fault_server(), name="faults") as server:
            tools = {t.tool: t for t in await server.atools()}
            with Session():
                return await tools["echo"].acall(message="async")

    assert asyncio.run(main()) == "echo: async"


def test_env_secrets_given_to_a_server_are_never_recorded(everything, tmp_path):
    store = tmp_path / "sessions.db"
    script = {"agent": [calls(("everything_get-env", {})), "seen"]}
    with Session(str(store)) as session, Runtime(ScriptedModel(script)):
        agent_with(everything.tools())("show the environment")
    assert SECRET in str(session.dag.find(kind="code")[1].output)  # the server had it
    with Session.open(str(store), session.id) as reopened:
        assert SECRET not in str(reopened.dag.find(kind="code")[1].output)
    for path in tmp_path.iterdir():
        assert SECRET.encode() not in path.read_bytes(), path


def test_images_come_back_as_images_and_text_as_text(faults):
    picture = faults.tool("picture")
    with Session() as session:
        caption, image = picture()
    assert caption == "a red picture"
    assert isinstance(image, Image) and image.size == (4, 3)
    node = session.dag.find(kind="code")[0]
    assert node.output[1].width == 4  # stored once, as an ImageRef


def test_render_output_shapes_what_later_calls_see_of_a_result(faults):
    big = faults.tool("big", render_output=lambda text: {"characters": len(text)})
    with Session() as session:
        assert len(big(size=5000)) == 5000
    (node,) = session.dag.find(kind="code")
    assert node.meta["render_output"] == {"characters": 5000}
    assert len(node.output) == 5000


def test_needs_approval_asks_before_each_call_and_a_no_is_declined(faults):
    script = {
        "agent": [
            calls(("faults_count", {})),
            calls(("faults_count", {})),
            "asked twice",
        ]
    }
    answers = iter(["no", "yes"])
    questions = []

    def ask(question):
        questions.append(question.text)
        return next(answers)

    counter = needs_approval(faults.tool("count"))
    with Session() as session, Runtime(ScriptedModel(script), ask=ask):
        assert agent_with([counter])("count") == "asked twice"
    declined, ran = session.dag.find(name="faults_count")
    assert questions == ["Allow faults_count()?"] * 2
    assert declined.meta["declined"] is True and "declined" in declined.output
    assert ran.output == "count: 1"  # the declined call never reached the server


def test_an_error_result_goes_back_to_the_model(faults):
    script = {"agent": [calls(("faults_fail", {})), "the disk is full, sorry"]}
    with Session() as session, Runtime(ScriptedModel(script)):
        assert agent_with(faults.tools())("save") == "the disk is full, sorry"
    node = session.dag.find(name="faults_fail")[0]
    assert node.status == "error"
    assert "MCPServerError: faults/fail: the disk is full" in node.error


def test_invalid_arguments_are_refused_before_the_server_is_asked(faults):
    script = {"agent": [calls(("faults_echo", {"message": 3})), "ok"]}
    with Session() as session, Runtime(ScriptedModel(script)):
        agent_with(faults.tools())("echo")
    node = session.dag.find(name="faults_echo")[0]
    assert node.meta["refused"] is True
    assert "invalid arguments for faults_echo: message: 3 is not of type 'string'" in node.error


def test_a_server_killed_mid_call_is_a_tool_error_and_restarted_on_next_use(faults):
    script = {
        "agent": [
            calls(("faults_die", {})),
            calls(("faults_echo", {"message": "again"})),
            "recovered",
        ]
    }
    with Session() as session, Runtime(ScriptedModel(script)):
        assert agent_with(faults.tools())("die then echo") == "recovered"
    died, echoed = session.dag.find(kind="code")[1:]
    assert died.status == "error"
    assert "closed the connection during die" in died.error
    assert echoed.status == "completed" and echoed.output == "echo: again"
    assert faults.restarts == 1


def test_a_server_that_exited_while_idle_is_restarted_before_the_next_call():
    with MCPServer.stdio(fault_server(), name="faults") as server, Session() as session:
        assert server.tool("quit")() == "bye"  # answers, then the process exits
        deadline = time.monotonic() + 10
        while not _closed(server._session) and time.monotonic() < deadline:
            time.sleep(0.01)  # the SDK offers no event for a connection that ended
        assert server.tool("echo")(message="fresh") == "echo: fresh"
    assert server.restarts == 1
    assert [n.status for n in session.dag.find(kind="code")] == ["completed", "completed"]


def test_restarts_are_bounded():
    with MCPServer.stdio(fault_server(), name="faults", max_restarts=1) as server:
        die = server.tool("die")
        with Session():
            for _ in range(2):
                with pytest.raises(MCPServerError, match="closed the connection"):
                    die()
            with pytest.raises(MCPServerError, match="max_restarts=1"):
                server.tool("echo")(message="x")


@pytest.mark.slow
def test_a_server_that_never_answers_initialize_is_a_config_error():
    server = MCPServer.stdio(fault_server("hang"), name="mute", init_timeout=1)
    with pytest.raises(ConfigError, match="did not answer initialize within 1 s"), server:
        pass


def test_a_program_that_does_not_exist_is_a_config_error():
    with pytest.raises(ConfigError, match="no program 'no-such-mcp-server'"):
        MCPServer.stdio(["no-such-mcp-server"], name="x").connect()


@pytest.mark.slow
def test_a_10_mb_result_is_whole_in_the_node_and_cut_in_what_the_model_sees():
    script = {"agent": [calls(("faults_big", {"size": 10_000_000})), "big"]}
    with (
        MCPServer.stdio(fault_server(), name="faults", max_result_bytes=16_000_000) as server,
        Session() as session,
        Runtime(ScriptedModel(script)),
    ):
        assert agent_with(server.tools())("big") == "big"
    node = session.dag.find(name="faults_big")[0]
    assert node.status == "completed", node.error
    assert len(node.output) == 10_000_000
    last = session.dag.find(kind="llm")[-1]
    seen = seen_by(session.dag, last).text()  # the default line limit: 20 000 characters
    assert len(seen) < 30_000
    assert "[cut: output: " in seen


@pytest.mark.slow
def test_invalid_json_rpc_is_a_tool_error_and_the_run_goes_on():
    with MCPServer.stdio(fault_server(), name="faults", timeout=1.5) as server:
        script = {
            "agent": [calls(("faults_garbage", {})), calls(("faults_echo", {"message": "x"})), "ok"]
        }
        with Session() as session, Runtime(ScriptedModel(script)):
            assert agent_with(server.tools())("garbage") == "ok"
    garbage, echo = session.dag.find(kind="code")[1:]
    assert garbage.status == "error"
    assert "not JSON-RPC" in garbage.error
    assert echo.output == "echo: x"


@pytest.mark.slow
def test_a_timeout_is_a_tool_error_and_the_server_keeps_serving():
    with MCPServer.stdio(fault_server(), name="faults", timeout=0.5) as server:
        with Session(), pytest.raises(MCPServerError, match=r"did not answer sleep within 0\.5 s"):
            server.tool("sleep")(seconds=3)
        with Session():
            assert server.tool("echo")(message="still here") == "echo: still here"


def test_a_tool_with_an_invalid_schema_is_left_out_and_named(faults, caplog):
    with caplog.at_level(logging.WARNING, logger="openprogram"):
        names = [t.tool for t in faults.tools()]
    assert "bad_schema" not in names and "echo" in names
    assert "tool 'bad_schema' has an invalid input schema" in caplog.text
    with pytest.raises(ConfigError, match="'bad_schema' has an invalid input schema"):
        faults.tool("bad_schema")


def test_list_changed_refreshes_the_tools(faults):
    with Session():
        faults.tool("add_tool")(name="fresh")
    assert "fresh" in [t.tool for t in faults.tools()]


def test_resume_returns_the_recorded_result_without_calling_the_server(faults, tmp_path):
    store = str(tmp_path / "s.db")
    script = {"agent": [calls(("faults_count", {})), "counted"]}
    with Session(store) as first, Runtime(ScriptedModel(script)):
        agent_with(faults.tools())("count")
    with Session.open(store, first.id, resume=True) as again, Runtime(ScriptedModel(script)):
        agent_with(faults.tools())("count")
    assert again.dag.find(name="faults_count")[0].output == "count: 1"
    with Session():
        assert faults.tool("count")() == "count: 2"  # the resumed run did not call it


def test_replay_returns_the_recorded_result_without_calling_the_server(faults):
    script = {"agent": [calls(("faults_count", {}), ("faults_picture", {})), "counted"]}
    with Session() as recorded, Runtime(ScriptedModel(script)):
        agent_with(faults.tools())("count")
    with Session() as replayed, Runtime(ReplayModel(recorded)):
        assert agent_with(faults.tools())("count") == "counted"
    count, picture = replayed.dag.find(kind="code")[1:]
    assert count.output == "count: 1" and count.meta["mcp"]["tool"] == "count"
    assert picture.output[1].width == 4
    with Session():
        assert faults.tool("count")() == "count: 2"


def test_bad_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="argv="):
        MCPServer.stdio("node server.js", name="x")
    with pytest.raises(UsageError, match="name="):
        MCPServer.stdio(["node"], name="")
    with pytest.raises(UsageError, match="url="):
        MCPServer.http("localhost:3000", name="x")
    with pytest.raises(UsageError, match="timeout="):
        MCPServer.stdio(["node"], name="x", timeout=0)


@pytest.mark.slow
def test_the_core_imports_without_the_sdk_and_openprogram_mcp_says_what_to_install():
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "import openprogram\n"
        "try:\n    import openprogram.mcp\nexcept ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "openprogram[mcp]"' in out.stdout
