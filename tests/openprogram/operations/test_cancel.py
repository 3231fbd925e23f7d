"""`sessions ops --cancel` from another process: a running operation stops at its next
heartbeat, in the program that runs it (a real child process holding the session)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram import Session
from openprogram.cli import cli

ROOT = Path(__file__).resolve().parents[3]
PROGRAM = textwrap.dedent(
    """
    import sys
    from openprogram import Runtime, ScriptedModel, Session, llm
    from openprogram.operations import Operation, operation_tool
    from openprogram.operations.tracker import tracker
    from tests.openprogram.operations import kinds  # registers test.block

    @operation_tool(background=True)
    def block() -> Operation:
        \"\"\"Work until cancelled.\"\"\"
        return Operation("test.block", {})

    asks = ScriptedModel([{"tool_calls": [{"name": "block", "arguments": {}}]}, "ok"])
    with Session(sys.argv[1], id="s") as session, Runtime(asks):
        llm("go", tools=[block])
        (record,) = session.operations()
        print(record.id, flush=True)
        (ended,) = tracker(session).wait([record.id], 60)
        print(ended.state, flush=True)
    """
)


@pytest.mark.slow
def test_a_running_operation_is_cancelled_from_another_process(tmp_path):
    path = str(tmp_path / "s.db")
    child = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, path], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        id = child.stdout.readline().strip()
        assert id.startswith("op-")
        runner = CliRunner()
        asked = runner.invoke(
            cli, ["sessions", "ops", "s", "--store", path, "--cancel", id, "--wait", id, "--json"]
        )
        assert asked.exit_code == 0, asked.output
        said, listed = asked.output.split("\n", 1)
        assert said == f"asked operation {id} to stop: the program running session s stops it"
        (shown,) = json.loads(listed)
        assert shown["state"] == "cancelled"
        assert child.stdout.readline().strip() == "cancelled"
        assert child.wait(60) == 0
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    events = Session.open(path, "s").store.operation_events("s", id)
    assert [e.state for e in events][-1] == "cancelled"
    assert any((e.detail or "").startswith("cancel requested by ") for e in events)
    again = CliRunner().invoke(cli, ["sessions", "ops", "s", "--store", path, "--cancel", id])
    assert again.exit_code != 0 and "is cancelled: it is not running" in again.output


def test_a_cancel_asked_while_no_program_runs_it_applies_when_resumed(tmp_path):
    import pytest

    from openprogram import Runtime, ScriptedModel, llm
    from openprogram.operations import Operation, operation_tool
    from tests.openprogram.operations.test_tool import _Dies

    path, log = str(tmp_path / "s.db"), tmp_path / "log"

    @operation_tool
    def append(name: str) -> Operation:
        """Append a name (idempotent)."""
        return Operation("test.append", {"log": str(log), "name": name})

    def model(request):
        tool = [m for m in request.messages if m["role"] == "tool"]
        if tool:
            return f"told: {tool[0]['content']}"
        return {"tool_calls": [{"name": "append", "arguments": {"name": "x"}}]}

    with (
        Session(path, id="s"),
        Runtime(ScriptedModel(model), operations=_Dies()),
        pytest.raises(KeyboardInterrupt),
    ):
        llm("go", tools=[append])
    (record,) = Session.open(path, "s").operations()
    assert record.state == "running"  # its process died while it ran
    asked = CliRunner().invoke(
        cli, ["sessions", "ops", "s", "--store", path, "--cancel", record.id]
    )
    assert asked.exit_code == 0, asked.output
    assert "it was running when its program ended" in asked.output
    with Session.open(path, "s", resume=True) as session, Runtime(ScriptedModel(model)):
        answer = llm("go", tools=[append])
    assert "cancelled: asked to stop" in answer
    assert session.operations()[0].state == "cancelled" and not log.exists()  # not run again


def test_a_cancel_request_needs_no_lease(durable_store):
    from openprogram.operations import Operation
    from openprogram.operations.tracker import tracker
    from tests.openprogram.operations import kinds  # noqa: F401 - registers test.add

    with Session(durable_store, id="s") as session:
        node = session.dag.add("code", "tool", input={})
        operation = Operation("test.add", {"a": 1, "b": 1})
        tracker(session).commit(node, [operation], background=True)
    reader = Session.open(durable_store, "s")  # not entered: holds no lease
    assert not reader.store.cancel_requested("s", operation.id)
    assert reader.store.request_cancel("s", operation.id, at=1.0, by="me") == "pending"
    assert reader.store.cancel_requested("s", operation.id)
    assert reader.store.request_cancel("s", "op-none", at=1.0, by="me") is None
    (event,) = reader.store.operation_events("s", operation.id)[-1:]
    assert (event.state, event.detail) == ("pending", "cancel requested by me")
    reader.close()
