"""Readers: what reads a session after its run, so that retention keeps it.

Owns the `openprogram_readers` table (a session id, a reader's name, when) and SQLStore's
read_by() / unread() / readers(). A dataset made from recorded calls (evals'
Dataset.from_sessions) notes itself as a reader of every session it took a case from;
prune (store/_prune.py) keeps a session while any reader reads it. The table is created
on first use, beside the store's own and outside its format_version (as the run queue's
tables are): an older openprogram ignores it. Start at SQLReaders.read_by().
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from openprogram.errors import UsageError

__all__ = ["TABLE", "Connection", "SQLReaders", "readers_of"]

TABLE = "openprogram_readers"
_CREATE = (
    f"CREATE TABLE IF NOT EXISTS {TABLE} (session TEXT NOT NULL, reader TEXT NOT NULL, "
    "created_at DOUBLE PRECISION NOT NULL, PRIMARY KEY (session, reader))"
)
_BATCH = 500


class Cursor(Protocol):
    """What readers_of() reads of a statement's rows."""

    def fetchone(self) -> tuple[object, ...] | None: ...

    def fetchall(self) -> list[tuple[object, ...]]: ...


class Connection(Protocol):
    """What readers_of() reads through: a DB-API connection's execute (sqlite3's, or
    psycopg's with `%s` placeholders)."""

    def execute(self, sql: str, parameters: tuple[str, ...] = ..., /) -> Cursor: ...


class SQLReaders:
    """SQLStore's readers: a mixin over its connection, lock and translation hooks."""

    _lock: Any
    placeholder: ClassVar[str] = "?"
    _now: ClassVar[str]

    if TYPE_CHECKING:  # SQLStore's

        def _connect(self) -> Any: ...
        def _translate(self, action: str) -> Any: ...
        def _transaction(self, connection: Any) -> Any: ...
        def _check_writable(self, action: str) -> None: ...

    def read_by(self, sessions: Iterable[str], reader: str) -> None:
        """Note that `reader` (a name: "dataset:support-tickets", say) reads `sessions`:
        prune() keeps each of them until unread(reader) lets it go. Noting it again
        changes nothing."""
        ids = sorted(set(sessions))
        if not isinstance(reader, str) or not reader.strip():
            raise UsageError(f"reader={reader!r}: name what reads the sessions")
        self._check_writable(f"note {reader!r} as a reader")
        p = self.placeholder
        insert = (
            f"INSERT INTO {TABLE} (session, reader, created_at) VALUES ({p}, {p}, {self._now}) "
            "ON CONFLICT (session, reader) DO NOTHING"
        )
        with self._lock, self._translate(f"note {reader!r} as a reader of {len(ids)} sessions"):
            connection = self._connect()
            with self._transaction(connection):
                connection.execute(_CREATE)
                for id in ids:
                    connection.execute(insert, (id, reader))

    def unread(self, reader: str, sessions: Iterable[str] | None = None) -> int:
        """`reader` reads `sessions` (default: all it read) no more: prune may remove
        them once nothing else keeps them. Returns how many it let go."""
        self._check_writable(f"let {reader!r} go")
        p = self.placeholder
        with self._lock, self._translate(f"let reader {reader!r} go"):
            connection = self._connect()
            if not _exists(connection, p):
                return 0
            if sessions is None:
                return int(
                    connection.execute(
                        f"DELETE FROM {TABLE} WHERE reader = {p}", (reader,)
                    ).rowcount
                )
            ids = sorted(set(sessions))
            gone = 0
            with self._transaction(connection):
                for start in range(0, len(ids), _BATCH):
                    chunk = ids[start : start + _BATCH]
                    marks = ", ".join([p] * len(chunk))
                    gone += connection.execute(
                        f"DELETE FROM {TABLE} WHERE reader = {p} AND session IN ({marks})",
                        (reader, *chunk),
                    ).rowcount
            return gone

    def readers(self, session: str | None = None) -> dict[str, list[str]]:
        """Session id -> the readers that read it (of `session` only, when given)."""
        p = self.placeholder
        with self._lock, self._translate("read the sessions' readers"):
            connection = self._connect()
            return readers_of(connection, p, session)


def readers_of(connection: Connection, p: str, session: str | None = None) -> dict[str, list[str]]:
    """Session id -> its readers, sorted; {} when no reader was ever noted."""
    if not _exists(connection, p):
        return {}
    where, params = ("", ()) if session is None else (f" WHERE session = {p}", (session,))
    rows = connection.execute(
        f"SELECT session, reader FROM {TABLE}{where} ORDER BY session, reader", params
    ).fetchall()
    found: dict[str, list[str]] = {}
    for id, reader in rows:
        found.setdefault(str(id), []).append(str(reader))
    return found


def _exists(connection: Connection, p: str) -> bool:
    if p == "%s":
        row = connection.execute("SELECT to_regclass(%s)", (TABLE,)).fetchone()
        return row is not None and row[0] is not None
    found = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (TABLE,)
    ).fetchone()
    return found is not None
