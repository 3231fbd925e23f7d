"""One desktop task's episode: its files, its own VirtualDesktop with the window manager
and the task's apps, and the evaluator's verdict on what the apps wrote.

Owns `DesktopEpisode` (config steps in order, placeholders such as "{workdir}", closing
everything) and `run_desktop_task` (a gui_agent run planned by a model or the oracle,
then judged). The task schema is desktop_spec.py's, the checks _desktop_eval.py's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from gui_harness.agent import gui_agent
from gui_harness.bench._desktop_eval import Verdict, evaluate
from gui_harness.bench._odf import write_ods, write_odt
from gui_harness.bench.desktop_spec import (
    Command,
    DesktopTask,
    Launch,
    WriteFile,
    WriteOds,
    WriteOdt,
)
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.errors import DesktopError
from openprogram import Runtime, ScriptedModel
from openprogram.echo import echo

__all__ = ["DesktopEpisode", "run_desktop_task"]

_LIBREOFFICE_FLAGS = ("--norestore", "--nologo", "--nolockcheck")


class DesktopEpisode:
    """Task `task` set up in a folder of its own (`workdir`, removed on close unless
    given) on a fresh VirtualDesktop; use it as a context manager. Raises DesktopError
    when an app cannot start or a config command fails."""

    def __init__(self, task: DesktopTask, workdir: str | Path | None = None) -> None:
        self.task = task
        self._own = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix=f"desktop-{task.id}-"))
        self.desktop: VirtualDesktop | None = None
        self._source: Any = None

    def __repr__(self) -> str:
        return f"DesktopEpisode({self.task.id!r}, workdir={str(self.workdir)!r})"

    def __enter__(self) -> DesktopEpisode:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def expand(self, text: str) -> str:
        """`text` with {workdir}, {home} and {python} replaced by this episode's."""
        return (
            text.replace("{workdir}", str(self.workdir))
            .replace("{home}", str(self.workdir / "home"))
            .replace("{python}", sys.executable)
        )

    def start(self) -> None:
        """Write the files, start the desktop with the apps, then run the commands."""
        (self.workdir / "home").mkdir(parents=True, exist_ok=True)
        apps: list[App] = []
        for step in self.task.config:
            if isinstance(step, WriteFile):
                path = self._path(step.path)
                path.write_text(step.text, encoding="utf-8")
            elif isinstance(step, WriteOds):
                write_ods(self._path(step.path), step.rows, step.sheet)
            elif isinstance(step, WriteOdt):
                write_odt(self._path(step.path), step.paragraphs)
            elif isinstance(step, Launch):
                apps.append(self._app(step))
        self.desktop = VirtualDesktop(self.task.size, apps)
        self.desktop.start()
        for step in self.task.config:
            if isinstance(step, Command):
                self._command(step)

    def _path(self, text: str) -> Path:
        path = Path(self.expand(text))
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _app(self, step: Launch) -> App:
        argv = [self.expand(arg) for arg in step.argv]
        env = {"HOME": str(self.workdir / "home"), "XDG_CONFIG_HOME": str(self.workdir / "config")}
        if step.libreoffice:
            profile = (self.workdir / "lo-profile").as_uri()
            argv = [argv[0], *_LIBREOFFICE_FLAGS, f"-env:UserInstallation={profile}", *argv[1:]]
            env["SAL_USE_VCLPLUGIN"] = "gtk3"
        env.update({key: self.expand(value) for key, value in step.env.items()})
        return App(argv, env=env, timeout=step.timeout, cwd=str(self.workdir))

    def _command(self, step: Command) -> None:
        assert self.desktop is not None
        argv = [self.expand(arg) for arg in step.argv]
        try:
            done = subprocess.run(
                argv,
                input=step.input.encode() if step.input is not None else None,
                env=self.desktop.app_env(),
                capture_output=True,
                timeout=30,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise DesktopError(
                f"task {self.task.id}: config command {echo(argv)} failed: {exc}"
            ) from exc
        if done.returncode != 0:
            raise DesktopError(
                f"task {self.task.id}: config command {echo(argv)} exited with "
                f"{done.returncode}: {echo(done.stderr.decode(errors='replace'), 300)}"
            )

    def components(self) -> list[Any]:
        """The components of the apps' accessibility trees now, placed and cut by the
        desktop's windows as gui_agent's are (GTK 4 reports boxes relative to its
        window, a popover's to its own surface)."""
        from gui_harness.perception import AccessibilitySource

        desktop = self.desktop
        assert desktop is not None
        if self._source is None:
            self._source = AccessibilitySource(
                desktop.accessibility_bus,
                screen=desktop.size,
                timeout=3.0,
                windows=lambda: desktop.desktop.visible_windows(),
            )
        return list(self._source.snapshot().components)

    def evaluate(self, timeout: float = 10.0) -> Verdict:
        """The evaluator's verdict on the apps' output: (passed, why)."""
        desktop = self.desktop
        return evaluate(
            self.task.evaluator,
            self.expand,
            display=desktop.display if desktop is not None else None,
            env=desktop.env if desktop is not None and desktop.display else None,
            accessibility=self.components if desktop and desktop.accessibility_bus else None,
            timeout=timeout,
        )

    def close(self) -> None:
        """Stop the desktop and its apps; remove the folder when this episode made it."""
        if self._source is not None:
            self._source.close()
            self._source = None
        if self.desktop is not None:
            self.desktop.close()
            self.desktop = None
        if self._own:
            shutil.rmtree(self.workdir, ignore_errors=True)


def run_desktop_task(
    task: DesktopTask,
    model: str,
    *,
    max_steps: int | None = None,
    context_tokens: int | None = None,
    provider: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run `task` once with gui_agent planned by `model` ("oracle": the task's own oracle
    steps) and judge it; `context_tokens` bounds each plan prompt (gui_agent's);
    `provider`: the Runtime's keywords for `model` (api_base, api_key). Returns the
    episode's result fields (success is the evaluator's verdict, whatever the agent
    claimed)."""
    from gui_harness.bench.desktop_oracle import DesktopOracle

    started = time.monotonic()
    with DesktopEpisode(task) as episode:
        assert episode.desktop is not None
        model_or_oracle: Any = (
            ScriptedModel(DesktopOracle(task, episode.expand)) if model == "oracle" else model
        )
        options = provider if model != "oracle" else None
        with Runtime(model_or_oracle, **(options or {})) as runtime:
            result = gui_agent(
                task.instruction,
                max_steps=max_steps or task.max_steps,
                desktop=episode.desktop,
                app=task.app,
                runtime=runtime,
                context_tokens=context_tokens,
            )
        passed, why = episode.evaluate()
    usage = result.usage
    return {
        "success": passed,
        "reward": 1.0 if passed else 0.0,
        "agent_success": result.success,
        "stop_reason": result.stop_reason,
        "detail": f"evaluator: {why}; agent: {result.detail}"[:2000],
        "steps": len(result.steps),
        "tokens": usage.input_tokens + usage.output_tokens,
        "cost_usd": usage.cost_usd,
        "cost_known": usage.cost_known,
        "seconds": round(time.monotonic() - started, 3),
    }
