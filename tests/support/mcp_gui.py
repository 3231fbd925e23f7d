"""gui_agent served on a FakeDesktop with the scripted demo policy, for the MCP tests."""

from __future__ import annotations

from gui_harness.demo.policy import demo_policy
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.mcp_tool import make_gui_tool
from openprogram import Runtime, ScriptedModel

gui_agent = make_gui_tool(
    FakeDesktop.demo_form, runtime=lambda: Runtime(ScriptedModel(demo_policy))
)
