"""The `openprogram` command's root: its click group, the commands plugins register under
the `openprogram.commands` entry-point group (loaded when listed or run; one that cannot
load says what to install), run_command for plugin commands, and restore_ctrl_c, which
the process's entry point (main) calls first. Start at cli.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from importlib.metadata import EntryPoint, entry_points
from typing import Any

import click

from openprogram.cli._print import say
from openprogram.echo import printable
from openprogram.errors import OpenProgramError

__all__ = ["PLUGINS", "cli", "restore_ctrl_c", "run_command"]

PLUGINS = "openprogram.commands"
"""The entry-point group plugins register their click commands under (gui_harness: demo,
gui, serve, batch, bench), e.g. in pyproject.toml:
`[project.entry-points."openprogram.commands"] demo = "gui_harness.commands:demo"`."""
_GUI_EXTRA = (
    "pip install 'openprogram[gui]'; on Debian/Ubuntu also: apt-get install xvfb xdotool python3-tk"
)


def _entry_points() -> list[EntryPoint]:
    """The installed plugins' commands (read on every use: cheap, and never stale)."""
    return list(entry_points(group=PLUGINS))


class _Commands(click.Group):
    """The built-in commands, then those of the installed plugins (loaded when listed or
    run); an unknown command, with no plugin installed, says what to install."""

    def _plugins(self) -> dict[str, EntryPoint]:
        found: dict[str, EntryPoint] = {}
        for entry in _entry_points():
            if entry.name not in self.commands:  # a built-in command is never replaced
                found.setdefault(entry.name, entry)
        return found

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*super().list_commands(ctx), *sorted(self._plugins())]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        command = super().get_command(ctx, name)
        if command is not None:
            return command
        entry = self._plugins().get(name)
        return None if entry is None else _load(entry)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError as exc:
            if self._plugins():
                raise
            raise click.UsageError(
                f"{exc.message} The GUI agent's commands (demo, gui, serve, batch, bench) "
                f"come from a plugin, and none is installed: {_GUI_EXTRA}",
                ctx,
            ) from exc

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.ClickException as exc:  # it may quote a stored value or a model's text
            exc.message = printable(exc.message)  # type: ignore[misc]  # Final in click's
            # stubs only: show() prints what it holds when the exception reaches main
            raise

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        width = formatter.width - 6 - max((len(n) for n in self.list_commands(ctx)), default=0)
        built_in = [(n, c.get_short_help_str(width)) for n, c in sorted(self.commands.items())]
        with formatter.section("Commands"):
            formatter.write_dl(built_in)
        plugins = self._plugins()
        if not plugins:
            with formatter.section("Plugin commands"):
                formatter.write_text(
                    "none installed; the GUI agent's (demo, gui, serve, batch, bench) come "
                    f"with: {_GUI_EXTRA}"
                )
            return
        by_source: dict[str, list[tuple[str, EntryPoint]]] = {}
        for name, entry in sorted(plugins.items()):
            source = entry.dist.name if entry.dist is not None else entry.module
            by_source.setdefault(source, []).append((name, entry))
        for group in by_source.values():
            packages = sorted({entry.module.partition(".")[0] for _, entry in group})
            with formatter.section(f"Plugin commands (from {', '.join(packages)})"):
                formatter.write_dl(
                    [(name, _load(entry).get_short_help_str(width)) for name, entry in group]
                )


def _load(entry: EntryPoint) -> click.Command:
    """The plugin's command; one saying what went wrong (and what to install) when it
    cannot be loaded."""
    try:
        command = entry.load()
    except ImportError as exc:
        problem = f"could not be loaded ({exc})"
        fix = (
            f"Install what it needs: {_GUI_EXTRA}"
            if entry.dist is not None and entry.dist.name == "openprogram"
            else "Reinstall the package that provides it, with its extras"
        )
    else:
        if isinstance(command, click.Command):
            return command
        problem = f"is {command!r}, not a click command"
        fix = "Its plugin is broken; reinstall or upgrade it"
    message = f"the {entry.name!r} command ({entry.value}) {problem}. {fix}"

    @click.command(
        name=entry.name,
        help=f"Unavailable: {message}",
        context_settings={"ignore_unknown_options": True, "allow_extra_args": True},
    )
    def unavailable() -> None:
        raise click.ClickException(message)

    return unavailable


@click.group(
    cls=_Commands,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="openprogram", prog_name="openprogram")
def cli() -> None:
    """openprogram: agents as decorated functions, with a context DAG you can inspect.

    \b
    Inspect recorded sessions:
      openprogram sessions list
      openprogram sessions show ID
      openprogram sessions render ID plan_next_action#3
      openprogram sessions report ID -o run.html
    Run the GUI agent:
      openprogram demo
      openprogram gui "fill in the form" --model openai/gpt-4o
    Run agents behind a queue (docs/production.md):
      openprogram runs submit support:handle "T-1 wants a refund" --store runs.db
      openprogram worker runs.db --concurrency 4
      openprogram sessions watch ID --store runs.db
      openprogram sessions prune --older-than 30d --dry-run --store runs.db
    Serve agentic functions to MCP clients:
      openprogram mcp serve mypackage.agents:research [--transport http]
    Evaluate and scale:
      openprogram bench miniwob --model oracle --seeds 0-4
      openprogram batch tasks.jsonl --workers 4 [--engine ray --address HOST:PORT]
    """


def run_command(start: Callable[[], int]) -> int:
    """Run a command's work: the exit code it returns, an OpenProgramError as a message
    (no traceback), Ctrl-C as exit code 130. For plugin commands too."""
    try:
        code = start()
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:
        say("interrupted", err=True)
        return 130
    return int(code or 0)


def restore_ctrl_c() -> None:
    """Make Ctrl-C (SIGINT) raise KeyboardInterrupt in this process, whatever its parent
    left: a parent that ignored or blocked SIGINT (a shell's background job, a test
    runner's worker) hands that on, and every long-running command (serve-model,
    sessions serve, worker, mcp serve, sessions watch, the plugins' servers) would
    then sleep through the Ctrl-C it promises stops it. For the process's entry point
    only: a program embedding `cli` keeps its own signal handling."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
