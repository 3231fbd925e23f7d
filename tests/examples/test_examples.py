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
