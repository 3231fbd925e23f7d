"""`openprogram gui "task"`: run gui_agent on a desktop from the command line.

Owns choosing the desktop (a private Xvfb running --app, or the display in $DISPLAY),
the durable session the run is recorded in, progress on the terminal (StepPrinter) and
the HTML report of a GUI run (write_run_report); the demo uses both.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from gui_harness.agent import gui_agent
from gui_harness.desktop.base import Desktop
from gui_harness.result import GuiResult
from openprogram import Runtime, Session
from openprogram.callbacks.base import Callback
from openprogram.display.report import write_report
from openprogram.echo import echo
from openprogram.errors import ConfigError

__all__ = ["StepPrinter", "run_task", "write_run_report"]


def run_task(
    task: str,
    *,
    model: str,
    max_steps: int = 15,
    report: Path | None = None,
    app: str | None = None,
    store: str | None = None,
    out: TextIO | None = None,
    provider: Mapping[str, Any] | None = None,
) -> int:
    """Do `task` with a real model; returns 0 when the agent reached a verified done.

    app: a command to start on a private Xvfb display (the agent acts there); without it
        the agent acts on the X display in $DISPLAY.
    store: where the session is recorded (default: memory only).
    provider: the Runtime's provider keywords (api_base, api_key), e.g. from the command's
        --api-base and --api-key-env.
    """
    out = out or sys.stdout
    owned: Any = None
    desktop: Desktop
    if app:
        from gui_harness.desktop.virtual import VirtualDesktop

        owned = desktop = VirtualDesktop(apps=[shlex.split(app)])
        owned.start()
    elif os.environ.get("DISPLAY"):
        from gui_harness.desktop.x11 import X11Desktop

        owned = desktop = X11Desktop(os.environ["DISPLAY"])
    else:
        raise ConfigError(
            "no display to act on: set DISPLAY to use your X desktop, or pass --app "
            "'command' to run that program on a private Xvfb display"
        )
    try:
        runtime = Runtime(
            model, callbacks=[StepPrinter(out, max_steps=max_steps)], **dict(provider or {})
        )
        with Session(store) as session, runtime:
            print(f"Task: {task}  (session {session.id})", file=out, flush=True)
            result = gui_agent(
                task,
                max_steps=max_steps,
                desktop=desktop,
                app=Path(shlex.split(app)[0]).name if app else None,
                runtime=runtime,
            )
    finally:
        owned.close()
    print(
        f"\n{'Done' if result.success else 'Stopped'} ({result.stop_reason}): {result.summary}",
        file=out,
    )
    if report is not None:
        write_run_report(report, session, result)
        print(f"Report: {report.resolve()}", file=out)
    return 0 if result.success else 1


class StepPrinter(Callback):
    """Prints one line per finished gui_step: the step counter the user watches."""

    def __init__(self, out: TextIO | None = None, *, max_steps: int | None = None) -> None:
        self.out = out or sys.stdout
        self.max_steps = max_steps

    def on_call_end(self, node: Any) -> None:
        if node.name != "gui_step" or not isinstance(node.output, dict):
            return
        outcome = node.output
        of = f"/{self.max_steps}" if self.max_steps else ""
        action = outcome.get("action") or {}
        what = action.get("type", "-")
        if "element" in action:
            what += f" #{action['element']}"
        if "text" in action:
            what += f" {echo(action['text'], 60)}"
        error = f" ({outcome['error']})" if outcome.get("error") else ""
        print(
            f"  step {outcome.get('step')}{of}: {outcome.get('goal')} → {what} "
            f"[{outcome.get('status')}]{error}",
            file=self.out,
            flush=True,
        )


def write_run_report(path: Path, session: Session, result: GuiResult) -> None:
    """Write the HTML report of a GUI run: a heading, the task, the outcome and the
    final screen, then the steps and the session's DAG views."""
    write_report(
        session,
        path,
        title=f"gui_agent: {result.stop_reason}",
        extra_html=result.report_html(session.dag, result.node_id),
    )
