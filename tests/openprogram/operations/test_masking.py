"""Secrets in operations (issue 40, item 5): a command that prints the environment, an
operation failing with a password, a key typed into a command's arguments: masked in
every column of every table (the whole database read back), in `sessions ops`, and in
what the model is told; the live operation still runs as its tool made it."""

from __future__ import annotations

import json
import secrets
import sqlite3
from contextlib import closing
from typing import Any

import pytest
from click.testing import CliRunner

from openprogram import Runtime, ScriptedModel, Session, UsageError, agentic_function, llm
from openprogram.callbacks.budget_shared import SharedBudget
from openprogram.cli import cli
from openprogram.operations import (
    LocalOperations,
    Operation,
    OperationContext,
    ProcessOperations,
    bash,
    operation_kind,
    operation_tool,
)
from openprogram.operations.tracker import tracker
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """An OPENAI_API_KEY and a *_PASSWORD of the environment, made when the test runs."""
    key, password = secrets.token_hex(20), "pw-" + secrets.token_hex(12)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("ACME_DB_PASSWORD", password)
    return key, password


def everything(store: str) -> str:
    """Every row of every table of the store, as text."""
    if not store.startswith("postgresql"):
        with closing(sqlite3.connect(store)) as connection:
            return "\n".join(connection.iterdump())
    import psycopg

    with psycopg.connect(store) as connection:
        tables = [
            name
            for (name,) in connection.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = "
                "current_schema() AND table_name LIKE 'openprogram_%'"
            )
        ]
        rows = [
            str(row)
            for table in tables
            for row in connection.execute(f"SELECT * FROM {table}")  # names from the catalog
        ]
    return "\n".join(rows)


@operation_kind("test.leak", effect="idempotent")
def leak(args: dict[str, Any], context: OperationContext) -> Any:
    """Heartbeat with, then fail with or return, the environment's password."""
    import os

    password = os.environ["ACME_DB_PASSWORD"]
    context.heartbeat(f"logging in with {password}")
    if args.get("fail"):
        raise PermissionError(f"login failed for ada with {password}")
    key = os.environ["OPENAI_API_KEY"]
    typed = args["typed"] == f"use {key}"
    return {"dsn": f"postgresql://ada:{password}@db/x", "ran_as_typed": typed}


@operation_tool
def login(fail: bool = False, typed: str = "") -> Operation:
    """Log in to the database."""
    return Operation("test.leak", {"fail": fail, "typed": typed})


@pytest.fixture
def sandbox():
    manager = ProcessOperations(sandbox="rlimits")
    yield manager
    manager.close()


@pytest.mark.slow
def test_a_command_printing_the_environment_leaves_no_secret_in_any_table(
    durable_store, keys, sandbox
):
    key, password = keys
    model = ScriptedModel([call("bash", command="env; echo $ACME_DB_PASSWORD >&2"), "ok"])
    with Session(durable_store, id="env") as session, Runtime(model, operations=sandbox):
        llm("show me the environment", tools=[bash])
    (record,) = session.operations()
    assert record.state == "done" and "OPENAI_API_KEY=***" in record.result["output"]
    dump = everything(durable_store)
    assert "OPENAI_API_KEY=***" in dump  # the command's output is stored, masked
    assert key not in dump and password not in dump
    shown = CliRunner().invoke(cli, ["sessions", "ops", "env", "--store", durable_store, "--json"])
    assert shown.exit_code == 0 and "OPENAI_API_KEY=***" in shown.output
    assert key not in shown.output and password not in shown.output
    told = [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]
    assert "OPENAI_API_KEY=***" in told[0] and key not in told[0] and password not in told[0]


def test_an_operations_result_error_heartbeat_and_arguments_are_masked(durable_store, keys):
    key, password = keys
    model = ScriptedModel(
        [call("login"), call("login", fail=True), call("login", typed=f"use {key}"), "done"]
    )
    with (
        Session(durable_store, id="ops") as session,
        Runtime(model, operations=LocalOperations()),
    ):
        llm("log in", tools=[login])
    done, failed, typed = session.operations()
    assert done.result["dsn"] == "postgresql://ada:***@db/x"  # the live record: as stored
    assert failed.error == "PermissionError: login failed for ada with ***"
    assert typed.args == {"fail": False, "typed": "use ***"} and typed.state == "done"
    assert typed.result["ran_as_typed"] is True  # it ran as its tool made it...
    dump = everything(durable_store)
    assert key not in dump and password not in dump  # ...and nothing of it is stored raw
    assert "logging in with ***" in dump  # the heartbeat's event
    told = "\n".join(str(m["content"]) for m in model.requests[-1].messages)
    assert key not in told and password not in told


def test_an_operation_whose_stored_arguments_were_masked_is_not_run_from_the_store(
    durable_store, keys
):
    key, _ = keys
    with Session(durable_store, id="later") as session:
        node = session.dag.add("code", "tool", input={})
        operation = Operation("test.noop", {"value": f"say {key}"})
        tracker(session).commit(node, [operation], background=True)  # never started here
    with Session.open(durable_store, "later") as resumed:
        tracker(resumed).pick_up_background(LocalOperations())
        (record,) = tracker(resumed).wait([operation.id], timeout_s=30)
    assert record.state == "failed" and "held a secret value" in record.error
    assert record.args == {"value": "say ***"} and key not in everything(durable_store)


def test_the_model_is_told_a_tool_result_with_secret_values_masked(keys, tmp_path):
    """The decision: a tool's result reaches the model with every known secret value
    masked, as the store holds it (the model needs no key; a resumed run sees what the
    first saw). The program's own live value is left as it is."""
    key, password = keys

    @agentic_function
    def settings() -> dict[str, str]:
        """The service's settings."""
        import os

        return {"key": os.environ["OPENAI_API_KEY"], "region": "eu"}

    @agentic_function
    def connect() -> str:
        """Connect to the database."""
        raise ConnectionError(f"bad password {password}")

    model = ScriptedModel([call("settings"), call("connect"), "ok"])
    with Session(str(tmp_path / "s.db")) as session, Runtime(model):
        llm("look", tools=[settings, connect])
    told = [m["content"] for m in model.requests[-1].messages if m["role"] == "tool"]
    assert json.loads(told[0]) == {"key": "***", "region": "eu"}
    assert told[1] == "error: ConnectionError: bad password ***"
    (node,) = [n for n in session.dag.nodes if n.name == "settings"]
    assert node.output["key"] == key  # the live DAG is the program's own
    assert key not in everything(str(tmp_path / "s.db"))


def test_a_shared_budget_named_with_a_secret_is_refused(keys, tmp_path):
    key, _ = keys
    with pytest.raises(UsageError, match="holds a secret value") as raised:
        SharedBudget(f"tenant-{key}", store=str(tmp_path / "b.db"), max_requests=3)
    assert key not in str(raised.value)


def test_a_sessions_info_is_masked_in_the_sessions_table(durable_store, keys):
    from openprogram.store import open_store
    from openprogram.store.format import SessionInfo

    key, _ = keys
    store, _ = open_store(durable_store)
    store.create_session(SessionInfo(id="noted", created_at=1.0, extra={"note": f"k={key}"}))
    assert store.session("noted").extra == {"note": "k=***"}
    assert key not in everything(durable_store)


def test_a_nodes_name_is_masked_in_the_nodes_table(durable_store, keys):
    """A node's name is a column too (an MCP server names its own tools)."""
    key, _ = keys
    with Session(durable_store, id="named") as session:
        node = session.dag.add("code", f"tool_{key}", input={})
        session.dag.complete(node, "ok")
    assert key not in everything(durable_store)
    with Session.open(durable_store, "named") as reopened:
        assert reopened.dag.nodes[0].name == "tool_***"
