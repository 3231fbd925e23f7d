"""PostgresStore: sessions on a shared PostgreSQL server (psycopg 3, extra `postgres`).

Same tables and rows as the SQLite store, prefixed `openprogram_` so they can share a
database with other data. One transaction per record; a lost connection is reopened on
the next call. psycopg errors are translated here, and only here.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import Any

from openprogram.errors import StoreError, UsageError
from openprogram.store.format import (
    FORMAT_VERSION,
    ROW_COLUMNS,
    NodeRow,
    SessionInfo,
    check_format_version,
)

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
_UPSERT = (
    f"INSERT INTO openprogram_nodes (session, {ROW_COLUMNS}) "
    f"VALUES ({', '.join(['%s'] * 13)}) "
    "ON CONFLICT (session, seq) DO UPDATE SET status = excluded.status, "
    "ended_at = excluded.ended_at, end_seq = excluded.end_seq, output = excluded.output, "
    "data = excluded.data, input = coalesce(openprogram_nodes.input, excluded.input) "
    "WHERE openprogram_nodes.id = excluded.id"
)
_BLOB = "INSERT INTO openprogram_blobs (sha256, data) VALUES (%s, %s) ON CONFLICT DO NOTHING"
_SESSIONS = (
    "SELECT s.id, s.created_at, s.info, "
    "(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key) "
    "FROM openprogram_sessions s"
)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            'PostgreSQL session stores need psycopg 3: pip install "openprogram[postgres]"'
        ) from exc
    return psycopg


class PostgresStore:
    """A session store in a PostgreSQL database, created on first use.

    url: a libpq URL, "postgresql://user:password@host:port/database". Raises
    ImportError without psycopg, StoreError when the server cannot be reached,
    UnsupportedFormatVersion for a database of another format version.
    """

    def __init__(self, url: str, *, connect_timeout_s: int = 10) -> None:
        self._psycopg = _psycopg()
        self._conninfo = url
        self.url = re.sub(r"://([^:@/]*):[^@/]*@", r"://\1:***@", url)
        self.connect_timeout_s = connect_timeout_s
        self.format_version = FORMAT_VERSION
        self._lock = threading.RLock()
        self._connection: Any = None
        self._keys: dict[str, int] = {}
        self._connect()

    # -- connection ----------------------------------------------------------------------
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
        if self._version(connection):
            return
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
            if not self._version(connection):  # nobody created it while we waited
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.execute(
                    "INSERT INTO openprogram_meta VALUES ('format_version', %s)",
                    (str(FORMAT_VERSION),),
                )

    def _version(self, connection: Any) -> bool:
        exists = connection.execute("SELECT to_regclass('openprogram_meta')").fetchone()[0]
        if exists is None:
            return False
        found = connection.execute(
            "SELECT value FROM openprogram_meta WHERE key = 'format_version'"
        ).fetchone()
        check_format_version(found[0] if found else None, f"session store {self.url}")
        return True

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except self._psycopg.Error as exc:
            if isinstance(exc, self._psycopg.OperationalError):
                self.close()  # the next call reconnects
            raise StoreError(f"PostgreSQL store {self.url} could not {action}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __del__(self) -> None:  # a dropped store closes its connection, quietly
        with suppress(Exception):
            self.close()

    # -- sessions ------------------------------------------------------------------------
    def create_session(self, info: SessionInfo) -> None:
        with self._lock, self._translate(f"create session {info.id!r}"):
            connection = self._connect()
            try:
                found = connection.execute(
                    "INSERT INTO openprogram_sessions (id, created_at, info) VALUES (%s, %s, %s) "
                    "RETURNING key",
                    (info.id, info.created_at, info.to_json()),
                ).fetchone()
            except self._psycopg.errors.UniqueViolation:
                raise UsageError(
                    f"session {info.id!r} exists already in {self.url}; reopen it with "
                    "Session.open(store, id)"
                ) from None
            self._keys[info.id] = found[0]

    def session(self, id: str) -> SessionInfo | None:
        with self._lock, self._translate(f"read session {id!r}"):
            found = self._connect().execute(_SESSIONS + " WHERE s.id = %s", (id,)).fetchone()
        return None if found is None else SessionInfo.from_json(*found)

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock, self._translate("list sessions"):
            found = self._connect().execute(_SESSIONS + " ORDER BY s.created_at").fetchall()
        return [SessionInfo.from_json(*row) for row in found]

    def _key(self, connection: Any, session: str) -> int:
        key = self._keys.get(session)
        if key is None:
            found = connection.execute(
                "SELECT key FROM openprogram_sessions WHERE id = %s", (session,)
            ).fetchone()
            if found is None:
                raise StoreError(f"no session {session!r} in {self.url}")
            key = self._keys[session] = found[0]
        return key

    # -- rows and blobs ------------------------------------------------------------------
    def write(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> None:
        with self._lock, self._translate(f"record node {row.id!r}"):
            try:
                changed = self._upsert(session, row, blobs)
            except self._psycopg.OperationalError:  # the connection dropped: reconnect once
                self.close()  # (an upsert can be repeated safely)
                changed = self._upsert(session, row, blobs)
        if not changed:
            raise StoreError(
                f"seq {row.seq} of session {session!r} in {self.url} belongs to another "
                f"node than {row.id!r}: two writers are recording into one session"
            )

    def _upsert(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> int:
        connection = self._connect()
        values = (self._key(connection, session), *row)
        if not blobs:
            return int(connection.execute(_UPSERT, values).rowcount)
        with connection.transaction() as transaction:
            with connection.cursor() as cursor:
                cursor.executemany(_BLOB, list(blobs.items()))
            changed = int(connection.execute(_UPSERT, values).rowcount)
            if not changed:
                raise self._psycopg.Rollback(transaction)  # leaves the block quietly
        return changed

    def rows(self, session: str) -> list[NodeRow]:
        with self._lock, self._translate(f"read session {session!r}"):
            connection = self._connect()
            found = connection.execute(
                f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = %s ORDER BY seq",
                (self._key(connection, session),),
            ).fetchall()
        return [NodeRow(*values) for values in found]

    def blob(self, sha256: str) -> bytes | None:
        with self._lock, self._translate(f"read image {sha256[:12]}"):
            found = (
                self._connect()
                .execute("SELECT data FROM openprogram_blobs WHERE sha256 = %s", (sha256,))
                .fetchone()
            )
        return None if found is None else bytes(found[0])

    def __repr__(self) -> str:
        return f"PostgresStore({self.url!r})"
