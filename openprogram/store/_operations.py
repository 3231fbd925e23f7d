"""Operations as stored: OperationRow, their tables and the SQL both backends share.

Owns the `openprogram_operations` table (one row per operation: what it is and the state
it is in) and `openprogram_operation_events` (every state change, appended). The state
machine itself lives in openprogram/operations/; this module only moves rows, each
change fenced by the session's writer lease and checked against the state it expects.
Start at SQLOperations.commit_operations().
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from openprogram.errors import SessionLocked
from openprogram.store.format import NodeRow

__all__ = [
    "CANCEL_REQUESTED",
    "OPERATION_COLUMNS",
    "OperationEvent",
    "OperationRow",
    "SQLOperations",
    "tables",
]


class OperationRow(NamedTuple):
    """One operation as stored: the tool call node that made it, what it is (kind,
    version, effect, JSON args) and where it stands (state, JSON result, error)."""

    id: str
    node: str
    position: int
    kind: str
    version: int
    effect: str
    args: str
    background: int
    state: str
    result: str | None
    error: str | None
    attempts: int
    created_at: float
    updated_at: float
    heartbeat_at: float | None


class OperationEvent(NamedTuple):
    """One recorded state change of an operation."""

    operation: str
    at: float
    state: str
    detail: str | None


OPERATION_COLUMNS = ", ".join(OperationRow._fields)
CANCEL_REQUESTED = "cancel requested"
"""The start of an event's detail that asks a pending or running operation to stop."""
OPERATIONS_VERSION = 8
"""The format_version that added the operations tables."""
_EVENT = (
    "INSERT INTO openprogram_operation_events (session, operation, at, state, detail) "
    "VALUES (?, ?, ?, ?, ?)"
)


def tables(integer: str, real: str, serial: str) -> tuple[str, ...]:
    """The CREATE statements of the two tables, with the backend's column types
    (`serial`: an integer primary key numbered by the database)."""
    operations = (
        f"session {integer} NOT NULL, id TEXT NOT NULL, node TEXT NOT NULL, "
        "position INTEGER NOT NULL, kind TEXT NOT NULL, version INTEGER NOT NULL, "
        "effect TEXT NOT NULL, args TEXT NOT NULL, background INTEGER NOT NULL, "
        "state TEXT NOT NULL, result TEXT, error TEXT, attempts INTEGER NOT NULL, "
        f"created_at {real} NOT NULL, updated_at {real} NOT NULL, heartbeat_at {real}, "
        "PRIMARY KEY (session, id)"
    )
    events = (
        f"number {serial}, session {integer} NOT NULL, operation TEXT NOT NULL, "
        f"at {real} NOT NULL, state TEXT NOT NULL, detail TEXT"
    )
    return (
        f"CREATE TABLE IF NOT EXISTS openprogram_operations ({operations})",
        f"CREATE TABLE IF NOT EXISTS openprogram_operation_events ({events})",
        "CREATE INDEX IF NOT EXISTS openprogram_operation_events_by_operation "
        "ON openprogram_operation_events (session, operation)",
    )


class SQLOperations:
    """The operation methods of SQLStore (a mixin: it uses SQLStore's connection, lock,
    transactions and lease bookkeeping). Every write is one transaction that first
    checks this store still holds the session's writer lease."""

    _lock: Any
    _held: dict[str, str]
    _where: str
    placeholder: ClassVar[str] = "?"

    if TYPE_CHECKING:  # SQLStore's

        def _connect(self) -> Any: ...
        def _translate(self, action: str) -> Any: ...
        def _transaction(self, connection: Any) -> Any: ...
        def _key(self, connection: Any, session: str) -> int: ...
        def _lock_session(self, connection: Any, key: int) -> None: ...
        def _upsert_rows(
            self, cursor: Any, key: int, rows: Sequence[NodeRow], owner: str
        ) -> int: ...

    def _fenced(self, connection: Any, session: str, what: str) -> int:
        """Inside a transaction: the session's key, once sure this store holds its lease."""
        p = self.placeholder
        owner = self._held.get(session)
        key = self._key(connection, session)
        self._lock_session(connection, key)
        found = (
            None
            if owner is None
            else connection.execute(
                f"SELECT 1 FROM openprogram_leases WHERE session = {p} AND owner = {p}",
                (key, owner),
            ).fetchone()
        )
        if found is None:
            raise SessionLocked(
                f"cannot record {what} of session {session!r} in {self._where}: this store "
                "does not hold the session's writer lease (enter the session first; or "
                "another writer took it over)"
            )
        return key

    def commit_operations(
        self,
        session: str,
        operations: Sequence[OperationRow],
        node: NodeRow | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Record `operations` (each with its first event) and, when given, the tool call
        `node` that made them, in one transaction: all or nothing. An operation recorded
        already is kept as it is. Raises SessionLocked without the session's lease."""
        p = self.placeholder
        marks = ", ".join([p] * (len(OperationRow._fields) + 1))
        insert = (
            f"INSERT INTO openprogram_operations (session, {OPERATION_COLUMNS}) "
            f"VALUES ({marks}) ON CONFLICT (session, id) DO NOTHING"
        )
        event = _EVENT.replace("?", p)
        with self._lock, self._translate(f"record the operations of session {session!r}"):
            connection = self._connect()
            with self._transaction(connection), closing(connection.cursor()) as cursor:
                key = self._fenced(connection, session, "operations")
                if blobs:
                    cursor.executemany(
                        "INSERT INTO openprogram_blobs (sha256, data) VALUES "
                        f"({p}, {p}) ON CONFLICT DO NOTHING",
                        list(blobs.items()),
                    )
                if node is not None:
                    self._upsert_rows(cursor, key, [node], self._held[session])
                for row in operations:
                    if cursor.execute(insert, (key, *row)).rowcount:
                        cursor.execute(event, (key, row.id, row.created_at, row.state, None))

    def update_operation(
        self,
        session: str,
        id: str,
        expect: Sequence[str],
        state: str,
        *,
        at: float,
        result: str | None = None,
        error: str | None = None,
        attempts: int | None = None,
        detail: str | None = None,
    ) -> bool:
        """Move operation `id` to `state` (with its result or error) if it is in one of
        the states `expect`, and record the change: whether it moved. A heartbeat is a
        move from "running" to "running" that records no event."""
        p = self.placeholder
        states = ", ".join([p] * len(expect))
        update = (
            f"UPDATE openprogram_operations SET state = {p}, result = coalesce({p}, result), "
            f"error = {p}, attempts = coalesce({p}, attempts), updated_at = {p}, "
            f"heartbeat_at = {p} WHERE session = {p} AND id = {p} AND state IN ({states})"
        )
        event = _EVENT.replace("?", p)
        heartbeat = state == "running" and tuple(expect) == ("running",) and detail is None
        with self._lock, self._translate(f"record operation {id!r} of session {session!r}"):
            connection = self._connect()
            with self._transaction(connection):
                key = self._fenced(connection, session, f"operation {id!r}")
                changed = connection.execute(
                    update, (state, result, error, attempts, at, at, key, id, *expect)
                ).rowcount
                if changed and not heartbeat:
                    connection.execute(event, (key, id, at, state, detail))
        return bool(changed)

    def request_cancel(self, session: str, id: str, *, at: float, by: str) -> str | None:
        """Ask that operation `id` stop, from any process (no writer lease: a request,
        not a state change; the process running it acts on it, see cancel_requested):
        an event `detail` "cancel requested by ..." in its current state. The state it
        was in, None when it is not pending or running (nothing is recorded then)."""
        p = self.placeholder
        event = _EVENT.replace("?", p)
        with self._lock, self._translate(f"ask operation {id!r} of session {session!r} to stop"):
            connection = self._connect()
            with self._transaction(connection):
                key = self._key(connection, session)
                self._lock_session(connection, key)
                found = connection.execute(
                    f"SELECT state FROM openprogram_operations WHERE session = {p} AND id = {p}",
                    (key, id),
                ).fetchone()
                if found is None or found[0] not in ("pending", "running"):
                    return None
                connection.execute(event, (key, id, at, found[0], f"{CANCEL_REQUESTED} by {by}"))
        return str(found[0])

    def cancel_requested(self, session: str, id: str) -> bool:
        """Whether someone asked operation `id` to stop (request_cancel)."""
        p = self.placeholder
        with self._lock, self._translate(f"read the operations of session {session!r}"):
            connection = self._connect()
            found = connection.execute(
                f"SELECT 1 FROM openprogram_operation_events WHERE session = {p} AND "
                f"operation = {p} AND detail LIKE {p} LIMIT 1",
                (self._key(connection, session), id, CANCEL_REQUESTED + " by %"),
            ).fetchone()
        return found is not None

    def operations(self, session: str) -> list[OperationRow]:
        """The session's operations, oldest first (by creation, then node, then position);
        none in a store older than format_version 8 (opened read-only, not migrated)."""
        p = self.placeholder
        if getattr(self, "format_version", OPERATIONS_VERSION) < OPERATIONS_VERSION:
            return []
        with self._lock, self._translate(f"read the operations of session {session!r}"):
            connection = self._connect()
            found = connection.execute(
                f"SELECT {OPERATION_COLUMNS} FROM openprogram_operations WHERE session = {p} "
                "ORDER BY created_at, node, position",
                (self._key(connection, session),),
            ).fetchall()
        return [OperationRow(*values) for values in found]

    def operation_events(self, session: str, id: str | None = None) -> list[OperationEvent]:
        """The recorded state changes of operation `id` (all the session's when None),
        in the order they happened."""
        p = self.placeholder
        if getattr(self, "format_version", OPERATIONS_VERSION) < OPERATIONS_VERSION:
            return []
        where = f"session = {p}" + ("" if id is None else f" AND operation = {p}")
        with self._lock, self._translate(f"read the operations of session {session!r}"):
            connection = self._connect()
            key = self._key(connection, session)
            found = connection.execute(
                f"SELECT operation, at, state, detail FROM openprogram_operation_events "
                f"WHERE {where} ORDER BY number",
                (key,) if id is None else (key, id),
            ).fetchall()
        return [OperationEvent(*values) for values in found]
