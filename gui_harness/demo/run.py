"""`openprogram demo`: the whole GUI loop on a private Xvfb desktop, checked for real.

Owns run_demo(): start a VirtualDesktop with the bundled Tk form, run gui_agent with the
scripted demo policy (or a real model), show progress per step, write an HTML report,
and judge success by the app's own saved state — not by what the agent claims.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gui_harness.agent import gui_agent
from gui_harness.demo.app import DEMO_SCREEN, demo_app, read_state
from gui_harness.demo.policy import COLOUR, COUNTRY, NAME, TASK, demo_policy
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.result import GuiResult
from gui_harness.run import StepPrinter, write_run_report
from openprogram import Runtime, ScriptedModel, Session

__all__ = [
    "DemoRun",
    "check_saved_state",
    "demo_run",
    "run_demo",
]


def check_saved_state(state: dict[str, Any] | None) -> str | None:
    """None when the demo form was saved with the right values, else what is wrong."""
    if not state or not state.get("saved"):
        return "the form was never saved"
    saved = state.get("state") or {}
    if saved.get("name") != NAME:
        return f"the saved name is {saved.get('name')!r}, not {NAME!r}"
    if saved.get("subscribe") is not True:
        return "Subscribe was not ticked when the form was saved"
    if saved.get("choice") != COLOUR:
        return f"the saved colour is {saved.get('choice')!r}, not {COLOUR!r}"
    if saved.get("country") != COUNTRY:
        return f"the saved country is {saved.get('country')!r}, not {COUNTRY!r}"
    return None


def run_demo(
    *,
    model: str | None = None,
    report: Path | None = None,
    show_progress: bool = True,
    size: tuple[int, int] = DEMO_SCREEN,
    max_steps: int = 12,
    out: TextIO | None = None,
    store: str | None = None,
    provider: Mapping[str, Any] | None = None,
) -> int:
    """Run the demo; returns the exit code: 0 only when the app saved the right state.

    model: None uses the scripted demo policy (offline); else a litellm model name.
    report: where to write the HTML report (default ./openprogram-demo-report.html).
    store: record the session there too (e.g. "openprogram.db"), for `openprogram sessions`.
    provider: the Runtime's provider keywords for `model` (api_base, api_key).
    """
    out = out or sys.stdout
    report = Path(report or "openprogram-demo-report.html")
    callbacks: list[Any] = [StepPrinter(out, max_steps=max_steps)] if show_progress else []
    print(f"Starting a private X display ({size[0]}x{size[1]}) with the demo form…", file=out)
    print(f"Task: {TASK}", file=out, flush=True)
    session = Session(store)
    run = demo_run(
        model=model,
        size=size,
        max_steps=max_steps,
        callbacks=callbacks,
        session=session,
        provider=provider,
    )
    write_run_report(report, run.session, run.result)
    problem = check_saved_state(run.state)
    result = run.result
    print(f"\nAgent: {'done' if result.success else 'no success'} ({result.stop_reason})", file=out)
    print(f"Summary: {result.summary}", file=out)
    print(f"Report: {report.resolve()}", file=out)
    if store is not None:
        print(f"Session {session.id} recorded in {store}", file=out)
    if problem is None:
        print(
            f"The app saved name={NAME!r}, subscribe=True, colour={COLOUR!r},"
            f" country={COUNTRY!r}: the demo passed.",
            file=out,
        )
        return 0
    print(f"The demo failed: {problem}.", file=out)
    return 1


@dataclass
class DemoRun:
    """One demo run: the agent's result, the app's final report, the recorded session."""

    result: GuiResult
    state: dict[str, Any] | None
    session: Session


def demo_run(
    *,
    model: str | None = None,
    size: tuple[int, int] = DEMO_SCREEN,
    max_steps: int = 12,
    callbacks: Sequence[Any] = (),
    max_image_width: int = 1280,
    session: Session | None = None,
    provider: Mapping[str, Any] | None = None,
) -> DemoRun:
    """Start the desktop and the form, run the agent, and return what happened (provider:
    the Runtime's api_base and api_key for `model`)."""
    runtime = Runtime(
        model or ScriptedModel(demo_policy), callbacks=list(callbacks), **dict(provider or {})
    )
    session = session or Session()
    with tempfile.TemporaryDirectory(prefix="openprogram-demo-") as workdir:
        state_path = Path(workdir) / "state.json"
        with VirtualDesktop(size, apps=[demo_app(state_path)]) as desktop, session, runtime:
            result = gui_agent(
                TASK,
                max_steps=max_steps,
                desktop=desktop,
                app="demo-form",
                max_image_width=max_image_width,
            )
        state = read_state(state_path)
    return DemoRun(result=result, state=state, session=session)
