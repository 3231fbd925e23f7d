"""The SQLite store's background checkpoint (sqlite._checkpoint) lets the write-ahead log
start over although its writers never pause: the frames committed during its unpaused
pass are checkpointed with the writers paused, so the next commit writes from the log's
start instead of growing it into new pages."""

from __future__ import annotations

import sqlite3
import threading
from contextlib import closing
from typing import Any

import pytest

from openprogram.store import sqlite as sqlite_module


def _commit(path: str, value: int) -> None:
    with closing(sqlite3.connect(path, isolation_level=None)) as connection:
        connection.execute("INSERT INTO t VALUES (?)", (value,))


class _Busy:
    """The checkpointer's connection, with a commit landing during each checkpoint it
    runs while the writers are not paused (`turn` free), as in a process whose calls
    never stop: the checkpoint cannot reach that commit's frame (a reader holds the
    snapshot from before it while the checkpoint runs)."""

    def __init__(self, connection: sqlite3.Connection, path: str, turn: threading.Lock):
        self._connection, self._path, self._turn = connection, path, turn
        self.commits = 0

    def execute(self, statement: str) -> Any:
        if self._turn.locked():
            return _Rows(self._connection.execute(statement).fetchall())
        with closing(sqlite3.connect(self._path, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM t").fetchall()
            self.commits += 1
            _commit(self._path, 1000 + self.commits)
            rows = self._connection.execute(statement).fetchall()
            reader.execute("COMMIT")
        return _Rows(rows)


class _Rows:
    def __init__(self, rows: list[Any]) -> None:
        self._rows = rows

    def fetchone(self) -> Any:
        return self._rows[0]

    def fetchall(self) -> list[Any]:
        return self._rows


def test_the_log_starts_over_although_a_commit_lands_during_the_checkpoint(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr(sqlite_module, "_RESTART_FRAMES", 4)
    path = str(tmp_path / "wal.db")
    # kept open throughout: the last connection to close would fold the log in and remove it
    with closing(sqlite3.connect(path, isolation_level=None)) as checkpointer:
        checkpointer.execute("PRAGMA journal_mode=WAL")
        checkpointer.execute("PRAGMA wal_autocheckpoint=0")
        checkpointer.execute("CREATE TABLE t (v INTEGER)")
        for value in range(10):
            _commit(path, value)
        turn = threading.Lock()
        busy = _Busy(checkpointer, path, turn)
        sqlite_module._checkpoint(busy, turn)
        assert busy.commits == 1  # one landed while it ran unpaused
        _commit(path, 99)
        _, frames, _ = checkpointer.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        assert checkpointer.execute("SELECT count(*) FROM t").fetchone() == (12,)
    assert frames == 1  # the last commit started the log over (else its 13th frame)
