"""A damaged store is reported, never read as a shorter session (DESIGN.md §10).

A real recorded SQLite file with 8 KB of garbage written into its middle, and rows made
invalid with raw SQL (also on PostgreSQL): opening raises StoreDamaged saying what is
damaged and what to do, nothing new is recorded into the file, and `openprogram sessions
check` reports the damage and how much is readable, exiting 1, without a traceback.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from openprogram import Runtime, Session, StoreDamaged, StoreError
from openprogram.cli import cli
from openprogram.store import SQLiteStore
from tests.openprogram.store import programs

NODES = 600


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding session "run": 600 calls, plus one agent run with llm exchanges."""
    path = tmp_path_factory.mktemp("recorded") / "runs.db"
    with Session(path, id="run"):
        for i in range(NODES):
            programs.count(i)
    with Session(path, id="agent"), Runtime(programs.model()):
        programs.agent("task")
    return path


def cli_run(*arguments: str) -> Any:
    return CliRunner().invoke(cli, list(arguments), prog_name="openprogram")


def _damage(source: Path, target: Path, offset_fraction: float) -> Path:
    shutil.copy(source, target)
    size = target.stat().st_size
    with open(target, "r+b") as file:
        file.seek(int(size * offset_fraction))
        file.write(random.Random(9).randbytes(8192))
    return target


@pytest.mark.parametrize("where", [0.5, 0.3, 0.8])
def test_garbage_in_the_middle_of_a_file_is_reported_never_read_as_a_shorter_session(
    recorded: Path, tmp_path: Path, where: float
):
    damaged = _damage(recorded, tmp_path / "damaged.db", where)
    before = damaged.read_bytes()
    with pytest.raises(
        StoreDamaged, match=r"is damaged .*Restore it from a backup.*sessions check"
    ) as caught:
        Session.open(damaged, "run")
    assert str(damaged) in str(caught.value)
    with pytest.raises(StoreDamaged):  # and nothing new goes into the damaged file
        Session(damaged, id="new")
    assert damaged.read_bytes() == before

    result = cli_run("sessions", "check", "--store", str(damaged))
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert f"store sqlite:///{damaged}: DAMAGED" in result.output
    assert "What to do: restore the store from a backup" in result.output
    assert "Traceback" not in result.output
    assert "nodes readable" in result.output and "rows read are nodes" in result.output
    shown = cli_run("sessions", "show", "run", "--store", str(damaged))
    assert shown.exit_code == 1 and "is damaged" in shown.output
    assert not isinstance(shown.exception, (StoreError, sqlite3.Error))


def test_without_the_check_the_damage_would_have_gone_unnoticed_or_failed(
    recorded: Path, tmp_path: Path
):
    """What the check on opening prevents: read past it, the session comes out short."""
    damaged = _damage(recorded, tmp_path / "damaged.db", 0.5)
    store = SQLiteStore(damaged, read_only=True, check=False)
    try:
        nodes = len(Session.open(store, "run").dag)
    except StoreDamaged:  # SQLite noticed on its own this time
        nodes = -1
    store.close()
    assert nodes < NODES


def test_an_intact_store_checks_ok_with_every_node_readable(recorded: Path):
    result = cli_run("sessions", "check", "--store", str(recorded))
    assert result.exit_code == 0, result.output
    assert f"store sqlite:///{recorded}: ok" in result.output
    agent = Session.open(recorded, "agent")
    assert f"2 session(s), {NODES + len(agent.dag):,} nodes readable" in result.output
    agent.close()
    one = cli_run("sessions", "check", "run", "--store", str(recorded))
    assert one.exit_code == 0 and f"session run: ok, {NODES} of {NODES} rows" in one.output


def _sql(store: Any, statement: str) -> None:
    if str(store).startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as connection:
            connection.execute(statement)
        return
    with closing(sqlite3.connect(store)) as connection, connection:
        connection.execute(statement)


BAD_ROWS = {
    "bad JSON": ("data = '{\"expose\": '", r"its data column is not valid JSON"),
    "invalid kind": (
        "kind = 'banana'",
        r"kind: Input should be 'user', 'code' or 'llm' \(found 'banana'\)",
    ),
    "data a list": ("data = '[1, 2]'", r"its data column holds a JSON list, not an object"),
    "input bad JSON": ("input = '{\"i\": 1'", r"its input column is not valid JSON"),
}


@pytest.mark.parametrize("damage", BAD_ROWS, ids=list(BAD_ROWS))
def test_a_bad_row_is_a_store_error_naming_the_row_and_what_to_do(durable_store: Any, damage: str):
    with Session(durable_store, id="rows"):
        for i in range(5):
            programs.count(i)
    target = Session.open(durable_store, "rows").dag.nodes[2]
    change, reason = BAD_ROWS[damage]
    _sql(durable_store, f"UPDATE openprogram_nodes SET {change} WHERE id = '{target.id}'")
    with pytest.raises(StoreDamaged, match=reason) as caught:
        Session.open(durable_store, "rows")
    message = str(caught.value)
    assert f"the row of node {target.id!r} (seq 3) of session 'rows' cannot be read" in message
    assert "sessions check" in message and "fork the session before that node" in message

    shown = cli_run("sessions", "show", "rows", "--store", str(durable_store))
    assert shown.exit_code == 1 and f"Error: the row of node {target.id!r}" in shown.output
    assert not isinstance(shown.exception, (StoreError, ValueError, TypeError))
    checked = cli_run("sessions", "check", "rows", "--store", str(durable_store))
    assert checked.exit_code == 1, checked.output
    assert "session rows: DAMAGED, 4 of 5 rows read are nodes" in checked.output
    assert f"node {target.id!r} (seq 3):" in checked.output


def test_a_bad_session_entry_is_named_too(durable_store: Any):
    Session(durable_store, id="entry").close()
    _sql(durable_store, "UPDATE openprogram_sessions SET info = '[' WHERE id = 'entry'")
    listed = cli_run("sessions", "list", "--store", str(durable_store))
    assert listed.exit_code == 1
    assert "the entry of session 'entry' cannot be read" in listed.output
    assert "Traceback" not in listed.output
    checked = cli_run("sessions", "check", "--store", str(durable_store))
    assert checked.exit_code == 1 and "the entry of session 'entry'" in checked.output
