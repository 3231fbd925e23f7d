"""SQLiteStore: the embedded default store, one file holding many sessions.

WAL mode, one transaction per record, rows keyed by (session, seq) and a blob table
deduplicated by sha256. Several processes may write different sessions into one file
(writers wait for each other up to `timeout_s`). sqlite3 errors are translated here.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Literal

from openprogram.errors import StoreError, UsageError
from openprogram.store.format import (
    FORMAT_VERSION,
    ROW_COLUMNS,
    NodeRow,
    SessionInfo,
    check_format_version,
)

__all__ = ["SQLiteStore"]

log = logging.getLogger("openprogram.store")

Synchronous = Literal["NORMAL", "FULL"]
"""NORMAL: a record survives the process being killed at any instant (the default).
FULL: it also survives power loss, at the cost of an fsync per record."""

_SCHEMA = (
    "CREATE TABLE openprogram_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE openprogram_sessions (key INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
    "created_at REAL NOT NULL, info TEXT NOT NULL)",
    "CREATE TABLE openprogram_nodes (session INTEGER NOT NULL, seq INTEGER NOT NULL, "
    "id TEXT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, parent TEXT, "
    "status TEXT NOT NULL, started_at REAL NOT NULL, ended_at REAL, end_seq INTEGER, "
    "input TEXT, output TEXT, data TEXT, PRIMARY KEY (session, seq)) WITHOUT ROWID",
    "CREATE TABLE openprogram_blobs (sha256 TEXT PRIMARY KEY, data BLOB NOT NULL)",
)
_UPSERT = (
    f"INSERT INTO openprogram_nodes (session, {ROW_COLUMNS}) "
    f"VALUES ({', '.join(['?'] * 13)}) "
    "ON CONFLICT (session, seq) DO UPDATE SET status = excluded.status, "
    "ended_at = excluded.ended_at, end_seq = excluded.end_seq, output = excluded.output, "
    "data = excluded.data, input = coalesce(openprogram_nodes.input, excluded.input) "
    "WHERE openprogram_nodes.id = excluded.id"
)
_BLOB = "INSERT INTO openprogram_blobs (sha256, data) VALUES (?, ?) ON CONFLICT DO NOTHING"
_SESSIONS = (
    "SELECT s.id, s.created_at, s.info, "
    "(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key) "
    "FROM openprogram_sessions s"
)


class SQLiteStore:
    """A session store in one SQLite file (created when missing).

    synchronous: "NORMAL" (durable against process crashes) or "FULL" (also against
    power loss). timeout_s: how long a writer waits for another process's transaction.
    Raises UnsupportedFormatVersion for a file of another format version, StoreError for
    a file that is not an openprogram store.
    """

    def __init__(
        self, path: str | Path, *, synchronous: Synchronous = "NORMAL", timeout_s: float = 30.0
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous={synchronous!r} is not one of 'NORMAL', 'FULL'")
        self.path = Path(path).expanduser().resolve()
        self.url = f"sqlite:///{self.path}"
        self.synchronous = synchronous
        self.timeout_s = timeout_s
        self.format_version = FORMAT_VERSION
        self._lock = threading.RLock()
        self._connection: sqlite3.Connection | None = None
        self._checkpointer: _Checkpointer | None = None
        self._writes = 0
        self._keys: dict[str, int] = {}
        self._connect()

    # -- connection ----------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            if self._connection is not None:
                return self._connection
            with self._translate("open"):
                if not self.path.parent.is_dir():
                    raise UsageError(
                        f"cannot create a session store at {str(self.path)!r}: "
                        f"the folder {str(self.path.parent)!r} does not exist"
                    )
                connection = sqlite3.connect(
                    self.path, timeout=self.timeout_s, isolation_level=None,
                    check_same_thread=False,
                )  # fmt: skip
                try:
                    known = self._version(connection)  # before anything writes to the file
                    connection.execute("PRAGMA journal_mode=WAL")
                    connection.execute(f"PRAGMA synchronous={self.synchronous}")
                    # checkpoints (and their fsync) run in _Checkpointer, off the hot path
                    connection.execute("PRAGMA wal_autocheckpoint=0")
                    if not known:
                        self._create(connection)
                except BaseException:
                    connection.close()
                    raise
            self._connection = connection
            return connection

    def _create(self, connection: sqlite3.Connection) -> None:
        """Create the schema in an empty file (unless another process just did)."""
        connection.execute("BEGIN IMMEDIATE")
        try:
            if not self._version(connection):  # nobody created it while we waited
                for statement in _SCHEMA:
                    connection.execute(statement)
                connection.execute(
                    "INSERT INTO openprogram_meta VALUES ('format_version', ?)",
                    (str(FORMAT_VERSION),),
                )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    def _version(self, connection: sqlite3.Connection) -> bool:
        tables = {
            name
            for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if "openprogram_meta" not in tables:
            if tables:
                raise StoreError(
                    f"{str(self.path)!r} is a SQLite database but not an openprogram session "
                    f"store (it has tables {sorted(tables)!r}); use another file"
                )
            return False
        found = connection.execute(
            "SELECT value FROM openprogram_meta WHERE key = 'format_version'"
        ).fetchone()
        check_format_version(found[0] if found else None, f"session store {str(self.path)!r}")
        return True

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise StoreError(f"SQLite store {str(self.path)!r} could not {action}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            if self._checkpointer is not None:
                self._checkpointer.stop()
                self._checkpointer = None
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def _written(self) -> None:
        """Count a write; every _CHECKPOINT_EVERY of them, fold the WAL into the file."""
        self._writes += 1
        if self._writes % _CHECKPOINT_EVERY == 0:
            if self._checkpointer is None:
                self._checkpointer = _Checkpointer(self.path, self.timeout_s)
                self._checkpointer.start()
            self._checkpointer.wake()

    def __del__(self) -> None:  # a dropped store closes its connection, quietly
        with suppress(Exception):
            self.close()

    # -- sessions ------------------------------------------------------------------------
    def create_session(self, info: SessionInfo) -> None:
        with self._lock, self._translate(f"create session {info.id!r}"):
            connection = self._connect()
            try:
                cursor = connection.execute(
                    "INSERT INTO openprogram_sessions (id, created_at, info) VALUES (?, ?, ?)",
                    (info.id, info.created_at, info.to_json()),
                )
            except sqlite3.IntegrityError:
                raise UsageError(
                    f"session {info.id!r} exists already in {str(self.path)!r}; reopen it "
                    "with Session.open(store, id)"
                ) from None
            assert cursor.lastrowid is not None
            self._keys[info.id] = cursor.lastrowid

    def session(self, id: str) -> SessionInfo | None:
        with self._lock, self._translate(f"read session {id!r}"):
            found = self._connect().execute(_SESSIONS + " WHERE s.id = ?", (id,)).fetchone()
        return None if found is None else SessionInfo.from_json(*found)

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock, self._translate("list sessions"):
            found = self._connect().execute(_SESSIONS + " ORDER BY s.created_at").fetchall()
        return [SessionInfo.from_json(*row) for row in found]

    def _key(self, connection: sqlite3.Connection, session: str) -> int:
        key = self._keys.get(session)
        if key is None:
            found = connection.execute(
                "SELECT key FROM openprogram_sessions WHERE id = ?", (session,)
            ).fetchone()
            if found is None:
                raise StoreError(f"no session {session!r} in {str(self.path)!r}")
            key = self._keys[session] = found[0]
        return key

    # -- rows and blobs ------------------------------------------------------------------
    def write(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> None:
        with self._lock:
            try:
                connection = self._connection or self._connect()
                values = (self._keys.get(session) or self._key(connection, session), *row)
                if not blobs:
                    changed = connection.execute(_UPSERT, values).rowcount
                else:
                    connection.execute("BEGIN IMMEDIATE")
                    try:
                        connection.executemany(_BLOB, blobs.items())
                        changed = connection.execute(_UPSERT, values).rowcount
                        if changed:
                            connection.execute("COMMIT")
                    finally:
                        if connection.in_transaction:
                            connection.execute("ROLLBACK")
            except sqlite3.Error as exc:
                raise StoreError(
                    f"SQLite store {str(self.path)!r} could not record node {row.id!r}: {exc}"
                ) from exc
            self._written()
        if not changed:
            raise StoreError(
                f"seq {row.seq} of session {session!r} in {str(self.path)!r} belongs to "
                f"another node than {row.id!r}: two writers are recording into one session"
            )

    def rows(self, session: str) -> list[NodeRow]:
        with self._lock, self._translate(f"read session {session!r}"):
            connection = self._connect()
            found = connection.execute(
                f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = ? ORDER BY seq",
                (self._key(connection, session),),
            ).fetchall()
        return [NodeRow(*values) for values in found]

    def blob(self, sha256: str) -> bytes | None:
        with self._lock, self._translate(f"read image {sha256[:12]}"):
            found = (
                self._connect()
                .execute("SELECT data FROM openprogram_blobs WHERE sha256 = ?", (sha256,))
                .fetchone()
            )
        return None if found is None else bytes(found[0])

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r})"


_CHECKPOINT_EVERY = 500
"""Writes between WAL checkpoints (each write adds a page or two to the WAL)."""
_WAL_LIMIT_FRAMES = 8192
"""A WAL of more pages than this (32 MB of 4 kB pages) is truncated: a PASSIVE checkpoint
cannot restart the WAL while writes keep arriving, so it would grow without bound."""


class _Checkpointer(threading.Thread):
    """Folds the WAL back into the database file when woken, on a connection of its own.

    SQLite's automatic checkpoint runs inside the commit that crosses its threshold, and
    its fsync costs that one record milliseconds; here it runs beside the writers (a
    PASSIVE checkpoint never blocks them; a TRUNCATE one, when the WAL grew past
    _WAL_LIMIT_FRAMES, does for as long as it takes). If the process dies
    mid-checkpoint, the next open finishes the job: checkpoints are crash-safe.
    """

    def __init__(self, path: Path, timeout_s: float) -> None:
        super().__init__(name=f"openprogram-checkpoint-{path.name}", daemon=True)
        self._path = path
        self._timeout_s = timeout_s
        self._event = threading.Event()
        self._stopping = False

    def wake(self) -> None:
        self._event.set()

    def stop(self) -> None:
        self._stopping = True
        self._event.set()
        self.join()

    def run(self) -> None:
        connection = sqlite3.connect(
            self._path, timeout=self._timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            while True:
                self._event.wait()
                self._event.clear()
                if self._stopping:
                    return
                try:
                    _, frames, _ = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
                    if frames > _WAL_LIMIT_FRAMES:  # writers never paused: make them, briefly
                        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                except sqlite3.Error as exc:  # busy or locked: the next wake tries again
                    log.debug("openprogram: WAL checkpoint of %s skipped: %s", self._path, exc)
        finally:
            connection.close()
