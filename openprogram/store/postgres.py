"""PostgresStore: sessions on a shared PostgreSQL server (psycopg 3, extra `postgres`).

Same tables and rows as the SQLite store, prefixed `openprogram_` so they can share a
database with other data. One transaction per batch of records, its rows sent as
columns of arrays in one statement; a lost connection is reopened on the next call.
psycopg errors are translated here, and only here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from typing import TYPE_CHECKING, Any

from openprogram.echo import cut, mask_url
from openprogram.errors import StoreError
from openprogram.store._budgets import tables as budget_tables
from openprogram.store._operations import tables
from openprogram.store._sql import SQLStore
from openprogram.store._statements import statements
from openprogram.store.format import FORMAT_VERSION, OLD_VALUES_MIGRATION, NodeRow

if TYPE_CHECKING:
    import psycopg

__all__ = ["PostgresStore"]

_LOCK_ID = 0x6F70_656E_7072_6F67 & 0x7FFF_FFFF_FFFF_FFFF  # "openprog": schema creation
_SCHEMA = (
    "CREATE TABLE openprogram_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE openprogram_sessions (key BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
    "created_at DOUBLE PRECISION NOT NULL, info TEXT NOT NULL)",
    "CREATE TABLE openprogram_nodes (session BIGINT NOT NULL, seq BIGINT NOT NULL, "
    "id TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, parent TEXT, "
    "status TEXT NOT NULL, started_at DOUBLE PRECISION NOT NULL, "
    "ended_at DOUBLE PRECISION, end_seq BIGINT, "
    "input TEXT, output TEXT, data TEXT, PRIMARY KEY (session, seq))",
    "CREATE TABLE openprogram_blobs (sha256 TEXT PRIMARY KEY, data BYTEA NOT NULL)",
)
_LEASES = (
    "CREATE TABLE openprogram_leases (session BIGINT PRIMARY KEY, owner TEXT NOT NULL, "
    "host TEXT NOT NULL, pid BIGINT NOT NULL, process TEXT NOT NULL, "
    "acquired_at DOUBLE PRECISION NOT NULL, heartbeat_at DOUBLE PRECISION NOT NULL)",
)
_OPERATIONS = tables("BIGINT", "DOUBLE PRECISION", "BIGSERIAL PRIMARY KEY")
_BUDGETS = budget_tables("DOUBLE PRECISION", "BIGINT")
_MIGRATIONS = {1: _LEASES, 2: (), 3: (), 4: (), 5: OLD_VALUES_MIGRATION, 6: (), 7: _OPERATIONS,
               8: _BUDGETS}  # fmt: skip
"""format_version N -> N+1 (3 only allows the status `stopped`, 4 the render report's
`report_base`, 5 llm contents stored as strings: no table changes; 6 notes in each
session's info up to which seq its values were stored as reprs; 7 adds the operations
tables, 8 the budgets table)."""
_NOW = "extract(epoch from clock_timestamp())::float8"
_CASTS = ("bigint", "bigint", "text", "text", "text", "text", "text", "float8", "float8",
          "bigint", "text", "text", "text")  # fmt: skip
_ONE_ROW = "SELECT " + ", ".join(f"%s::{cast}" for cast in _CASTS) + " WHERE"
_FROM_JSON = ", ".join(f"(r->>{i})::{cast}" for i, cast in enumerate(_CASTS[1:]))


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            'PostgreSQL session stores need psycopg 3: pip install "openprogram[postgres]"'
        ) from exc
    return psycopg


_STATEMENTS = statements("%s", _NOW, _CASTS)


class PostgresStore(SQLStore):
    """A session store in a PostgreSQL database, created on first use.

    url: a libpq URL, "postgresql://user:password@host:port/database". Raises
    ImportError without psycopg, StoreError when the server cannot be reached,
    UnsupportedFormatVersion for a database of another format version.
    """

    _statements = _STATEMENTS
    placeholder = "%s"
    _now = _NOW

    def __init__(self, url: str, *, connect_timeout_s: int = 10) -> None:
        self._psycopg = _psycopg()
        super().__init__()
        self._conninfo = url
        self.url = self._where = mask_url(url)
        self.connect_timeout_s = connect_timeout_s
        self._connect()

    # -- connection ----------------------------------------------------------------------
    def new_connection(self) -> psycopg.Connection[tuple[Any, ...]]:
        """A psycopg connection of its own to this store's database (autocommit), for
        work that must not share the store's: LISTEN, the run queue's claims."""
        connection: psycopg.Connection[tuple[Any, ...]] = self._psycopg.connect(
            self._conninfo, autocommit=True
        )
        return connection

    def _connect(self) -> Any:
        with self._lock:
            if self._connection is not None and not self._connection.closed:
                return self._connection
            with self._translate("connect"):
                connection = self._psycopg.connect(
                    self._conninfo, autocommit=True, connect_timeout=self.connect_timeout_s
                )
                try:
                    self._prepare(connection)
                except BaseException:
                    connection.close()
                    raise
            self._connection = connection
            return connection

    def _prepare(self, connection: Any) -> None:
        if self._version(connection) == FORMAT_VERSION:
            return
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            self._create_tables(connection, _SCHEMA + _LEASES + _OPERATIONS + _BUDGETS, _MIGRATIONS)

    def _abandon(self, connection: Any) -> None:
        """Close the child's copy of the connection without a word to the server: its
        socket (the parent's too) is replaced by /dev/null here first."""
        with suppress(Exception):
            devnull = os.open(os.devnull, os.O_RDWR)
            try:
                os.dup2(devnull, connection.pgconn.socket)
            finally:
                os.close(devnull)
            connection.close()
            return
        super()._abandon(connection)

    def _upsert(
        self,
        connection: Any,
        session: str,
        rows: Sequence[NodeRow],
        blobs: Mapping[str, bytes],
        owner: str,
    ) -> NodeRow | None:
        """A batch without images is one statement, committed on its own (one round
        trip, not three: no BEGIN, no COMMIT), all or nothing: a row whose seq holds
        another node makes it fail whole (its id would become NULL), and without the
        lease none is written."""
        if blobs or len(rows) == 1 or not _distinct(rows):
            return super()._upsert(connection, session, rows, blobs, owner)
        key = self._keys.get(session) or self._key(connection, session)
        values = json.dumps(rows, allow_nan=False)
        try:
            changed = connection.execute(_ATOMIC_UPSERT, (key, values, key, owner)).rowcount
        except self._psycopg.errors.NotNullViolation as exc:  # rolled back: none written
            if exc.diag.column_name != "id":  # not the seq of another node: a broken row
                raise
            changed = -1
        return None if changed == len(rows) else self._conflict(connection, key, rows)

    def _upsert_rows(self, cursor: Any, key: int, rows: Sequence[NodeRow], owner: str) -> int:
        """Upsert `rows` in one statement, sent as one JSON array of rows: one round
        trip, and one statement text, prepared once, for any number of rows (psycopg
        adapts a JSON string several times faster than 12 arrays, or 12 values a row).
        Rows repeating a seq (which one statement may not update twice) go one by one."""
        if len(rows) == 1 or not _distinct(rows):
            return super()._upsert_rows(cursor, key, rows, owner)
        values = json.dumps(rows, allow_nan=False)
        return int(cursor.execute(_JSON_UPSERT, (key, values, key, owner)).rowcount)

    def _lock_session(self, connection: Any, key: int) -> None:
        connection.execute("SELECT key FROM openprogram_sessions WHERE key = %s FOR UPDATE", (key,))

    def _transaction(self, connection: Any) -> AbstractContextManager[Any]:
        transaction: AbstractContextManager[Any] = connection.transaction()  # psycopg's
        return transaction

    def _has_schema(self, connection: Any) -> bool:
        found = connection.execute("SELECT to_regclass('openprogram_meta')").fetchone()
        return found[0] is not None

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except self._psycopg.Error as exc:
            if isinstance(exc, self._psycopg.OperationalError):
                self.close()  # the next call reconnects
            masked = mask_url(str(exc), self._conninfo)  # libpq may quote the password
            cause = exc if masked == str(exc) else None  # a cause quoting the password is cut
            why = cut(masked, 2_000)  # a refused row is quoted whole, its input too
            raise StoreError(f"PostgreSQL store {self.url} could not {action}: {why}") from cause

    # -- writes --------------------------------------------------------------------------
    def _add_session(self, connection: Any, values: tuple[str, float, str]) -> int | None:
        try:
            found = connection.execute(
                self._statements.insert_session + " RETURNING key", values
            ).fetchone()
        except self._psycopg.errors.UniqueViolation:  # the id exists already
            return None
        return int(found[0])

    def _record(
        self, session: str, rows: Sequence[NodeRow], blobs: Mapping[str, bytes], owner: str
    ) -> NodeRow | None:
        try:
            return self._upsert(self._connect(), session, rows, blobs, owner)
        except self._psycopg.OperationalError:  # the connection dropped: reconnect once
            self.close()  # (an upsert can be repeated safely)
            return self._upsert(self._connect(), session, rows, blobs, owner)

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"


_JSON_UPSERT = _STATEMENTS.upsert.replace(
    _ONE_ROW, f"SELECT %s::bigint, {_FROM_JSON} FROM json_array_elements(%s::json) r WHERE", 1
)
_SAME_NODE = " WHERE openprogram_nodes.id = excluded.id"
_ATOMIC_UPSERT = _JSON_UPSERT.replace(
    _SAME_NODE, ", id = CASE WHEN openprogram_nodes.id = excluded.id THEN excluded.id END"
)
"""_JSON_UPSERT failing whole (NOT NULL) instead of skipping a row whose seq is another
node's: one statement needs no transaction around it to be all or nothing."""
assert _JSON_UPSERT.endswith(_SAME_NODE) and _ATOMIC_UPSERT != _JSON_UPSERT


def _distinct(rows: Sequence[NodeRow]) -> bool:
    """Whether no two of `rows` share a seq."""
    return len({row.seq for row in rows}) == len(rows)
