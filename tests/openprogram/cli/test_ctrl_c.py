"""Ctrl-C stops every long-running command, whatever its parent left SIGINT as: each is
started as a real child process with SIGINT ignored, and with it blocked (as a shell's
background job or a test runner's worker hands it on), and must stop on SIGINT.

The CLI's entry point puts SIGINT back (restore_ctrl_c in cli/_root.py); before it, only
serve-model did, and `sessions serve`, `sessions watch` and (blocked) `worker` and
`mcp serve` slept through Ctrl-C.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from openprogram import Session, agentic_function
from tests.support.children import ROOT
from tests.support.interrupting import (
    FAULTHANDLER,
    interrupted,
    sigint_blocked,
    sigint_ignored,
)


@agentic_function
def noted(text: str) -> str:
    return text


@dataclass(frozen=True)
class Command:
    """A command line (words; STORE and DIR filled in), the stream and text of the line it
    prints once it runs, and what its stderr says when it stopped by its own handling."""

    argv: str
    ready: tuple[str, str]
    stopped: str = ""


COMMANDS = {
    "serve-model": Command("serve-model", ("stdout", "http://127.0.0.1:"), "stopped after"),
    "sessions serve": Command("sessions serve STORE", ("stdout", "serving ")),
    "sessions watch": Command(
        "sessions watch watched --forever --store STORE", ("stdout", "noted")
    ),
    "worker": Command("worker STORE", ("stderr", "ready:"), "stopped: 0 runs"),
    # uvicorn stops, then raises the SIGINT it caught again (once click's "Aborted!", exit 1)
    "mcp serve": Command(
        "mcp serve tests.support.mcp_functions:add --transport http --port 0 "
        "--token-file DIR/token --store STORE",
        ("stderr", "listening at"),
        "openprogram mcp serve: stopped",
    ),
}


def _started(argv: list[str], inherited: Callable[[], None]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from openprogram.cli import main; main()", *argv],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=inherited,
        env={**os.environ, "PYTHONPATH": str(ROOT), **FAULTHANDLER},
    )  # fmt: skip


def _wait_ready(process: subprocess.Popen[str], stream: str, text: str) -> None:
    """Read `stream` until its line holding `text` (the command runs past main's start);
    fails with what the command said when it ends first."""
    lines = process.stdout if stream == "stdout" else process.stderr
    assert lines is not None
    seen = []
    while line := lines.readline():
        if text in line:
            return
        seen.append(line)
    process.kill()
    out, errors = process.communicate(timeout=60)
    pytest.fail(f"the command ended before {text!r}:\n{''.join(seen)}{out}{errors}")


@pytest.mark.slow
@pytest.mark.parametrize("inherited", [sigint_ignored, sigint_blocked], ids=["ignored", "blocked"])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_long_running_command_stops_on_ctrl_c_whatever_its_parent_left(
    name: str, inherited: Callable[[], None], tmp_path: Path
) -> None:
    command = COMMANDS[name]
    store = tmp_path / "sessions.db"
    with Session(str(store), id="watched"):
        noted("recorded")
    argv = [
        str(store) if part == "STORE" else part.replace("DIR", str(tmp_path))
        for part in command.argv.split()
    ]
    process = _started(argv, inherited)
    try:
        _wait_ready(process, *command.ready)
        errors = interrupted(process)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert "Traceback" not in errors
    # Ctrl-C is how these are stopped: exit 0, never click's "Aborted!" (exit 1)
    assert "Aborted!" not in errors, errors
    assert process.returncode == 0 and command.stopped in errors, errors


@pytest.mark.parametrize(
    ("module", "argv", "ready"),
    [
        ("openprogram.cli._runs", "worker STORE --until-idle", "ready:"),
        ("openprogram.cli._live", "sessions serve STORE --port 0", "serving "),
    ],
    ids=["worker", "sessions serve"],
)
def test_a_ctrl_c_as_the_ready_line_is_printed_stops_quietly(
    module: str, argv: str, ready: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Ctrl-C that comes as the command says it is ready, before its own handling
    begins (the worker's drain, the server's loop), stops it with exit 0 as a later one
    does, not with click's "Aborted!" (exit 1)."""
    import importlib

    from click.testing import CliRunner

    from openprogram.cli import cli

    store = tmp_path / "sessions.db"
    with Session(str(store), id="watched"):
        noted("recorded")
    commands = importlib.import_module(module)
    said = commands.say

    def say(text: str, **options: object) -> None:
        said(text, **options)
        if ready in text:
            raise KeyboardInterrupt  # what SIGINT raises in the main thread

    monkeypatch.setattr(commands, "say", say)
    result = CliRunner().invoke(cli, [str(store) if w == "STORE" else w for w in argv.split()])
    assert "Aborted!" not in result.output, result.output
    assert result.exit_code == 0, result.output
