"""Forked children inside a session (DESIGN §6 "Processes"): os.fork and a fork Pool.

A child never writes its parent's session (no rows, no lease release, no journal, no
flusher); the parent's store holds exactly its own nodes and its later records all
succeed. A session the child opens itself is recorded as in a fresh process.
"""

from __future__ import annotations

import multiprocessing
import os
import traceback
from pathlib import Path
from typing import Any

import pytest

from openprogram import Session, agentic_function
from openprogram.store import recorder as recorder_module
from openprogram.store.journal import pending_dir

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


@agentic_function
def square(i: int) -> int:
    return i * i


def outputs(store: Any, id: str) -> list[Any]:
    stored = Session.open(store, id)
    try:
        return [node.output for node in stored.dag.nodes]
    finally:
        stored.close()


def in_child(tmp_path: Path, body: Any) -> None:
    """Run `body()` in an os.fork child and fail here with its traceback if it raised."""
    report = tmp_path / f"child-{os.getpid()}.txt"
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 0
        try:
            body()
        except BaseException:
            report.write_text(traceback.format_exc())
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, report.read_text()


def test_a_forked_child_never_writes_its_parents_session(durable_store: Any, tmp_path: Path):
    with Session(durable_store, id="parent") as session:
        square(1)
        square(2)  # fast calls: they wait in the batch (and the journal) at the fork
        sqlite = "://" not in durable_store
        journals = set(pending_dir(Path(durable_store)).iterdir()) if sqlite else set()

        def child() -> None:
            for i in range(200):
                square(i)  # into the child's copy of the session, in memory only
            assert len(session.dag.nodes) == 202
            assert session.flush() and session.failed_writes == 0
            with Session(durable_store, id="child") as own:  # as in a fresh process
                square(7)
            assert own.failed_writes == 0
            session.close()  # the parent's: commits nothing, releases nothing

        in_child(tmp_path, child)
        if journals:  # the parent's journal is still its own
            assert all(path.exists() for path in journals)
        for i in range(3, 300):
            square(i)
    assert session.failed_writes == 0
    assert outputs(durable_store, "parent") == [1, 4] + [i * i for i in range(3, 300)]
    assert outputs(durable_store, "child") == [49]


@pytest.mark.slow
def test_a_fork_pool_inside_a_session_leaves_the_parents_records_alone(
    durable_store: Any, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(recorder_module, "SLOW_CALL_S", 0.0)  # each call commits at once
    with Session(durable_store, id="pooled") as session:
        square(1)
        with multiprocessing.get_context("fork").Pool(2) as pool:
            assert pool.map(square, range(40)) == [i * i for i in range(40)]
        square(2)
        session.flush()
        square(3)
    assert session.failed_writes == 0
    assert outputs(durable_store, "pooled") == [1, 4, 9]


def test_an_in_memory_sqlite_store_keeps_its_data_in_the_child(tmp_path: Path):
    from openprogram.store import SQLiteStore

    store = SQLiteStore(":memory:")
    with Session(store, id="here") as session:
        square(2)
        session.flush()

        def child() -> None:
            assert [row.output for row in store.rows("here")] == ["4"]  # the child's copy
            square(3)
            assert [row.output for row in store.rows("here")] == ["4"]  # nothing written

        in_child(tmp_path, child)
        square(4)
    assert [row.output for row in store.rows("here")] == ["4", "16"]
