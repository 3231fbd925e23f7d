"""Operations you can see (issue 44, item 3): after a SIGTERM drain no operation reads
`running` when no process runs it (each is handed back by its effect rule, with an
event saying so); `sessions ops --events` shows every state change, who asked an
operation to stop and who settled it; the HTML report has an operations panel."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

from openprogram import Session
from openprogram.cli import cli
from openprogram.display.report import report_html
from tests.support.children import ROOT, finish, wait_ready

PROGRAM = textwrap.dedent(
    """
    import sys, time
    from openprogram import RunStopped, Runtime, ScriptedModel, Session, llm
    from openprogram.operations import Operation, operation_tool
    from tests.openprogram.operations import kinds  # registers test.block, test.block_again
    from tests.support.children import ready

    @operation_tool(background=True)
    def charge() -> Operation:
        \"\"\"Charge the card (once), until released.\"\"\"
        return Operation("test.block", {})

    @operation_tool(background=True)
    def index() -> Operation:
        \"\"\"Build the index (idempotent), until released.\"\"\"
        return Operation("test.block_again", {})

    calls = [{"name": "charge", "arguments": {}}, {"name": "index", "arguments": {}}]
    try:
        with Session(sys.argv[1], id="s") as session:
            with Runtime(ScriptedModel([{"tool_calls": calls}, "started"])):
                llm("go", tools=[charge, index])
            while any(r.state != "running" for r in session.operations()):
                time.sleep(0.01)  # the two executors start on their own threads
            ready()  # SIGTERM arrives while the program waits here
    except RunStopped as stopped:
        print("stopped:", stopped.reason, flush=True)
    """
)


def _drained(path: str) -> None:
    """Run PROGRAM on `path` and SIGTERM it while its two background operations run."""
    child = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, path],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_ready(child)
    child.send_signal(signal.SIGTERM)
    assert finish(child) == "stopped: drained by SIGTERM\n"


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGTERM")
def test_after_a_sigterm_drain_no_operation_reads_running(tmp_path):
    path = str(tmp_path / "s.db")
    _drained(path)
    charge, index = Session.open(path, "s").operations()
    assert (charge.kind, charge.state) == ("test.block", "unknown")  # it began: once
    assert "handed back: the process stopped (drained by SIGTERM) while it ran" in str(charge.error)
    assert (index.kind, index.state) == ("test.block_again", "pending")  # runs again
    shown = CliRunner().invoke(cli, ["sessions", "ops", "s", "--store", path, "--events"])
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    at = lines.index(next(line for line in lines if line.startswith(index.id)))
    assert lines[0].startswith(f"{charge.id}  test.block v1  unknown  attempts=1")
    assert lines[at].startswith(f"{index.id}  test.block_again v1  pending  attempts=1")
    once, again = lines[1:at], lines[at + 1 :]
    assert all(line.startswith("    20") and line.split()[2] == "UTC" for line in once + again)
    assert [line.split()[3] for line in once[:2]] == ["pending", "running"]
    assert (
        once[-1].split()[3] == "unknown"
        and "handed back: the process stopped (drained by "
        "SIGTERM) while it ran; its kind is effect='once'"
        in once[-1]
    )
    assert again[-1].split()[3] == "pending" and "the next resumed run runs it" in again[-1]
    assert {line.split()[3] for line in again[1:-1]} == {"running"}
    assert len(once) <= 4 and len(again) <= 4  # heartbeats of one detail: one line
    as_json = CliRunner().invoke(
        cli, ["sessions", "ops", "s", "--store", path, "--events", "--json"]
    )
    rows = json.loads(as_json.output)
    states = [e["state"] for e in rows[1]["events"]]  # every heartbeat with a detail too
    assert states[0] == "pending" and states[-1] == "pending" and set(states[1:-1]) == {"running"}


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGTERM")
def test_the_report_shows_each_operations_states_over_time_and_its_settle(tmp_path):
    path = str(tmp_path / "s.db")
    _drained(path)
    charge, _ = Session.open(path, "s").operations()
    settled = CliRunner().invoke(
        cli, ["sessions", "settle", "s", charge.id, "--result", '"ch_1"', "--by", "alice",
              "--store", path],
    )  # fmt: skip
    assert settled.exit_code == 0, settled.output
    page = report_html(Session.open(path, "s"))
    assert "Operations (2)" in page and "1 done · 1 pending" in page
    assert f">{charge.id}</span>" in page and "effect=once" in page and "effect=idempotent" in page
    assert "settled by alice: done with the result given at " in page and "(now done)" in page
    assert page.count("handed back: the process stopped (drained by SIGTERM)") == 4  # note+row
    assert "from tool call charge #1" in page and "attempts 1" in page
    shown = CliRunner().invoke(cli, ["sessions", "ops", "s", "--store", path, "--events"])
    assert "settled by alice: done with the result given" in shown.output
    again = CliRunner().invoke(
        cli, ["sessions", "settle", "s", charge.id, "--rerun", "--store", path]
    )
    assert again.exit_code == 1
    assert "settled by alice: done with the result given at " in again.output
