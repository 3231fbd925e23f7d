"""gui_agent as an MCP tool: what `openprogram mcp serve gui_agent` serves.

Owns the served function (a task in; the GuiResult's summary and the final screenshot
out) and the desktop it runs on: a fresh VirtualDesktop per call by default, starting
the app named by OPENPROGRAM_GUI_APP. Registered under the `openprogram.mcp_tools`
entry points; openprogram's serve.py does the serving. Start at make_gui_tool().
"""

# no `from __future__ import annotations`: the served schema's bounds are values made
# in make_gui_tool(), which the decorator reads from the annotations themselves
import os
import shlex
from collections.abc import Callable
from typing import Annotated, Any

from pydantic import Field

from gui_harness.agent import gui_agent as run_gui_agent
from gui_harness.desktop.base import Desktop
from openprogram import Image, agentic_function
from openprogram.errors import ConfigError

__all__ = [
    "APP_VARIABLE",
    "DEFAULT_MAX_STEPS_LIMIT",
    "MAX_STEPS_VARIABLE",
    "MAX_TASK_LENGTH",
    "gui_agent",
    "make_gui_tool",
]

APP_VARIABLE = "OPENPROGRAM_GUI_APP"
"""The app the default VirtualDesktop starts, as a command line (e.g. `xterm`); chosen
by whoever runs the server, never by the client."""

MAX_STEPS_VARIABLE = "OPENPROGRAM_GUI_MAX_STEPS"
"""The most steps a client may ask the served gui_agent for (default
DEFAULT_MAX_STEPS_LIMIT); chosen by whoever runs the server, never by the client."""

DEFAULT_MAX_STEPS_LIMIT = 50
MAX_TASK_LENGTH = 10_000
"""The longest task (in characters) a client may give."""


def make_gui_tool(
    desktop: Callable[[], Desktop] | None = None,
    *,
    runtime: Callable[[], Any] | None = None,
    max_steps_limit: int | None = None,
) -> Callable[..., Any]:
    """A servable agentic function `gui_agent(task, max_steps=15)`.

    desktop: makes the desktop of one call (None: a VirtualDesktop running
    OPENPROGRAM_GUI_APP, closed after the call). runtime: makes the Runtime of one call
    (None: the ambient one). max_steps_limit: the largest `max_steps` the tool's schema
    allows, so a served call asking for more is refused before it runs (None:
    OPENPROGRAM_GUI_MAX_STEPS, else 50). Returns `[summary, final screenshot]`; a run
    that did not succeed says so at the start of the summary.
    """
    limit = _steps_limit() if max_steps_limit is None else max_steps_limit
    if type(limit) is not int or limit < 1:
        raise ConfigError(f"max_steps_limit={limit!r} must be a whole number >= 1")
    Task = Annotated[str, Field(min_length=1, max_length=MAX_TASK_LENGTH)]
    Steps = Annotated[int, Field(ge=1, le=limit)]
    default_steps = min(15, limit)

    @agentic_function
    def gui_agent(task: Task, max_steps: Steps = default_steps) -> list[Any]:
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

    return gui_agent


def _steps_limit() -> int:
    text = os.environ.get(MAX_STEPS_VARIABLE)
    if text is None:
        return DEFAULT_MAX_STEPS_LIMIT
    try:
        limit = int(text)
    except ValueError:
        limit = 0
    if limit < 1:
        raise ConfigError(f"{MAX_STEPS_VARIABLE}={text!r} must be a whole number >= 1")
    return limit


gui_agent = make_gui_tool()
