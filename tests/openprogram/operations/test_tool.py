"""operation_tool through llm(): committed with its node, run, recorded, resumed."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from openprogram import EffectUnknown, Runtime, ScriptedModel, Session, UsageError, llm
from openprogram.errors import UnsupportedOperation
from openprogram.operations import (
    LocalOperations,
    Operation,
    operation_tool,
    operation_tools,
    settle_operation,
)
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


@operation_tool
def add(a: int, b: int) -> Operation:
    """Add two integers."""
    return Operation("test.add", {"a": a, "b": b})


@operation_tool
def both(a: int) -> list[Operation]:
    """Two operations."""
    return [Operation("test.add", {"a": a, "b": 1}), Operation("test.add", {"a": a, "b": 2})]


@operation_tool
def explode(why: str) -> Operation | str:
    """Fail, or refuse an empty reason."""
    if not why:
        return "error: give a reason"
    return Operation("test.fail", {"why": why})


@operation_tool(background=True)
def wait_for(file: str) -> Operation:
    """Start work that runs until a file exists."""
    return Operation("test.block", {"file": file})


def call(tool, **arguments):
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def test_the_spec_is_the_functions_and_the_results_reach_the_model(store):
    model = ScriptedModel([call("add", a=2, b=3), call("both", a=10), "done"])
    with Session(store) as session, Runtime(model):
        assert llm("go", tools=[add, both]) == "done"
    assert add.spec["parameters"]["required"] == ["a", "b"]
    tools = [n for n in session.dag.nodes if n.kind == "code"]
    assert [n.output for n in tools] == [5, [11, 12]]
    records = session.operations()
    assert [r.state for r in records] == ["done"] * 3
    assert [r.node for r in records] == [tools[0].id, tools[1].id, tools[1].id]
    assert tools[1].meta["operations"] == [r.id for r in records[1:]]
    last = model.requests[-1].messages
    assert [m["content"] for m in last if m["role"] == "tool"] == ["5", "[11, 12]"]


def test_every_state_change_is_recorded_in_the_store(durable_store):
    with (
        Session(durable_store, id="s"),
        Runtime(ScriptedModel([call("add", a=1, b=1), "ok"])),
    ):
        llm("go", tools=[add])
    reopened = Session.open(durable_store, "s")
    (record,) = reopened.operations()
    assert (record.state, record.result, record.attempts) == ("done", 2, 1)
    events = reopened.store.operation_events("s", record.id)
    assert [e.state for e in events] == ["pending", "running", "done"]
    (node,) = [n for n in reopened.dag.nodes if n.name == "add"]
    assert node.meta["operations"] == [record.id] and node.output == 2
    reopened.close()


def test_the_node_and_its_operations_are_committed_together(tmp_path):
    path = tmp_path / "s.db"
    seen = {}

    @operation_tool
    def spy(a: int) -> Operation:
        """Describe."""
        return Operation("test.add", {"a": a, "b": 0})

    from openprogram.operations import tracker as tracker_module

    real = tracker_module.Tracker.start

    def look(self, ids, manager):  # what another reader sees once the commit returned
        if "ops" in seen:  # the first start only: the operation may be done by a later one
            return real(self, ids, manager)
        with closing(sqlite3.connect(path)) as connection:
            seen["ops"] = connection.execute("SELECT state FROM openprogram_operations").fetchall()
            seen["data"] = connection.execute(
                "SELECT data FROM openprogram_nodes WHERE name = 'spy'"
            ).fetchone()
        return real(self, ids, manager)

    tracker_module.Tracker.start = look
    try:
        with Session(path) as session, Runtime(ScriptedModel([call("spy", a=1), "ok"])):
            llm("go", tools=[spy])
    finally:
        tracker_module.Tracker.start = real
    assert seen["ops"] == [("pending",)]
    assert json.loads(seen["data"][0])["meta"]["operations"] == [session.operations()[0].id]


def test_a_failed_operation_goes_back_to_the_model_as_the_calls_error(store):
    model = ScriptedModel([call("explode", why="boom"), call("explode", why=""), "ok"])
    with Session(store) as session, Runtime(model):
        llm("go", tools=[explode])
    first, second = [n for n in session.dag.nodes if n.kind == "code"]
    assert first.status == "error" and "RuntimeError: boom" in first.error
    assert "OperationFailed" in first.error
    assert second.output == "error: give a reason"  # no operation: returned as it is
    (record,) = session.operations()
    assert (record.state, record.error) == ("failed", "RuntimeError: boom")


def test_a_background_tool_returns_a_handle_and_the_model_waits_for_it(store, tmp_path):
    release = tmp_path / "release"
    with Session(store) as session:
        with Runtime(ScriptedModel([call("wait_for", file=str(release)), "started"])):
            llm("go", tools=[wait_for])
        (node,) = [n for n in session.dag.nodes if n.name == "wait_for"]
        (record,) = session.operations()
        assert node.output["operation"] == record.id and node.output["kind"] == "test.block"
        assert node.output["state"] in ("pending", "running")  # returned at once
        assert record.background
        with Runtime(ScriptedModel([call("poll_operation", operation=record.id), "ok"])):
            llm("poll", tools=operation_tools())
        polled = [n for n in session.dag.nodes if n.name == "poll_operation"][-1]
        assert polled.output["state"] in ("pending", "running")
        release.touch()
        waiting = ScriptedModel([call("wait_operation", operation=record.id, timeout_s=30), "ok"])
        with Runtime(waiting):
            llm("wait", tools=operation_tools())
    waited = [n for n in session.dag.nodes if n.name == "wait_operation"][-1]
    assert waited.output["state"] == "done" and waited.output["result"] == "released"
    assert session.operations()[0].state == "done"


def test_a_background_operation_is_cancelled_through_the_tool(store):
    @operation_tool(background=True)
    def forever() -> Operation:
        """Run until cancelled."""
        return Operation("test.block", {})

    with Session(store) as session:
        with Runtime(ScriptedModel([call("forever"), "started"])):
            llm("go", tools=[forever])
        (record,) = session.operations()
        with Runtime(ScriptedModel([call("cancel_operation", operation=record.id), "ok"])):
            llm("stop", tools=operation_tools())
        with Runtime(ScriptedModel([call("wait_operation", operation=record.id), "ok"])):
            llm("wait", tools=operation_tools())
    assert session.operations()[0].state == "cancelled"


def test_a_runtimes_own_manager_runs_the_operations(store):
    manager = LocalOperations(max_workers=1)
    seen = []
    real = manager.submit

    def submit(operation, kind, report):
        seen.append(operation.kind)
        real(operation, kind, report)

    manager.submit = submit
    with Session(store), Runtime(ScriptedModel([call("add", a=1, b=2), "ok"]), operations=manager):
        llm("go", tools=[add])
    manager.close()
    assert seen == ["test.add"]


class _Dies:
    """A manager whose process dies once the operation is recorded running."""

    def submit(self, operation, kind, report):
        report(operation.id, "running", None)
        raise KeyboardInterrupt

    def cancel(self, id):
        return False

    def close(self):
        pass


def _once_then_answer(request):
    if any(m["role"] == "tool" for m in request.messages):
        return "after"
    return call("once", name="x")


def _crash_in_once(path, tmp_path, described):
    @operation_tool
    def once(name: str) -> Operation:
        """Append once."""
        described.append(name)
        return Operation("test.append_once", {"log": str(tmp_path / "log"), "name": name})

    with (
        Session(path, id="s"),
        Runtime(ScriptedModel(_once_then_answer), operations=_Dies()),
        pytest.raises(KeyboardInterrupt),
    ):
        llm("go", tools=[once])
    return once


def test_a_resumed_call_takes_its_stored_operations_up_instead_of_describing_new_ones(tmp_path):
    path = str(tmp_path / "s.db")
    described = []
    once = _crash_in_once(path, tmp_path, described)
    (record,) = Session.open(path, "s").operations()
    assert record.state == "running" and described == ["x"]
    for _ in range(2):  # unknown until settled, however often it is resumed
        with (
            Session.open(path, "s", resume=True),
            Runtime(ScriptedModel(_once_then_answer)),
            pytest.raises(EffectUnknown, match=record.id),
        ):
            llm("go", tools=[once])
    assert described == ["x"]  # never described again, never run again
    assert not (tmp_path / "log").exists()
    assert [r.state for r in Session.open(path, "s").operations()] == ["unknown"]
    with Session.open(path, "s") as session:
        settle_operation(session, record.id, result="x was appended")
    with Session.open(path, "s", resume=True) as resumed, Runtime(ScriptedModel(_once_then_answer)):
        assert llm("go", tools=[once]) == "after"
    (node,) = [n for n in resumed.dag.nodes if n.name == "once"]
    assert node.status == "completed" and node.output == "x was appended"
    events = Session.open(path, "s").store.operation_events("s", record.id)
    assert [e.state for e in events] == ["pending", "running", "unknown", "done"]


def test_an_operation_settled_to_run_again_runs_on_resume(tmp_path):
    path = str(tmp_path / "s.db")
    described = []
    once = _crash_in_once(path, tmp_path, described)
    (record,) = Session.open(path, "s").operations()
    with (
        Session.open(path, "s", resume=True),
        Runtime(ScriptedModel(_once_then_answer)),
        pytest.raises(EffectUnknown),
    ):
        llm("go", tools=[once])
    with Session.open(path, "s") as session:
        with pytest.raises(UsageError, match="no operation 'op-none'"):
            settle_operation(session, "op-none")
        settle_operation(session, record.id, rerun=True)
    with Session.open(path, "s", resume=True), Runtime(ScriptedModel(_once_then_answer)):
        assert llm("go", tools=[once]) == "after"
    assert (tmp_path / "log").read_text() == "start x\nend x\n"
    (record,) = Session.open(path, "s").operations()
    assert (record.state, record.attempts) == ("done", 2)


def test_an_unknown_kind_on_resume_is_a_clear_error(tmp_path):
    path = str(tmp_path / "s.db")
    described = []
    once = _crash_in_once(path, tmp_path, described)
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE openprogram_operations SET version = 9")
    with (
        Session.open(path, "s", resume=True),
        Runtime(ScriptedModel(_once_then_answer)),
        pytest.raises(UnsupportedOperation, match=r"kind 'test\.append_once' version 9"),
    ):
        llm("go", tools=[once])
    assert described == ["x"]


class _Refuses:
    """A manager that cannot take work (a cluster that is not there)."""

    def submit(self, operation, kind, report):
        raise ConnectionError("no cluster at ray-head:6379")

    def cancel(self, id):
        return False

    def close(self):
        pass


def test_an_operation_its_manager_refuses_is_failed_and_the_model_is_told(store):
    model = ScriptedModel([call("add", a=1, b=2), "ok"])
    with Session(store) as session, Runtime(model, operations=_Refuses()):
        llm("go", tools=[add])
    (node,) = [n for n in session.dag.nodes if n.name == "add"]
    assert node.status == "error" and "no cluster" in node.error
    (record,) = session.operations()
    assert (record.state, record.error) == (
        "failed",
        "ConnectionError: no cluster at ray-head:6379",
    )
