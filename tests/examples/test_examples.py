"""The runnable examples run, offline, as a new user would run them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
