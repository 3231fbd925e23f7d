"""mypy over the files of typed calls (`typed_*.py` beside a test): what it reports.

Such a file is checked, never run: `assert_type` lines fail when a return is `Any`, and
`type: ignore` lines (with warn-unused-ignores) fail when a misuse goes unnoticed. The
repo's mypy configuration and cache are used (`make typecheck` warms the cache).

Every typed file is checked in one mypy run, once per process, and each test reads its
own file's part: a run on a cold cache (a fresh clone) checks the whole project, 37 s of
CPU, and one run per file paid it once per file (two at once on a loaded machine ran past
their timeout). The tests that read it share an xdist group (TYPED_CALLS) for that.
"""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

from tests.support.children import ROOT

__all__ = ["TYPED_CALLS", "mypy_reports"]

TYPED_CALLS = "typed-calls"
"""The xdist group of the tests that read mypy's reports: one worker, one mypy run."""


def mypy_reports(path: Path) -> str:
    """mypy's errors on `path` ("" when it passes), with any error mypy reports outside
    the typed files (a module they import), the run's exit code checked against them."""
    name = path.relative_to(ROOT).as_posix()
    reports = _reports()
    if name not in reports:
        raise ValueError(f"{name} is not a typed-calls file (tests/**/typed_*.py)")
    return reports[name] + reports[""]


@functools.cache
def _reports() -> dict[str, str]:
    """Each typed file's report lines, and under "" the lines of no typed file."""
    names = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.glob("tests/**/typed_*.py"))
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary", *names],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,  # a cold cache on a loaded machine: the project and its libraries
        check=False,
    )
    reports = dict.fromkeys([*names, ""], "")
    for line in (run.stdout + run.stderr).splitlines(keepends=True):
        owner = next((name for name in names if line.startswith(f"{name}:")), "")
        reports[owner] += line
    assert (run.returncode == 0) == (not any(reports.values())), run.stdout + run.stderr
    return reports
