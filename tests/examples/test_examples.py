"""The runnable examples run, offline, as a new user would run them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_quickstart_runs_offline_and_shows_what_calls_saw():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "quickstart.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "tagline: Coffee that remembers you." in result.stdout
    assert '[review #1] input={"draft":' in result.stdout
    assert "what the second review saw" in result.stdout


def test_tools_example_runs_offline_and_shows_the_tool_loop():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "tools.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    assert "answer: A shot takes 25 to 30 seconds, so four shots take at most 120 seconds." in out
    assert "streamed: Four shots: two minutes, tops." in out
    assert "code  search_notes #1 [completed] (tool call call_1)" in out
    assert 'assistant: [calls search_notes({"query": "espresso"})]' in out
    assert '[search_notes #1] input={"query": "espresso"} output={"count": 202, "first": [' in out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_fork_example_keeps_the_parents_session_its_own(tmp_path: Path):
    """A child forked inside a session, and a fork Pool, exit as usual (atexit and all)."""
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "fork_in_session.py"), str(tmp_path / "runs.db")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "child: own session stored 1 node(s)" in out
    assert "pool: [0, 1, 4, 9, 16]" in out
    assert "parent: failed writes 0" in out
    assert "stored parent: [('square', 4), ('square', 25)]" in out
    assert "stored child: [('square', 16)]" in out
    assert result.stderr == ""


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_custom_planner_replaces_the_planner_and_perception_on_the_real_demo():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "custom_planner.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "result: done, success=True" in out
    assert "the app saved the form" in out  # judged by the Tk app's own saved state
    assert "field at" in out and '"Name field"' in out  # the perception's knowledge
    # a loaded machine may add steps that wait for OCR labels, so steps are found by goal
    steps = dict(re.findall(r"^step (\d+): (.*)$", out, re.M))
    last = max(map(int, steps))
    assert steps[str(last)] == "finish -> -"
    assert steps[str(last - 1)] == "press Save -> Save (stores the form)"  # it chose the target
    view = out.split("read (render_range callers=5):\n", 1)[1]
    reflected = view.split("\nthe app saved the form", 1)[0].splitlines()
    assert reflected[0].startswith(f"[gui_step #{last - 1}]")  # the window: no earlier steps
    assert reflected[-1].startswith("[reflect #") and len(reflected) == 6


def test_mcp_example_uses_the_filesystem_server_and_serves_a_function():
    from tests.support.mcp_servers import ROOT, npm_server

    server = " ".join(npm_server("server-filesystem"))
    env = {**os.environ, "OPENPROGRAM_MCP_FILESYSTEM": server, "PYTHONPATH": str(ROOT)}
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "mcp_tools.py")],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "answer: I wrote summary.txt listing coffee.txt and tea.txt." in out
    assert "summary.txt: Notes: coffee.txt (Espresso), tea.txt (Green tea)" in out
    assert "files_write_file completed meta.mcp={'server': 'files', 'tool': 'write_file'}" in out
    assert "served: ours_word_count - Count the words and lines of a text." in out
    assert "called: {'words': 4, 'lines': 2}" in out


def test_booking_asks_on_the_terminal_with_ask_and_books_after_a_yes(tmp_path):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "booking.py"), "--store", "trips.db", "--ask"],
        cwd=tmp_path,
        input="maybe\n1\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    out = result.stdout
    assert "Allow book_hotel(name='Harbour Inn', nights=2)?\n  1. yes\n  2. no\n" in out
    assert "'maybe' is not an answer" in out  # explained, then asked again
    assert out.rstrip().endswith("Booked 2 nights at Harbour Inn, confirmation CONF-1042.")
    log = (tmp_path / "trips.db.log").read_text().splitlines()
    assert log == ["searched Lisbon", "booked Harbour Inn for 2 nights"]
