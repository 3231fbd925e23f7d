"""gui_agent as an MCP tool: served by `openprogram mcp serve` to the SDK's client (on a
FakeDesktop), and on its default VirtualDesktop (x11)."""

from __future__ import annotations

import asyncio
import base64
import sys
from importlib.metadata import entry_points

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from gui_harness.demo.policy import BASIC_TASK
from gui_harness.mcp_tool import APP_VARIABLE, MAX_STEPS_VARIABLE, MAX_TASK_LENGTH, make_gui_tool
from openprogram import Image, Runtime, ScriptedModel, Session
from openprogram.errors import ConfigError
from tests.support.mcp_servers import ROOT, openprogram_command


def test_gui_agent_served_over_mcp_returns_the_summary_and_the_final_screenshot(tmp_path):
    store = str(tmp_path / "gui.db")
    argv = openprogram_command("mcp", "serve", "tests.support.mcp_gui:gui_agent", "--store", store)
    parameters = StdioServerParameters(
        command=argv[0], args=argv[1:], cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
    )  # fmt: skip

    async def main():
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            (tool,) = (await client.list_tools()).tools
            return tool, await client.call_tool("gui_agent", {"task": BASIC_TASK})

    tool, result = asyncio.run(main())
    assert tool.name == "gui_agent" and tool.input_schema["required"] == ["task"]
    assert not result.is_error
    summary, screenshot = result.content
    assert summary.text.startswith("done: ")
    assert base64.b64decode(screenshot.data).startswith(b"\x89PNG")
    with Session.open(store, result.meta["openprogram/session"]) as recorded:
        assert [n.name for n in recorded.dag.find(kind="code")][:2] == ["gui_agent", "gui_agent"]


def test_gui_agent_is_registered_for_mcp_serve():
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'gui_agent = "gui_harness.mcp_tool:gui_agent"' in pyproject
    installed = {e.name: e.value for e in entry_points(group="openprogram.mcp_tools")}
    if installed:  # an install made before the entry point existed has none yet
        assert installed["gui_agent"] == "gui_harness.mcp_tool:gui_agent"


@pytest.mark.x11
def test_by_default_it_runs_on_a_fresh_virtual_desktop(tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    monkeypatch.setenv(APP_VARIABLE, f"{sys.executable} -m gui_harness.demo.app --state {state}")
    script = {
        "plan_next_action": [{"goal": "look", "action": {"type": "wait", "ms": 1}}],
        "verify_step": [{"success": True, "observation": "a form", "task_complete": False}],
        "conclusion": [{"summary": "a form is open", "task_appears_complete": False}],
    }
    tool = make_gui_tool(runtime=lambda: Runtime(ScriptedModel(script)))
    with Session():
        summary, screenshot = tool(task="look at the form", max_steps=1)
    assert summary == "not done (max_steps): a form is open"
    assert isinstance(screenshot, Image) and screenshot.size == (1280, 800)
    assert state.exists()  # the app ran on that desktop


def test_served_max_steps_is_bounded_by_the_servers_limit(tmp_path):
    store = str(tmp_path / "gui.db")
    argv = openprogram_command("mcp", "serve", "tests.support.mcp_gui:gui_agent", "--store", store)
    parameters = StdioServerParameters(
        command=argv[0], args=argv[1:], cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), MAX_STEPS_VARIABLE: "20"},
    )  # fmt: skip

    async def main():
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            (tool,) = (await client.list_tools()).tools
            huge = await client.call_tool("gui_agent", {"task": BASIC_TASK, "max_steps": 10**9})
            long = await client.call_tool("gui_agent", {"task": "x" * (MAX_TASK_LENGTH + 1)})
            return tool, huge, long

    tool, huge, long = asyncio.run(main())
    assert tool.input_schema["properties"]["max_steps"]["maximum"] == 20
    assert tool.input_schema["properties"]["task"]["maxLength"] == MAX_TASK_LENGTH
    assert huge.is_error and long.is_error
    assert huge.content[0].text == (
        "invalid arguments for gui_agent: max_steps: Input should be less than or equal to 20"
        " (got 1000000000)"
    )
    assert "task: String should have at most 10000 characters" in long.content[0].text
    assert "openprogram/session" not in (huge.meta or {})  # refused before it ran


def test_the_step_limit_must_be_a_positive_whole_number(monkeypatch):
    assert make_gui_tool(max_steps_limit=3).spec["parameters"]["properties"]["max_steps"] == {
        "default": 3, "maximum": 3, "minimum": 1, "type": "integer"
    }  # fmt: skip
    with pytest.raises(ConfigError, match="max_steps_limit=0 must be"):
        make_gui_tool(max_steps_limit=0)
    monkeypatch.setenv(MAX_STEPS_VARIABLE, "lots")
    with pytest.raises(ConfigError, match="OPENPROGRAM_GUI_MAX_STEPS='lots' must be"):
        make_gui_tool()
