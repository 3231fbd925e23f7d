"""Child processes of the tests: the "ready", then "go" handshake both sides share.

A child program says "ready" on stdout at the point where its test acts and waits for a
line on stdin (child side: `ready()`); the test starts it with `start()`, waits with
`wait_ready()` and sends "go" (`start_together()` does all three for several children,
so they race from the same moment). Nothing here waits on a timer.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["ROOT", "finish", "ready", "start", "start_together", "wait_ready"]

ROOT = Path(__file__).resolve().parents[2]
"""The checkout: children run from it, so they import openprogram and tests from it."""


def ready() -> bool:
    """Child side: say "ready" and wait for the test's line; whether it said "go"."""
    print("ready", flush=True)
    return sys.stdin.readline().strip() == "go"


def start(argv: Sequence[str]) -> subprocess.Popen[str]:
    """A child running `python ARGV...` in the checkout, its stdin, stdout and stderr
    piped (argv[0] may be "-m" and a module, or a script's path)."""
    return subprocess.Popen(
        [sys.executable, *argv],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_ready(child: subprocess.Popen[str]) -> None:
    """Wait for the child's "ready" (failing the test, with its stderr, otherwise)."""
    assert child.stdout is not None
    line = child.stdout.readline()
    if line.strip() != "ready":
        child.kill()
        _, errors = child.communicate(timeout=60)
        pytest.fail(f"the child did not get ready: {line!r}\n{errors}")


def start_together(argvs: Sequence[Sequence[str]]) -> list[subprocess.Popen[str]]:
    """Start a child per argv, wait until every one is ready, then tell them all "go"."""
    children = [start(argv) for argv in argvs]
    try:
        for child in children:
            wait_ready(child)
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
    except BaseException:
        for child in children:
            child.kill()
            child.communicate(timeout=60)
        raise
    return children


def finish(child: subprocess.Popen[str], timeout: float = 120) -> str:
    """The rest of the child's stdout once it exited with 0 (else the test fails with its
    stderr); a child still running at the timeout is killed."""
    try:
        out, errors = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        out, errors = child.communicate(timeout=60)
        pytest.fail(f"the child did not finish in {timeout} s\n{errors}")
    if child.returncode != 0:
        pytest.fail(f"the child exited with {child.returncode}\n{errors}")
    return out
