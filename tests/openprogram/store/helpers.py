"""Helpers shared by the store tests: a simulated kill, and counting rows per backend."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from openprogram import Runtime, Session
from openprogram.store import MemoryStore
from tests.openprogram.store import programs


class Killed(BaseException):
    """The process 'dies' here: from this instant nothing more reaches the store."""


def run_until_killed(store: Any, session_id: str, label: str) -> Session:
    """Run programs.agent("task") in a new session and stop it dead at checkpoint `label`
    (a step label, or "llm: <question>" for an exchange in flight)."""
    with Session(store, id=session_id) as session, Runtime(programs.model()):

        def stop(reached: str) -> None:
            if reached == label:
                session.dag.listeners.clear()
                if session._recorder is not None:  # a batch not yet committed dies too
                    session._recorder._batch.clear()
                    session._recorder._blobs.clear()
                raise Killed

        programs.checkpoint = stop
        with pytest.raises(Killed):
            programs.agent("task")
    programs.checkpoint = programs._no_stop
    programs.executed.clear()
    programs.asked.clear()
    return session


def count_rows(store: Any, table: str) -> int:
    """Rows of `openprogram_<table>` ("blobs", "nodes", "sessions") in any backend."""
    if isinstance(store, MemoryStore):
        return {
            "blobs": len(store._blobs),
            "sessions": len(store._sessions),
            "nodes": sum(len(rows) for rows in store._rows.values()),
        }[table]
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store) as connection:
            return connection.execute(f"SELECT count(*) FROM openprogram_{table}").fetchone()[0]
    with closing(sqlite3.connect(store)) as connection:
        return connection.execute(f"SELECT count(*) FROM openprogram_{table}").fetchone()[0]


def comparable(session: Session) -> list[dict[str, Any]]:
    """Every node as a dict, for comparing a DAG with its reopened copy."""
    return [node.model_dump() for node in session.dag.nodes]
