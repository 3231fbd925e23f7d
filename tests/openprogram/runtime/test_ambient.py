"""llm() and allm() as a type checker sees them: the reply text, a `response_format`
instance, or a stream of text chunks, never `Any` (mypy over typed_calls.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
CALLS = Path(__file__).with_name("typed_calls.py")


@pytest.mark.slow
def test_llm_and_allm_return_what_is_asked_for_to_mypy() -> None:
    # the repo's mypy configuration and cache (`make typecheck` warms it)
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(CALLS.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == ""
