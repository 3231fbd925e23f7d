"""What SQLiteStore and PostgresStore share: SQLStore, their base.

Owns the Store methods built on the shared queries (_statements.py). Connecting,
transactions, the schema's column types and error translation stay in sqlite.py and
postgres.py, behind the hooks SQLStore names. Start at SQLStore.write().
"""

from __future__ import annotations

import ctypes
import logging
import os
import secrets
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, closing, contextmanager, suppress
from typing import Any, ClassVar

from openprogram.errors import SessionLocked, StoreError, UsageError
from openprogram.store._budgets import SQLBudgets
from openprogram.store._operations import SQLOperations
from openprogram.store._prune import PruneReport, prune
from openprogram.store._readers import SQLReaders
from openprogram.store._statements import Statements, statements
from openprogram.store.format import (
    FORMAT_VERSION,
    LEASES_VERSION,
    NodeRow,
    SessionInfo,
    check_format_version,
)
from openprogram.store.lease import LEASE_TTL_S, Holder, this_process

log = logging.getLogger("openprogram.store")

__all__ = ["SQLStore", "Statements", "statements"]


_stores: weakref.WeakSet[SQLStore] = weakref.WeakSet()
_kept: list[Any] = []  # the connections fork children inherited: never closed there


def _forget_in_child() -> None:
    for store in list(_stores):
        store.forget_in_fork_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


class _Unchanged(Exception):
    """Raised inside a write's transaction to roll it back: `row` was refused."""

    def __init__(self, row: NodeRow) -> None:
        super().__init__(row)
        self.row = row


class SQLStore(SQLOperations, SQLBudgets, SQLReaders, ABC):
    """The Store methods of a DB-API database, one connection guarded by one lock.

    A backend sets `_statements` and `_where` (how messages name the store) and
    implements the abstract hooks. Implementation sharing only: the `Store` protocol,
    not this class, is what a store must satisfy.
    """

    url: str
    _statements: ClassVar[Statements]
    _now: ClassVar[str]
    """The database's clock as an SQL expression (seconds since the epoch): lease times
    are compared by one clock, whatever the clocks of the writers' machines say."""
    _where: str
    placeholder: ClassVar[str] = "?"
    """How its driver marks a parameter in SQL: "?" (sqlite3) or "%s" (psycopg)."""
    lease_ttl_s: float = LEASE_TTL_S
    """Seconds without a heartbeat after which another machine may take a lease over."""

    def __init__(self) -> None:
        self.format_version = FORMAT_VERSION
        self._lock = threading.RLock()
        self._connection: Any = None
        self._keys: dict[str, int] = {}
        self._held: dict[str, str] = {}  # session -> owner of the lease this store holds
        self._lost: dict[str, str] = {}  # session -> owner whose lease was taken over
        self._identity: str | None = None
        _stores.add(self)

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
    def _record(
        self, session: str, rows: Sequence[NodeRow], blobs: Mapping[str, bytes], owner: str
    ) -> NodeRow | None:
        """Connect and _upsert(), returning the row refused or None."""

    @abstractmethod
    def _lock_session(self, connection: Any, key: int) -> None:
        """Inside a transaction: make other writers of session `key`'s lease wait."""

    def _fold_pending(self, connection: Any, session: str | None) -> None:
        """Fold in what writers that died left uncommitted (of `session`, or of all
        sessions): SQLite keeps such records in journals beside its file."""

    def _check_writable(self, action: str) -> None:
        """Raise StoreError when this store cannot `action` (a read-only file, say)."""

    def _abandon(self, connection: Any) -> None:
        """In a fork child: let go of the parent's `connection` without closing it
        (closing can tell the server, or SQLite's files, that the parent is done). It
        is kept, never used, until the process ends; a backend may do better."""
        _kept.append(connection)
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(connection))  # not even at exit

    def forget_in_fork_child(self) -> None:
        """In a fork child: drop the parent's connection and leases. The store connects
        anew when used here, and holds the leases this process takes."""
        self._lock = threading.RLock()  # another thread may have held it at the fork
        connection, self._connection = self._connection, None
        self._held.clear()
        self._lost.clear()
        if connection is not None:
            with suppress(Exception):
                self._abandon(connection)

    @property
    def identity(self) -> str:
        """This store's own random id, made once and kept in its meta table: the same
        whatever path or URL reaches it (and in a copy of it), another for another store.
        Effect keys include it, so one session id in two stores never shares a key.
        Empty when none can be made (a read-only store that has none)."""
        found = self._identity
        if found is None:
            p = self.placeholder
            read = "SELECT value FROM openprogram_meta WHERE key = 'store'"
            try:
                with self._lock, self._translate("read the store's identity"):
                    connection = self._connect()
                    row = connection.execute(read).fetchone()
                    if row is None and not getattr(self, "read_only", False):
                        with self._transaction(connection):
                            connection.execute(
                                "INSERT INTO openprogram_meta (key, value) VALUES ('store', "
                                f"{p}) ON CONFLICT (key) DO NOTHING",
                                (secrets.token_hex(16),),
                            )
                        row = connection.execute(read).fetchone()
            except StoreError:
                row = None
            found = self._identity = "" if row is None else str(row[0])
        return found

    # -- SQL beside the Store methods (pruning, checks, the live view) ------------------
    @contextmanager
    def connected(self, action: str | None) -> Iterator[Any]:
        """The store's connection, held under its lock for the block. A database error
        in the block becomes a StoreError saying the store could not `action` (the
        store's own wording, as its methods raise); with None the driver's own error
        propagates, for a caller that reports it itself."""
        with self._lock:
            if action is None:
                yield self._connect()
                return
            with self._translate(action):
                yield self._connect()

    def transaction(self, connection: object) -> AbstractContextManager[Any]:
        """One transaction on `connection` (from connected()): committed when the block
        ends, rolled back when it raises."""
        return self._transaction(connection)

    def database_time(self) -> float:
        """The database's clock now, in seconds since the epoch (lease times are compared
        by it, whatever the clocks of the writers' machines say)."""
        with self._lock:
            return float(self._connect().execute(f"SELECT {self._now}").fetchone()[0])

    def forget_sessions(self, ids: Iterable[str]) -> None:
        """Forget what this store cached of sessions that SQL beside it removed."""
        with self._lock:
            for id in ids:
                self._keys.pop(id, None)

    # -- connection ----------------------------------------------------------------------
    def _version(self, connection: Any) -> int | None:
        """The store's format version, checked; None when it holds no schema yet."""
        if not self._has_schema(connection):
            return None
        found = connection.execute(
            "SELECT value FROM openprogram_meta WHERE key = 'format_version'"
        ).fetchone()
        return check_format_version(found[0] if found else None, f"session store {self._where}")

    def _create_tables(
        self,
        connection: Any,
        schema: tuple[str, ...],
        migrations: Mapping[int, tuple[str, ...]],
    ) -> None:
        """Create the schema, or migrate an older one to FORMAT_VERSION, unless another
        process just did. The caller holds the lock that serialises schema changes and
        the transaction they happen in (so a migration is all or nothing)."""
        version = self._version(connection)
        if version is None:
            for statement in schema:
                connection.execute(statement)
            connection.execute(self._statements.insert_version, (str(FORMAT_VERSION),))
        elif version < FORMAT_VERSION:
            for step in range(version, FORMAT_VERSION):
                for statement in migrations[step]:
                    connection.execute(statement)
            connection.execute(self._statements.update_version, (str(FORMAT_VERSION),))
            log.info(
                "openprogram: migrated session store %s from format_version %d to %d",
                self._where, version, FORMAT_VERSION,
            )  # fmt: skip
        self.format_version = FORMAT_VERSION

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
        self._check_writable(f"create session {info.id!r}")
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

    def status_counts(self, ids: Sequence[str]) -> dict[str, dict[str, int]]:
        """How many nodes of each session of `ids` are in each status, by one counting
        query (the status column only); a session not stored counts nothing."""
        counts: dict[str, dict[str, int]] = {id: {} for id in ids}
        if not ids:
            return counts
        marks = ", ".join([self.placeholder] * len(ids))
        statement = (
            "SELECT s.id, n.status, count(*) FROM openprogram_nodes n "
            "JOIN openprogram_sessions s ON n.session = s.key "
            f"WHERE s.id IN ({marks}) GROUP BY s.id, n.status"
        )
        with self._lock, self._translate("count the sessions' nodes"):
            found = self._connect().execute(statement, tuple(ids)).fetchall()
        for id, status, count in found:
            counts[id][status] = int(count)
        return counts

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
        self.write_batch(session, (row,), blobs)

    def write_batch(
        self, session: str, rows: Sequence[NodeRow], blobs: Mapping[str, bytes]
    ) -> None:
        """Record several rows and their blobs in one transaction: all or none of them.
        Raises like write(); the Recorder groups records this way (group commit)."""
        if not rows:
            return
        owner = self._held.get(session)
        if owner is None and session in self._lost:  # a heartbeat found it taken over
            self._refused(session, rows[0], self._lost[session])
        if owner is None:
            raise StoreError(
                f"cannot record node {rows[0].id!r} into session {session!r} of "
                f"{self._where}: this store does not hold the session's writer lease. Enter "
                "the session (`with session:`) before recording; a Store's own caller takes "
                "the lease with store.acquire(session, owner)"
            )
        what = f"node {rows[0].id!r}" if len(rows) == 1 else f"{len(rows)} nodes"
        with self._lock, self._translate(f"record {what}"):
            refused = self._record(session, rows, blobs, owner)
        if refused is not None:
            self._refused(session, refused, owner)
            raise StoreError(
                f"seq {refused.seq} of session {session!r} in {self._where} belongs to "
                f"another node than {refused.id!r}: two writers are recording into one session"
            )

    def _refused(self, session: str, row: NodeRow, owner: str) -> None:
        """Raise SessionLocked when a refused record's writer has lost its lease."""
        with self._lock, self._translate(f"read the writer lease of session {session!r}"):
            connection = self._connect()
            found = connection.execute(
                self._statements.lease, (self._key(connection, session),)
            ).fetchone()
            now = float(connection.execute(f"SELECT {self._now}").fetchone()[0])
        if found is not None and found[0] == owner:
            return
        if self._held.get(session) == owner:
            del self._held[session]
        self._lost[session] = owner
        taken = "" if found is None else f" to {Holder(*found).describe(now)}"
        raise SessionLocked(
            f"the record of node {row.id!r} into session {session!r} of {self._where} was "
            f"refused: this writer ({owner!r}) lost the session's writer lease{taken}, "
            "which was taken over after this process looked dead. Its later records are "
            "refused so the two never interleave; fork the session to go on.",
            holder=None if found is None else found[0],
        )

    def _upsert(
        self,
        connection: Any,
        session: str,
        rows: Sequence[NodeRow],
        blobs: Mapping[str, bytes],
        owner: str,
    ) -> NodeRow | None:
        """Write the blobs and the rows in one transaction, or nothing: returns the row
        refused (its seq is another node's, or `owner` does not hold the session's
        writer lease), None when all were written."""
        key = self._keys.get(session) or self._key(connection, session)
        upsert = self._statements.upsert
        if len(rows) == 1 and not blobs:  # one statement commits on its own
            row = rows[0]
            changed = connection.execute(upsert, (key, *row, key, owner)).rowcount
            if changed:
                return None
            return row
        try:
            with self._transaction(connection), closing(connection.cursor()) as cursor:
                if not self._apply(cursor, key, rows, blobs, owner):
                    raise _Unchanged(self._conflict(connection, key, rows))
        except _Unchanged as unchanged:  # rolled back, the blobs with the rows
            return unchanged.row
        return None

    def _apply(
        self,
        cursor: Any,
        key: int,
        rows: Sequence[NodeRow],
        blobs: Mapping[str, bytes],
        owner: str,
    ) -> bool:
        """Write `blobs` and `rows` inside the caller's transaction: whether every row was
        written (not, when one's seq is another node's or `owner` lost the lease)."""
        if blobs:
            cursor.executemany(self._statements.insert_blob, list(blobs.items()))
        return self._upsert_rows(cursor, key, rows, owner) == len(rows)

    def _upsert_rows(self, cursor: Any, key: int, rows: Sequence[NodeRow], owner: str) -> int:
        """Upsert `rows` inside the caller's transaction; the number of rows changed."""
        cursor.executemany(self._statements.upsert, [(key, *row, key, owner) for row in rows])
        return int(cursor.rowcount)

    def _conflict(self, connection: Any, key: int, rows: Sequence[NodeRow]) -> NodeRow:
        """The first of `rows` whose seq holds another node, else the first row (then the
        writer lost its lease: every row was refused)."""
        for row in rows:
            found = connection.execute(self._statements.node_id, (key, row.seq)).fetchone()
            if found is not None and found[0] != row.id:
                return row
        return rows[0]

    def answer(self, session: str, row: NodeRow) -> NodeRow | None:
        """Record `row`, a question's node completed by its answer, only while the stored
        row of its seq still waits for one: a compare-and-set in one statement, fenced by
        the writer lease like every write. None when recorded; else the row as stored
        (answered already, by whoever its `data` names). Raises like write()."""
        owner = self._held.get(session)
        if owner is None:
            raise StoreError(
                f"cannot record the answer {row.id!r} into session {session!r} of "
                f"{self._where}: this store does not hold the session's writer lease"
            )
        with self._lock, self._translate(f"record the answer {row.id!r}"):
            connection = self._connect()
            key = self._key(connection, session)
            values = (row.status, row.ended_at, row.end_seq, row.output, row.data)
            changed = connection.execute(
                self._statements.answer, (*values, key, row.seq, row.id, key, owner)
            ).rowcount
            if changed:
                return None
            found = connection.execute(self._statements.row, (key, row.seq)).fetchone()
        if found is None or found[1] != row.id or found[5] == "waiting":
            self._refused(session, row, owner)  # SessionLocked when the lease was lost
            raise StoreError(
                f"the answer {row.id!r} was not recorded into session {session!r} of "
                f"{self._where}: the store holds no question of that id at seq {row.seq}"
            )
        return NodeRow(*found)

    def compare_and_set(
        self,
        session: str,
        row: NodeRow,
        expect: Callable[[NodeRow], bool],
        blobs: Mapping[str, bytes] | None = None,
    ) -> NodeRow | None:
        """Record `row` (and the images it references, `blobs`) only while the stored row
        of its seq (the same node) is one `expect` accepts: read and written in one
        transaction with the session's writers held off, fenced by the writer lease like
        every write (how a call is settled, effects.py). None when recorded; else the row
        as stored. Raises StoreError when the store holds no such node, SessionLocked
        when this store lost the lease."""
        with self._lock, self._translate(f"record node {row.id!r}"):
            connection = self._connect()
            with self._transaction(connection), closing(connection.cursor()) as cursor:
                key = self._fenced(connection, session, f"node {row.id!r}")
                found = connection.execute(self._statements.row, (key, row.seq)).fetchone()
                if found is None or found[1] != row.id:
                    raise StoreError(
                        f"node {row.id!r} was not recorded into session {session!r} of "
                        f"{self._where}: the store holds no such node at seq {row.seq}"
                    )
                stored = NodeRow(*found)
                if not expect(stored):
                    return stored
                if blobs:
                    cursor.executemany(self._statements.insert_blob, list(blobs.items()))
                self._upsert_rows(cursor, key, [row], self._held[session])
        return None

    def rows(self, session: str) -> list[NodeRow]:
        with self._lock, self._translate(f"read session {session!r}"):
            connection = self._connect()
            self._fold_pending(connection, session)
            found = connection.execute(
                self._statements.rows, (self._key(connection, session),)
            ).fetchall()
        return [NodeRow(*values) for values in found]

    def blob(self, sha256: str) -> bytes | None:
        with self._lock, self._translate(f"read image {sha256[:12]}"):
            found = self._connect().execute(self._statements.blob, (sha256,)).fetchone()
        return None if found is None else bytes(found[0])

    # -- retention -----------------------------------------------------------------------
    def prune(
        self,
        *,
        older_than: float,
        keep_failed: bool = False,
        dry_run: bool = False,
        compact: bool = True,
    ) -> PruneReport:
        """Remove finished sessions whose last record is older than `older_than` seconds,
        and the images only they used; never a session with a call running, waiting for
        a person or unknown, or an operation not ended, one a writer holds, one a fork or
        a noted reader reads (read_by(): a dataset made from it, a saved eval report), or
        a queued, running or waiting run (keep_failed: nor a failed one). dry_run: only
        say what would go. compact: shrink the file (SQLite VACUUM) or the tables
        (PostgreSQL VACUUM FULL, which locks each table while it runs). Returns a
        PruneReport (store/_prune.py)."""
        self._check_writable("prune sessions")
        return prune(
            self, older_than=older_than, keep_failed=keep_failed, dry_run=dry_run,
            compact=compact,
        )  # fmt: skip

    # -- writer leases -------------------------------------------------------------------
    def acquire(self, session: str, owner: str) -> None:
        """Take session `session`'s writer lease for `owner` (see lease.py): raises
        SessionLocked when another live writer holds it; takes over an expired one."""
        self._check_writable(f"record into session {session!r}")
        with self._lock, self._translate(f"take the writer lease of session {session!r}"):
            connection = self._connect()
            self._fold_pending(connection, session)  # before its dead writer's lease goes
            locked: SessionLocked | None = None
            with self._transaction(connection):
                key = self._key(connection, session)
                self._lock_session(connection, key)
                now = float(connection.execute(f"SELECT {self._now}").fetchone()[0])
                found = connection.execute(self._statements.lease, (key,)).fetchone()
                if found is not None and found[0] != owner:
                    holder = Holder(*found)
                    reason = holder.expired(now, self.lease_ttl_s)
                    if reason is None:
                        if holder.heartbeat_at > now:  # its time-to-live counts from now on
                            connection.execute(
                                self._statements.rewind, (now, key, holder.owner, now)
                            )
                        locked = holder.locked(session, self._where, now)
                    else:
                        log.warning(
                            "openprogram: took over the writer lease of session %s in %s "
                            "from writer %s: %s", session, self._where, holder.owner, reason,
                        )  # fmt: skip
                if locked is None:
                    host = owner.rsplit(":", 2)[0]
                    connection.execute(
                        self._statements.take_lease,
                        (key, owner, host, os.getpid(), this_process()),
                    )
            if locked is not None:
                raise locked
            self._held[session] = owner
            self._lost.pop(session, None)

    def adopt(self, session: str, owner: str, key: int) -> None:
        """Note that `owner` holds the writer lease of `session` (key `key`), taken by
        the caller on this database in a statement of its own: the run queue takes it
        in the statement that claims the run (one round trip, not acquire()'s six).
        Writes are fenced by it as by a lease acquire() took; release() gives it up."""
        with self._lock:
            self._keys[session] = key
            self._held[session] = owner
            self._lost.pop(session, None)

    def renew(self, session: str, owner: str) -> bool:
        """Refresh the heartbeat of `owner`'s lease; False when it no longer holds it."""
        with self._lock, self._translate(f"renew the writer lease of session {session!r}"):
            connection = self._connect()
            changed = connection.execute(
                self._statements.renew, (self._key(connection, session), owner)
            ).rowcount
            if not changed and self._held.get(session) == owner:
                del self._held[session]
                self._lost[session] = owner
        return bool(changed)

    def release(self, session: str, owner: str) -> None:
        """Give `owner`'s lease of `session` up (nothing when it holds none)."""
        with self._lock:
            if self._held.get(session) == owner:
                del self._held[session]
            if self._lost.get(session) == owner:
                del self._lost[session]
            with self._translate(f"release the writer lease of session {session!r}"):
                connection = self._connect()
                connection.execute(
                    self._statements.release, (self._key(connection, session), owner)
                )

    def holder(self, session: str) -> Holder | None:
        """Who holds `session`'s writer lease (live or expired), or None."""
        with self._lock, self._translate(f"read the writer lease of session {session!r}"):
            connection = self._connect()
            if self.format_version < LEASES_VERSION:  # an old store read-only: no leases
                return None
            found = connection.execute(
                self._statements.lease, (self._key(connection, session),)
            ).fetchone()
        return None if found is None else Holder(*found)
