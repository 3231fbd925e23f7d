"""`openprogram gui "task"`: run gui_agent on a desktop from the command line.

Owns choosing the desktop (a private Xvfb running --app, or the display in $DISPLAY),
the durable session the run is recorded in, progress on the terminal and the report.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, TextIO

from gui_harness.agent import gui_agent
from gui_harness.demo.run import StepPrinter, write_run_report
from gui_harness.desktop.base import Desktop
from openprogram import Runtime, Session
from openprogram.errors import ConfigError

__all__ = ["run_task"]


def run_task(
    task: str,
    *,
    model: str,
    max_steps: int = 15,
    report: Path | None = None,
    app: str | None = None,
    store: str | None = None,
    out: TextIO | None = None,
) -> int:
    """Do `task` with a real model; returns 0 when the agent reached a verified done.

    app: a command to start on a private Xvfb display (the agent acts there); without it
        the agent acts on the X display in $DISPLAY.
    store: where the session is recorded (default: memory only).
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
        runtime = Runtime(model, callbacks=[StepPrinter(out, max_steps=max_steps)])
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
