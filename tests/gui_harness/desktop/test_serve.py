"""`openprogram serve`: a real private display served until SIGTERM or Ctrl-C, reachable
only with the token it prints."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable

import pytest

from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.desktop.serve import parse_size
from gui_harness.errors import DesktopAuthError
from openprogram.errors import UsageError
from tests.support.interrupting import (
    FAULTHANDLER,
    interrupted,
    sigint_blocked,
    sigint_ignored,
)

needs_xvfb = pytest.mark.skipif(shutil.which("Xvfb") is None, reason="needs Xvfb")


@pytest.mark.x11
@needs_xvfb
def test_serve_prints_the_url_and_token_and_only_the_token_opens_it() -> None:
    command = [sys.executable, "-c", "from openprogram.cli import main; main()"]
    server = subprocess.Popen(
        [*command, "serve", "--size", "320x240"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        printed: dict[str, str] = {}
        while "token" not in printed:
            line = server.stdout.readline()  # type: ignore[union-attr]
            assert line, f"the server ended early: {server.stderr.read()}"  # type: ignore[union-attr]
            key, _, value = line.strip().partition(": ")
            if key in ("url", "token"):
                printed[key] = value

        desktop = RemoteDesktop(printed["url"], token=printed["token"])
        assert desktop.size == (320, 240)
        assert desktop.screenshot().size == (320, 240)
        with pytest.raises(DesktopAuthError, match="token"):
            RemoteDesktop(printed["url"], token="x" * 32).screenshot()
    finally:
        server.send_signal(signal.SIGTERM)
        out, _ = server.communicate(timeout=60)
    assert server.returncode == 0
    assert out.strip().endswith("stopped")


@pytest.mark.x11
@needs_xvfb
@pytest.mark.parametrize("inherited", [sigint_ignored, sigint_blocked], ids=["ignored", "blocked"])
def test_serve_stops_on_ctrl_c_whatever_its_parent_left(inherited: Callable[[], None]) -> None:
    """A parent that ignores or blocks SIGINT hands that on; the CLI's entry point puts it
    back, so the Ctrl-C this command promises stops it (tests/openprogram/cli/
    test_ctrl_c.py holds openprogram's own commands to the same)."""
    server = subprocess.Popen(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "serve",
         "--size", "320x240"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=inherited,
        env={**os.environ, **FAULTHANDLER},
    )  # fmt: skip
    try:
        assert server.stdout is not None
        while "Ctrl-C stops" not in (line := server.stdout.readline()):
            assert line, f"the server ended early: {server.communicate(timeout=60)[1]}"
        errors = interrupted(server)
    finally:
        if server.poll() is None:
            server.kill()
            server.communicate()
    assert server.returncode == 0, errors


def test_a_size_that_is_not_width_x_height_says_the_form() -> None:
    assert parse_size("640x480") == (640, 480)
    with pytest.raises(UsageError, match=r"is not WIDTHxHEIGHT in pixels, e\.g\. 1280x800"):
        parse_size("640 by 480")
