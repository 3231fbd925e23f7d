"""mypy over a file of typed calls (`typed_*.py` beside a test): what it reports.

Such a file is checked, never run: `assert_type` lines fail when a return is `Any`, and
`type: ignore` lines (with warn-unused-ignores) fail when a misuse goes unnoticed. The
repo's mypy configuration and cache are used (`make typecheck` warms the cache).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.children import ROOT

__all__ = ["mypy_reports"]


def mypy_reports(path: Path) -> str:
    """mypy's errors on `path` ("" when it passes), its exit code checked against them."""
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", str(path.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    reports = run.stdout + run.stderr
    assert (run.returncode == 0) == (reports == ""), reports
    return reports
