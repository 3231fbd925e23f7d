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
from gui_harness.mcp_tool import APP_VARIABLE, make_gui_tool
from openprogram import Image, Runtime, ScriptedModel, Session
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
