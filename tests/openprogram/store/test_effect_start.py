"""The committed start of a call with a declared effect (recorder.py, sqlite.py): one
statement when only updates of stored rows wait, the whole batch otherwise, so the store
always holds every node created before the call whose body runs."""

from __future__ import annotations

import math
import sqlite3
import threading
from contextlib import closing

import pytest

from openprogram import Session, agentic_function
from openprogram.store import recorder as recorder_module

seen: list[list[tuple[str, str]]] = []


def stored(path: str) -> list[tuple[str, str]]:
    """(name, status) of every stored node, read by another connection."""
    with closing(sqlite3.connect(path)) as connection:
        rows = connection.execute(
            "SELECT name, status FROM openprogram_nodes ORDER BY seq"
        ).fetchall()
    return [tuple(row) for row in rows]


@agentic_function(effect="once")
def pay(amount: int, path: str) -> int:
    seen.append(stored(path))
    return amount


@agentic_function
def checkout(path: str) -> int:
    return pay(1, path) + pay(2, path)


def test_an_effect_start_is_one_statement_when_only_updates_wait(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    # no call counts as slow, however loaded the machine: each end waits in the journal
    # (a slow pay(2) would commit its end at once, inside the traced span)
    monkeypatch.setattr(recorder_module, "SLOW_CALL_S", math.inf)
    path = str(tmp_path / "s.db")
    statements: list[str] = []
    here = threading.current_thread()

    def traced(statement: str) -> None:  # this thread's (the flusher may commit meanwhile)
        if threading.current_thread() is here and not statement.startswith("SELECT"):
            statements.append(statement)

    with Session(path) as session:
        pay(1, path)  # its end waits in the journal: an update of a stored row
        connection = session.store._connect()
        connection.set_trace_callback(traced)
        pay(2, path)
        connection.set_trace_callback(None)
    assert len(statements) == 1 and statements[0].startswith("INSERT INTO openprogram_nodes")
    assert seen[-1][-1] == ("pay", "running")  # committed before its body ran


def test_an_effect_start_commits_what_was_created_before_it(tmp_path):
    path = str(tmp_path / "s.db")
    seen.clear()
    with Session(path) as session:
        checkout(path)
    first, second = seen
    assert first == [("checkout", "running"), ("pay", "running")]  # its caller with it
    assert second[:1] == [("checkout", "running")] and second[-1] == ("pay", "running")
    assert [n.output for n in session.dag.find("pay")] == [1, 2]
