"""What SQLiteStore and PostgresStore share: the SQL they run and SQLStore, their base.

Owns the queries (written once, for either placeholder) and the Store methods built on
them. Connecting, transactions, the schema's column types and error translation stay in
sqlite.py and postgres.py, behind the hooks SQLStore names. Start at SQLStore.write().
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from contextlib import AbstractContextManager, closing, suppress
from typing import Any, ClassVar, NamedTuple

from openprogram.errors import StoreError, UsageError
from openprogram.store.format import (
    FORMAT_VERSION,
    ROW_COLUMNS,
    NodeRow,
    SessionInfo,
    check_format_version,
)

__all__ = ["SQLStore", "Statements", "statements"]


class Statements(NamedTuple):
    """The statements both backends run, for one placeholder style."""

    insert_version: str
    insert_session: str
    session_key: str
    session: str
    sessions: str
    upsert: str
    insert_blob: str
    rows: str
    blob: str


def statements(placeholder: str) -> Statements:
    """The shared statements with `placeholder` ("?" for sqlite3, "%s" for psycopg)."""
    p = placeholder
    sessions = (
        "SELECT s.id, s.created_at, s.info, "
        "(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key) "
        "FROM openprogram_sessions s"
    )
    return Statements(
        insert_version=f"INSERT INTO openprogram_meta VALUES ('format_version', {p})",
        insert_session=(
            f"INSERT INTO openprogram_sessions (id, created_at, info) VALUES ({p}, {p}, {p})"
        ),
        session_key=f"SELECT key FROM openprogram_sessions WHERE id = {p}",
        session=f"{sessions} WHERE s.id = {p}",
        sessions=f"{sessions} ORDER BY s.created_at",
        upsert=(
            f"INSERT INTO openprogram_nodes (session, {ROW_COLUMNS}) "
            f"VALUES ({', '.join([p] * 13)}) "
            "ON CONFLICT (session, seq) DO UPDATE SET status = excluded.status, "
            "ended_at = excluded.ended_at, end_seq = excluded.end_seq, "
            "output = excluded.output, data = excluded.data, "
            "input = coalesce(openprogram_nodes.input, excluded.input) "
            "WHERE openprogram_nodes.id = excluded.id"
        ),
        insert_blob=(
            f"INSERT INTO openprogram_blobs (sha256, data) VALUES ({p}, {p}) ON CONFLICT DO NOTHING"
        ),
        rows=f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = {p} ORDER BY seq",
        blob=f"SELECT data FROM openprogram_blobs WHERE sha256 = {p}",
    )


class _Unchanged(Exception):
    """Raised inside a write's transaction to roll it back: the seq is another node's."""


class SQLStore(ABC):
    """The Store methods of a DB-API database, one connection guarded by one lock.

    A backend sets `_statements` and `_where` (how messages name the store) and
    implements the abstract hooks. Implementation sharing only: the `Store` protocol,
    not this class, is what a store must satisfy.
    """

    url: str
    _statements: ClassVar[Statements]
    _where: str

    def __init__(self) -> None:
        self.format_version = FORMAT_VERSION
        self._lock = threading.RLock()
        self._connection: Any = None
        self._keys: dict[str, int] = {}

    # -- hooks ---------------------------------------------------------------------------
    @abstractmethod
    def _connect(self) -> Any:
        """The open connection, (re)connecting and creating the schema when needed."""

    @abstractmethod
    def _translate(self, action: str) -> AbstractContextManager[None]:
        """Turn the driver's errors inside the block into StoreError ("could not action")."""

    @abstractmethod
    def _transaction(self, connection: Any) -> AbstractContextManager[Any]:
        """A transaction, committed when the block ends and rolled back when it raises."""

    @abstractmethod
    def _has_schema(self, connection: Any) -> bool:
        """Whether the database holds openprogram's tables; False when it holds none."""

    @abstractmethod
    def _add_session(self, connection: Any, values: tuple[str, float, str]) -> int | None:
        """Insert (id, created_at, info) and return the new key, or None if the id exists."""

    @abstractmethod
    def _record(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> int:
        """Connect and _upsert(), returning how many rows changed (0 or 1)."""

    # -- connection ----------------------------------------------------------------------
    def _version(self, connection: Any) -> bool:
        """Whether the schema exists, checking its format version; False when it does not."""
        if not self._has_schema(connection):
            return False
        found = connection.execute(
            "SELECT value FROM openprogram_meta WHERE key = 'format_version'"
        ).fetchone()
        check_format_version(found[0] if found else None, f"session store {self._where}")
        return True

    def _create_tables(self, connection: Any, schema: tuple[str, ...]) -> None:
        """Create the schema and record the format version, unless another process just
        did. The caller holds the lock that serialises schema creation."""
        if not self._version(connection):  # nobody created it while we waited
            for statement in schema:
                connection.execute(statement)
            connection.execute(self._statements.insert_version, (str(FORMAT_VERSION),))

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
            key = self._add_session(self._connect(), (info.id, info.created_at, info.to_json()))
            if key is None:
                raise UsageError(
                    f"session {info.id!r} exists already in {self._where}; reopen it with "
                    "Session.open(store, id)"
                )
            self._keys[info.id] = key

    def session(self, id: str) -> SessionInfo | None:
        with self._lock, self._translate(f"read session {id!r}"):
            found = self._connect().execute(self._statements.session, (id,)).fetchone()
        return None if found is None else SessionInfo.from_json(*found)

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock, self._translate("list sessions"):
            found = self._connect().execute(self._statements.sessions).fetchall()
        return [SessionInfo.from_json(*row) for row in found]

    def _key(self, connection: Any, session: str) -> int:
        key = self._keys.get(session)
        if key is None:
            found = connection.execute(self._statements.session_key, (session,)).fetchone()
            if found is None:
                raise StoreError(f"no session {session!r} in {self._where}")
            key = self._keys[session] = found[0]
        return key

    # -- rows and blobs ------------------------------------------------------------------
    def write(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> None:
        with self._lock, self._translate(f"record node {row.id!r}"):
            changed = self._record(session, row, blobs)
        if not changed:
            raise StoreError(
                f"seq {row.seq} of session {session!r} in {self._where} belongs to another "
                f"node than {row.id!r}: two writers are recording into one session"
            )

    def _upsert(
        self, connection: Any, session: str, row: NodeRow, blobs: Mapping[str, bytes]
    ) -> int:
        """Write the blobs and the row in one transaction; 0 when the seq is another node's."""
        values = (self._keys.get(session) or self._key(connection, session), *row)
        if not blobs:
            return int(connection.execute(self._statements.upsert, values).rowcount)
        try:
            with self._transaction(connection):
                with closing(connection.cursor()) as cursor:
                    cursor.executemany(self._statements.insert_blob, list(blobs.items()))
                changed = int(connection.execute(self._statements.upsert, values).rowcount)
                if not changed:
                    raise _Unchanged  # rolls the blobs back with it
        except _Unchanged:
            return 0
        return changed

    def rows(self, session: str) -> list[NodeRow]:
        with self._lock, self._translate(f"read session {session!r}"):
            connection = self._connect()
            found = connection.execute(
                self._statements.rows, (self._key(connection, session),)
            ).fetchall()
        return [NodeRow(*values) for values in found]

    def blob(self, sha256: str) -> bytes | None:
        with self._lock, self._translate(f"read image {sha256[:12]}"):
            found = self._connect().execute(self._statements.blob, (sha256,)).fetchone()
        return None if found is None else bytes(found[0])
