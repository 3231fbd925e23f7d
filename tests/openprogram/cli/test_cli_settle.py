"""`openprogram sessions settle`'s arguments under attack (issue 40, item 11): a
60 000-deep --result and a 1 MB NODE get a clear, bounded usage error (exit 2), never a
traceback, and nothing is settled."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner, Result

from openprogram import Session, agentic_function
from openprogram.cli import cli

ROOT = Path(__file__).resolve().parents[3]


@agentic_function(effect="once")
def pay(amount: int) -> str:
    """Charge `amount`."""
    return "ch-1"


def settle(store: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "sessions",
         "settle", "s", *arguments, "--store", str(store)],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )  # fmt: skip


def invoke(store: Path, *arguments: str) -> Result:
    command = ["sessions", "settle", "s", *arguments, "--store", str(store)]
    return CliRunner().invoke(cli, command, prog_name="openprogram")


def test_a_deep_result_and_a_huge_node_are_clear_bounded_usage_errors(tmp_path: Path):
    store = tmp_path / "s.db"
    with Session(store, id="s") as session:
        pay(3)
    node = session.dag.find(name="pay")[0].id
    deep = settle(store, node, "--result", "[" * 60_000 + "]" * 60_000)
    assert deep.returncode == 2 and "Traceback" not in deep.stderr
    assert "--result: nests lists and objects deeper than 100 levels" in deep.stderr
    assert len(deep.stderr) < 1000
    # an argument over 128 KiB cannot reach a process through exec: in the process
    huge = invoke(store, "n" * 1_000_000, "--result", "1")
    assert huge.exit_code == 2 and len(huge.output) < 1000
    assert "NODE: 'nnnn" in huge.output and "is 1,000,000 characters" in huge.output
    big = invoke(store, node, "--result", "x" * (2 << 20))
    assert big.exit_code == 2 and "a result is at most 1,048,576" in big.output
    with Session.open(store, "s") as reopened:
        assert reopened.dag.find(name="pay")[0].output == "ch-1"  # nothing settled
