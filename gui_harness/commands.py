"""The GUI agent's `openprogram` commands: demo, gui, serve, batch and bench.

A plugin of openprogram's command line: pyproject.toml registers each under the
`openprogram.commands` entry-point group, and openprogram/cli.py loads them from there.
Each command hands over to the module that does the work, imported when it runs.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click

from openprogram.cli import provider_kwargs, provider_options, run_command, store_option

__all__ = ["batch", "bench", "demo", "gui", "serve"]

_GUI_EXTRA = (
    "pip install 'openprogram[gui]'; on Debian/Ubuntu also: apt-get install xvfb xdotool python3-tk"
)


@contextmanager
def _gui_extra() -> Iterator[None]:
    """Imports that need the gui extra; a missing piece says how to install it."""
    try:
        yield
    except ImportError as exc:
        raise click.ClickException(
            f"the GUI agent could not be loaded ({exc}). Install its extra: {_GUI_EXTRA}"
        ) from exc


@click.command()
@click.option(
    "--model", help="A litellm model to plan with (default: the scripted offline policy)."
)
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write an HTML report of the run here.",
)
@click.option("--quiet", is_flag=True, help="Do not show step progress.")
@store_option
@provider_options
def demo(
    model: str | None,
    report: Path | None,
    quiet: bool,
    store_spec: str,
    api_base: str | None,
    api_key_env: str | None,
) -> None:
    """Run the bundled GUI demo end to end: a Tk form on a private X display, real
    screenshots and clicks, offline unless --model is given. The run is recorded in
    the session store and written as an HTML report."""
    with _gui_extra():
        from gui_harness.demo.run import run_demo

    sys.exit(
        run_command(
            lambda: run_demo(
                model=model,
                report=report,
                show_progress=not quiet,
                store=store_spec,
                provider=provider_kwargs(api_base, api_key_env),
            )
        )
    )


@click.command()
@click.argument("task")
@click.option(
    "--model",
    envvar="OPENPROGRAM_MODEL",
    help="litellm model string, e.g. openai/gpt-4o (env OPENPROGRAM_MODEL).",
)
@click.option("--max-steps", default=15, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write an HTML report of the run here.",
)
@click.option(
    "--app",
    help="A command to start on a private Xvfb display, where the agent then acts "
    "(default: act on the X display in $DISPLAY).",
)
@store_option
@provider_options
def gui(
    task: str,
    model: str | None,
    max_steps: int,
    report: Path | None,
    app: str | None,
    store_spec: str,
    api_base: str | None,
    api_key_env: str | None,
) -> None:
    """Let the GUI agent do TASK, on a private display running --app or on $DISPLAY."""
    if not model:
        raise click.UsageError(
            "no model: pass --model provider/name (e.g. openai/gpt-4o, with OPENAI_API_KEY "
            "set) or set OPENPROGRAM_MODEL"
        )
    with _gui_extra():
        from gui_harness.run import run_task

    sys.exit(
        run_command(
            lambda: run_task(
                task,
                model=model,
                max_steps=max_steps,
                report=report,
                app=app,
                store=store_spec,
                provider=provider_kwargs(api_base, api_key_env),
            )
        )
    )


@click.command()
@click.option("--app", help="A command to start on the served display (e.g. 'xterm').")
@click.option("--size", default="1280x800", show_default=True, help="Screen size, WIDTHxHEIGHT.")
@click.option("--port", default=0, type=click.IntRange(0, 65535), help="Port (0: a free one).")
def serve(app: str | None, size: str, port: int) -> None:
    """Serve a private X display over HTTP on 127.0.0.1 until Ctrl-C; prints the URL and
    the token a RemoteDesktop needs."""
    with _gui_extra():
        from gui_harness.desktop.serve import serve_main

    sys.exit(run_command(lambda: serve_main(app=app, size=size, port=port)))


_FORWARD = {"ignore_unknown_options": True, "allow_extra_args": True, "help_option_names": []}


@click.command(context_settings=_FORWARD, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def batch(args: tuple[str, ...]) -> None:
    """Run a tasks.jsonl file as gui_agent episodes, locally or on Ray (see --help)."""
    with _gui_extra():
        from gui_harness.batch.cli import batch_main

    sys.exit(batch_main(list(args)))


@click.command(context_settings=_FORWARD, add_help_option=False)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def bench(args: tuple[str, ...]) -> None:
    """Measure gui_agent on benchmarks: bench miniwob|desktop --model M (see --help)."""
    with _gui_extra():
        from gui_harness.batch.cli import bench_main

    sys.exit(bench_main(list(args)))
