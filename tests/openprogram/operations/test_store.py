"""Operations in the stores: the tables of format_version 8, the migration from 7, the
lease fencing and the compare-and-set of every state change; `sessions ops`."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest
from click.testing import CliRunner

from openprogram import Runtime, ScriptedModel, Session, SessionLocked, llm
from openprogram.cli import cli
from openprogram.operations import Operation, operation_tool
from openprogram.operations.tracker import tracker
from openprogram.store import FORMAT_VERSION
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


def test_a_version_7_store_is_migrated_and_records_operations(tmp_path):
    path = tmp_path / "v7.db"
    with Session(path, id="old") as session:
        session.submit("hello")
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("DROP TABLE openprogram_operation_events")
        connection.execute("DROP TABLE openprogram_operations")
        connection.execute("UPDATE openprogram_meta SET value = '7'")
    with Session.open(path, "old") as session:
        node = session.dag.add("code", "tool", input={})
        tracker(session).commit(node, [Operation("test.add", {"a": 1, "b": 1})], background=True)
    assert session.store.format_version == FORMAT_VERSION == 9
    assert [r.kind for r in Session.open(path, "old").operations()] == ["test.add"]


def test_state_changes_are_checked_against_the_state_they_expect(store):
    with Session(store, id="s") as session:
        node = session.dag.add("code", "tool", input={})
        operation = Operation("test.add", {"a": 1, "b": 1})
        tracker(session).commit(node, [operation], background=True)
        backend = session.store
        assert backend.update_operation("s", operation.id, ["pending"], "running", at=1.0)
        assert not backend.update_operation("s", operation.id, ["pending"], "running", at=2.0)
        assert backend.update_operation("s", operation.id, ["running"], "done", at=3.0,
                                        result="2")  # fmt: skip
        assert not backend.update_operation("s", operation.id, ["running"], "failed", at=4.0)
        (row,) = backend.operations("s")
        assert (row.state, json.loads(row.result)) == ("done", 2)
        states = [e.state for e in backend.operation_events("s", operation.id)]
        assert states == ["pending", "running", "done"]


def test_a_store_without_the_sessions_lease_records_no_operations(durable_store):
    with Session(durable_store, id="s") as session:
        node = session.dag.add("code", "tool", input={})
        operation = Operation("test.add", {"a": 1, "b": 1})
        tracker(session).commit(node, [operation], background=True)
    reader = Session.open(durable_store, "s")  # not entered: it holds no lease
    with pytest.raises(SessionLocked, match="writer lease"):
        reader.store.update_operation("s", operation.id, ["pending"], "running", at=1.0)
    assert reader.operations()[0].state == "pending"
    reader.close()


@operation_tool(background=True)
def later(a: int) -> Operation:
    """Add one, in the background."""
    return Operation("test.add", {"a": a, "b": 1})


def test_sessions_ops_lists_waits_for_and_cancels_operations(tmp_path):
    path = str(tmp_path / "s.db")
    model = ScriptedModel([{"tool_calls": [{"name": "later", "arguments": {"a": 41}}]}, "ok"])
    with Session(path, id="s") as session, Runtime(model):
        llm("go", tools=[later])
        (record,) = session.operations()
        tracker(session).wait([record.id])  # its end is recorded while the lease is held
        node = session.dag.add("code", "tool", input={})
        queued = Operation("test.add", {"a": 0, "b": 0})
        tracker(session).commit(node, [queued], background=True)
    runner = CliRunner()
    waited = runner.invoke(cli, ["sessions", "ops", "s", "--store", path, "--wait", record.id,
                                 "--json"])  # fmt: skip
    assert waited.exit_code == 0, waited.output
    (shown,) = json.loads(waited.output)
    assert (shown["state"], shown["result"]) == ("done", 42)
    cancelled = runner.invoke(cli, ["sessions", "ops", "s", "--store", path, "--cancel", queued.id])
    assert cancelled.exit_code == 0, cancelled.output
    assert f"{queued.id}  test.add v1  cancelled" in cancelled.output
    again = runner.invoke(cli, ["sessions", "ops", "s", "--store", path, "--cancel", record.id])
    assert again.exit_code != 0 and "is done" in again.output
    missing = runner.invoke(cli, ["sessions", "ops", "s", "--store", path, "--wait", "op-no"])
    assert missing.exit_code != 0 and "no operation 'op-no'" in missing.output
