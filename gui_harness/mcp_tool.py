"""gui_agent as an MCP tool: what `openprogram mcp serve gui_agent` serves.

Owns the served function (a task in; the GuiResult's summary and the final screenshot
out) and the desktop it runs on: a fresh VirtualDesktop per call by default, starting
the app named by OPENPROGRAM_GUI_APP. Registered under the `openprogram.mcp_tools`
entry points; openprogram's serve.py does the serving. Start at make_gui_tool().
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from typing import Any

from gui_harness.agent import gui_agent as run_gui_agent
from gui_harness.desktop.base import Desktop
from openprogram import Image, agentic_function

__all__ = ["APP_VARIABLE", "gui_agent", "make_gui_tool"]

APP_VARIABLE = "OPENPROGRAM_GUI_APP"
"""The app the default VirtualDesktop starts, as a command line (e.g. `xterm`); chosen
by whoever runs the server, never by the client."""


def make_gui_tool(
    desktop: Callable[[], Desktop] | None = None, *, runtime: Callable[[], Any] | None = None
) -> Callable[..., Any]:
    """A servable agentic function `gui_agent(task, max_steps=15)`.

    desktop: makes the desktop of one call (None: a VirtualDesktop running
    OPENPROGRAM_GUI_APP, closed after the call). runtime: makes the Runtime of one call
    (None: the ambient one). Returns `[summary, final screenshot]`; a run that did not
    succeed says so at the start of the summary.
    """

    @agentic_function
    def gui_agent(task: str, max_steps: int = 15) -> list[Any]:
        """Do a task on a desktop with the GUI agent; the outcome and a final screenshot."""
        owned = None
        target = desktop() if desktop is not None else None
        if target is None:
            from gui_harness.desktop.virtual import VirtualDesktop

            app = os.environ.get(APP_VARIABLE)
            owned = target = VirtualDesktop(apps=[shlex.split(app)] if app else [])
            owned.start()
        try:
            result = run_gui_agent(
                task,
                max_steps=max_steps,
                desktop=target,
                runtime=runtime() if runtime is not None else None,
            )
            screenshot = Image(target.screenshot())
        finally:
            if owned is not None:
                owned.close()
        outcome = "done" if result.success else f"not done ({result.stop_reason})"
        return [f"{outcome}: {result.summary}", screenshot]

    return gui_agent  # type: ignore[no-any-return]


gui_agent = make_gui_tool()
