"""A resumed call's duration is the time it ran, not the downtime between a crash and
its resume: a real child process is killed with SIGKILL inside a call, and the run is
resumed later; `sessions show` says the downtime apart."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram import Session, agentic_function
from openprogram.cli import cli

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
ROOT = Path(__file__).resolve().parents[3]


@agentic_function
def step(i: int) -> int:
    return i


@agentic_function
def slow() -> str:
    if os.environ.get("OPENPROGRAM_TEST_BLOCK"):  # the first run: stopped in here
        print("ready", flush=True)
        sys.stdin.readline()
    return "done"


@agentic_function
def job() -> str:
    step(0)
    step(1)
    return slow()


CHILD = (
    "import sys\n"
    "from openprogram import Session\n"
    "from tests.openprogram.session.test_resumed_durations import job\n"
    "with Session(sys.argv[1], id='r'):\n"
    "    job()\n"
)


def test_a_resumed_call_counts_the_time_it_ran_and_says_the_downtime_apart(tmp_path: Path):
    store = str(tmp_path / "runs.db")
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, store],
        cwd=ROOT,
        env={**os.environ, "OPENPROGRAM_TEST_BLOCK": "1", "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    dead = time.time()  # every record of the first run was made before this
    child.stdin.close()  # type: ignore[union-attr]
    child.stdout.close()

    resumed = time.time()  # the resume takes the calls up after this
    with Session.open(store, "r", resume=True) as session:
        assert job() == "done"
        dag = session.dag
    down = resumed - dead
    for name in ("job", "slow"):
        node = dag.find(name=name)[0]
        assert node.meta["resumed"] == 1
        assert node.down_s >= down > 0
        span = node.ended_at - node.started_at
        assert node.duration_s == pytest.approx(span - node.down_s, abs=1e-6)
        assert node.duration_s <= span - down
    assert all(n.down_s == 0.0 for n in dag.find(name="step"))  # answered from the record

    shown = CliRunner().invoke(cli, ["sessions", "show", "r", "--store", store])
    assert shown.exit_code == 0, shown.output
    first = dag.find(name="job")[0]
    line = next(line for line in shown.output.splitlines() if "job #1" in line)
    assert "[resumed after" in line and " down]" in line
    assert f"  {_text(first.duration_s)}  " in line  # the time it ran, not the span
    assert "down, resumed)" in shown.output.splitlines()[0]


def _text(seconds: float) -> str:
    """A duration as the call tree writes it."""
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
