"""The layer contracts of pyproject.toml: kept by the code, and broken by an upward import.

`make lint` runs import-linter on the tree; these tests run it on a copy of the packages,
once as they are and once with one probe import added, so the contract is known to bite
(type-only imports included).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of both packages and pyproject.toml, importable from `tmp_path` first."""
    ignore = shutil.ignore_patterns("__pycache__")
    for package in ("openprogram", "gui_harness"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=ignore)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def _probe(path: Path, statement: str) -> None:
    text = path.read_text()
    path.write_text(text + f"\n\nif TYPE_CHECKING:  # probe\n    {statement}  # noqa\n")


def test_the_packages_keep_their_layer_contracts(tree: Path) -> None:
    result = _lint(tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ", 0 broken." in result.stdout and " BROKEN" not in result.stdout


@pytest.mark.parametrize(
    ("module", "statement", "broken"),
    [
        (
            "openprogram/core/_context.py",
            "from openprogram.session.session import Session",
            "openprogram.core._context -> openprogram.session.session",
        ),
        (
            "openprogram/agentic/function.py",
            "from openprogram.runtime.runtime import Runtime",
            "openprogram.agentic.function -> openprogram.runtime.runtime",
        ),
        (
            "openprogram/runtime/streaming.py",
            "from openprogram.runtime.tools import ToolLoop",
            "openprogram.runtime.streaming -> openprogram.runtime.tools",
        ),
        (  # evals' data never reaches up to the facade that runs it (issue 42)
            "openprogram/evals/dataset.py",
            "from openprogram.evals.evaluation import EvalReport",
            "openprogram.evals.dataset -> openprogram.evals.evaluation",
        ),
        (
            "openprogram/cli/__init__.py",
            "import gui_harness",
            "openprogram.cli -> gui_harness",
        ),
    ],
)
def test_a_type_only_upward_import_breaks_the_contract(
    tree: Path, module: str, statement: str, broken: str
) -> None:
    _probe(tree / module, statement)
    result = _lint(tree)
    assert result.returncode != 0
    assert broken in result.stdout
