"""Group commit across the sessions of one SQLite file (store/_turns.py): batches queued
while the file is busy go in one transaction; a refused or broken batch fails alone; a
transaction that cannot begin fails every batch and writes none. Real SQLite files, one
store per session as `Session(path)` makes them, writers on threads."""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from openprogram import Session, StoreError
from openprogram.store import NodeRow, SQLiteStore, _turns
from openprogram.store._turns import turns


def _row(seq: int, id: str | None = None) -> NodeRow:
    return NodeRow(seq, id or f"node-{seq}", "code", "count", None, "completed", 1.0, 2.0, seq,
                   "{}", "1", None)  # fmt: skip


@pytest.fixture
def stores(tmp_path: Path) -> Any:
    """A factory of (store, session id) pairs on one file, each store holding its
    session's lease; all closed afterwards."""
    path = tmp_path / "runs.db"
    opened: list[tuple[SQLiteStore, Session]] = []

    def make(count: int, **options: Any) -> list[tuple[SQLiteStore, str]]:
        made = []
        for number in range(len(opened), len(opened) + count):
            store = SQLiteStore(path, **options)
            session = Session(store, id=f"s{number}")
            store.acquire(session.id, f"writer-{number}")
            opened.append((store, session))
            made.append((store, session.id))
        return made

    yield make
    for store, session in opened:
        session.close()
        store.close()


def _queued(
    writes: list[tuple[SQLiteStore, str, list[NodeRow]]],
) -> dict[str, BaseException]:
    """Start a writer thread for each (store, session, rows) while the file's turn is
    held, wait until all have queued their batch, then let them go: what each raised."""
    file = turns(writes[0][0].path, "NORMAL")
    errors: dict[str, BaseException] = {}

    def write(store: SQLiteStore, session: str, rows: list[NodeRow]) -> None:
        try:
            store.write_batch(session, rows, {})
        except BaseException as exc:  # _Stop too
            errors[session] = exc

    threads = [threading.Thread(target=write, args=write_args) for write_args in writes]
    with file._lock:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while len(file._waiting) < len(writes):  # each thread queues, then waits for the lock
            assert time.monotonic() < deadline, len(file._waiting)
            time.sleep(0.005)
    for thread in threads:
        thread.join(60)
        assert not thread.is_alive()
    return errors


@pytest.fixture
def together(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The number of batches of each shared transaction tried."""
    sizes: list[int] = []
    original = _turns._together

    def counted(connection: sqlite3.Connection, taken: list[Any]) -> bool:
        sizes.append(len(taken))
        return original(connection, taken)

    monkeypatch.setattr(_turns, "_together", counted)
    return sizes


def test_batches_queued_while_the_file_is_busy_go_in_one_transaction(stores, together):
    made = stores(6)
    errors = _queued([(store, session, [_row(1), _row(2), _row(3)]) for store, session in made])
    assert errors == {}
    assert together == [6]
    reader = SQLiteStore(made[0][0].path)
    assert all(reader.rows(session) == [_row(1), _row(2), _row(3)] for _, session in made)
    reader.close()


def test_a_refused_or_broken_batch_fails_alone_and_the_others_are_written(stores, together):
    (good, a), (taken, b), (broken, c), (also, d) = stores(4)
    taken.write_batch(b, [_row(1)], {})
    errors = _queued(
        [
            (good, a, [_row(1), _row(2)]),
            (taken, b, [_row(2), _row(1, id="another")]),  # seq 1 is node-1's
            (broken, c, [_row(1), _row(2)._replace(name=None)]),  # type: ignore[arg-type]
            (also, d, [_row(1)]),
        ]
    )
    assert sorted(errors) == [b, c]
    assert "belongs to another node" in str(errors[b])
    assert isinstance(errors[c], StoreError)
    assert "belongs to another node" not in str(errors[c]) and "NOT NULL" in str(errors[c])
    assert together == [4]  # tried together, then each alone
    reader = SQLiteStore(good.path)
    assert reader.rows(a) == [_row(1), _row(2)]
    assert reader.rows(b) == [_row(1)]  # as it was: nothing of the refused batch
    assert reader.rows(c) == []
    assert reader.rows(d) == [_row(1)]
    reader.close()


def test_a_transaction_that_cannot_begin_fails_every_batch_and_writes_none(stores, together):
    made = stores(3, timeout_s=0)
    other = sqlite3.connect(made[0][0].path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # another process's writer, say
    try:
        errors = _queued([(store, session, [_row(1), _row(2)]) for store, session in made])
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert sorted(errors) == [session for _, session in made]
    assert all("locked" in str(error) for error in errors.values()), errors
    assert together == [3]
    for store, session in made:  # the file free again: each writes as usual
        assert store.rows(session) == []
        store.write_batch(session, [_row(1), _row(2)], {})
        assert store.rows(session) == [_row(1), _row(2)]


class _Stop(BaseException):
    """What a KeyboardInterrupt is to the writer it hits: no Exception."""


def test_a_writer_interrupted_while_writing_others_batches_leaves_them_failed_not_lost(
    stores, monkeypatch
):
    """The writer whose turn it is is interrupted inside the shared transaction: it
    raises, every other batch it had taken fails (none is reported written), nothing is
    written, and its connection is left out of any transaction: all write again."""
    made = stores(3)
    apply = SQLiteStore._apply

    def interrupted(self: SQLiteStore, cursor: Any, key: int, rows: Any, *args: Any) -> bool:
        if rows[0].id == "stop":
            raise _Stop
        return apply(self, cursor, key, rows, *args)

    monkeypatch.setattr(SQLiteStore, "_apply", interrupted)
    rows = [[_row(1), _row(2)], [_row(1, id="stop")], [_row(1)]]
    errors = _queued(
        [(store, session, batch) for (store, session), batch in zip(made, rows, strict=True)]
    )
    assert sorted(errors) == [session for _, session in made]
    stopped = [session for session, error in errors.items() if isinstance(error, _Stop)]
    assert len(stopped) == 1  # the writer whose turn it was
    assert all(
        "interrupted" in str(error) for error in errors.values() if not isinstance(error, _Stop)
    )
    monkeypatch.setattr(SQLiteStore, "_apply", apply)
    for store, session in made:
        assert store.rows(session) == []
        store.write_batch(session, [_row(1)], {})
        assert store.rows(session) == [_row(1)]
