"""SQLiteStore: the embedded default store, one file holding many sessions.

WAL mode, one transaction per batch of records, rows keyed by (session, seq), a blob table
deduplicated by sha256. Several processes may write different sessions into one file
(writers wait for each other up to `timeout_s`). sqlite3 errors are translated here.
"""

from __future__ import annotations

import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Literal
from urllib.parse import quote

from openprogram.errors import StoreDamaged, StoreError, UsageError
from openprogram.store._budgets import tables as budget_tables
from openprogram.store._operations import tables
from openprogram.store._sql import SQLStore
from openprogram.store._statements import statements
from openprogram.store._turns import immediate, turns
from openprogram.store._whole import found_whole, note_whole, refresh
from openprogram.store.format import FORMAT_VERSION, OLD_VALUES_MIGRATION, NodeRow
from openprogram.store.journal import Journal, available, pending_dir, replay

__all__ = ["SQLiteStore"]

log = logging.getLogger("openprogram.store")

Synchronous = Literal["NORMAL", "FULL"]
"""NORMAL: a commit survives the process being killed at any instant (the default), not
power loss. FULL: it also survives power loss, at the cost of an fsync per commit."""

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
_LEASES = (
    "CREATE TABLE openprogram_leases (session INTEGER PRIMARY KEY, owner TEXT NOT NULL, "
    "host TEXT NOT NULL, pid INTEGER NOT NULL, process TEXT NOT NULL, "
    "acquired_at REAL NOT NULL, heartbeat_at REAL NOT NULL)",
)
_OPERATIONS = tables("INTEGER", "REAL", "INTEGER PRIMARY KEY")
_BUDGETS = budget_tables("REAL", "INTEGER")
_MIGRATIONS = {1: _LEASES, 2: (), 3: (), 4: (), 5: OLD_VALUES_MIGRATION, 6: (), 7: _OPERATIONS,
               8: _BUDGETS}  # fmt: skip
"""format_version N -> N+1 (3 only allows the status `stopped`, 4 the render report's
`report_base`, 5 llm contents stored as strings: no table changes; 6 notes in each
session's info up to which seq its values were stored as reprs; 7 adds the operations
tables, 8 the budgets table)."""
_TABLES = _SCHEMA + _LEASES + _OPERATIONS + _BUDGETS
_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
_CHECKED_TABLES = ("openprogram_meta", "openprogram_sessions", "openprogram_nodes",
                   "openprogram_leases", "openprogram_operations",
                   "openprogram_operation_events", "openprogram_budgets")  # fmt: skip
"""What the check on opening covers: everything a session is read from (not the images,
whose damage SQLite reports when one is read)."""
MEMORY = ":memory:"


class SQLiteStore(SQLStore):
    """A session store in one SQLite file (created when missing), or in memory.

    path: the file; ":memory:" for an in-memory database that lives as long as this
    object. synchronous: "NORMAL" (durable against process crashes) or "FULL" (also
    against power loss). timeout_s: how long a writer waits for another process's
    transaction. read_only: open for reading only (chosen by itself when the file or its
    folder is not writable). check: on first connecting, run SQLite's quick_check over
    the tables sessions are read from, once per file in a process (store/_whole.py;
    False: skip it; `sessions check` uses that to look into a damaged file).
    Raises StoreDamaged for a damaged file, UnsupportedFormatVersion for a file of another
    format version, StoreError for a file that is not an openprogram store.
    """

    _statements = statements("?", _NOW)
    _now = _NOW
    _connection: sqlite3.Connection | None

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Synchronous = "NORMAL",
        timeout_s: float = 30.0,
        read_only: bool = False,
        check: bool = True,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise UsageError(f"synchronous={synchronous!r} is not one of 'NORMAL', 'FULL'")
        super().__init__()
        self.memory = str(path) == MEMORY
        self.path = Path(MEMORY) if self.memory else Path(path).expanduser().resolve()
        self.url = f"sqlite:///{self.path}"
        self._where = repr(str(self.path))
        self.synchronous = synchronous
        self.timeout_s = timeout_s
        self.read_only = read_only
        self.check = check and not self.memory
        self._checked = False
        self._checkpointer: _Checkpointer | None = None
        self._writes = 0
        self._turn: threading.Lock | None = None  # the file's Turns lock, for write_start
        self._start_cursor: sqlite3.Cursor | None = None  # write_start's, on the connection
        self._connect()

    # -- connection ----------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        with self._lock:
            if self._connection is not None:
                return self._connection
            with self._translate("open"):
                connection = self._open()
                try:
                    if self.check and not self._checked:
                        if not found_whole(self.path):  # once per file and process
                            self._check_integrity(connection)
                            note_whole(self.path)
                        self._checked = True
                    version = self._version(connection)  # before anything writes to the file
                    if self.read_only:
                        self.format_version = version or 0
                    else:
                        self._enable_wal(connection)
                        connection.execute(f"PRAGMA synchronous={self.synchronous}")
                        # checkpoints (and their fsync) run in _Checkpointer, off the hot path
                        connection.execute("PRAGMA wal_autocheckpoint=0")
                        if version != FORMAT_VERSION:
                            with self._transaction(connection):
                                self._create_tables(connection, _TABLES, _MIGRATIONS)
                        self._fold_pending(connection, None)
                except BaseException:
                    connection.close()
                    raise
            self._connection = connection
            return connection

    def _open(self) -> sqlite3.Connection:
        """Connect: in memory, to the file for writing, or read-only when it must be."""
        if self.memory:
            return self._sqlite(MEMORY)
        if not self.path.parent.is_dir():
            raise UsageError(
                f"cannot create a session store at {self._where}: "
                f"the folder {str(self.path.parent)!r} does not exist"
            )
        why = self._unwritable()
        if why is not None and not self.path.exists():
            raise StoreError(f"cannot create a session store at {self._where}: {why}")
        if why is not None and not self.read_only:
            log.info("openprogram: opening %s read-only: %s", self._where, why)
            self.read_only = True
        if not self.read_only:
            return self._sqlite(str(self.path))
        return self._sqlite(self._read_only_uri(), uri=True)

    def _sqlite(self, database: str, *, uri: bool = False) -> sqlite3.Connection:
        return sqlite3.connect(
            database, timeout=self.timeout_s, isolation_level=None, check_same_thread=False,
            uri=uri,
        )  # fmt: skip

    def _unwritable(self) -> str | None:
        """Why this process cannot write the store, or None when it can."""
        if self.path.exists() and not os.access(self.path, os.W_OK):
            return "the file is not writable"
        if not os.access(self.path.parent, os.W_OK):
            sidecars = [Path(f"{self.path}-wal"), Path(f"{self.path}-shm")]
            if not all(os.access(p, os.W_OK) for p in sidecars):
                return f"its folder {str(self.path.parent)!r} is not writable"
        return None

    def _read_only_uri(self) -> str:
        """mode=ro, or immutable=1 when SQLite could not even create its shared-memory
        file (a read-only folder) and no write-ahead log holds records the file lacks."""
        uri = f"file:{quote(str(self.path))}?mode=ro"
        shm, wal = Path(f"{self.path}-shm"), Path(f"{self.path}-wal")
        if os.access(self.path.parent, os.W_OK) or shm.exists():
            return uri
        if wal.exists() and wal.stat().st_size > 0:
            raise StoreError(
                f"cannot read {self._where}: its write-ahead log {str(wal)!r} holds records "
                "not yet in the file, and SQLite cannot read them in the read-only folder "
                f"{str(self.path.parent)!r}. Copy the store together with its -wal file to "
                "a writable folder and open the copy"
            )
        return uri + "&immutable=1"

    def _check_writable(self, action: str) -> None:
        if self.read_only:
            raise StoreError(
                f"cannot {action}: the session store {self._where} is open read-only "
                "(the file or its folder is not writable); reading works. To record, copy "
                "the store somewhere writable or fix its permissions"
            )

    def _check_integrity(self, connection: sqlite3.Connection) -> None:
        """Raise StoreDamaged when SQLite's quick_check finds the session tables damaged."""
        try:
            tables = {
                name
                for (name,) in connection.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'"
                )
            }
            problems: list[str] = []
            for table in _CHECKED_TABLES:
                if table in tables:
                    found = [r for (r,) in connection.execute(f"PRAGMA quick_check({table})")]
                    problems += [line for r in found if r != "ok" for line in r.splitlines()]
        except sqlite3.DatabaseError as exc:
            if not _corrupt(exc):
                raise
            problems = [str(exc)]
        problems = [p for p in problems if not p.startswith("*** in database")]
        if problems:
            raise self._damaged(problems)

    def _damaged(self, problems: list[str]) -> StoreDamaged:
        shown = "; ".join(problems[:3]) + (f" (and {len(problems) - 3} more)" * (len(problems) > 3))
        return StoreDamaged(
            f"the SQLite session store {self._where} is damaged ({shown}); nothing was read "
            "from it as if it were whole, and nothing can be recorded into it. Restore it from "
            f"a backup; `openprogram sessions check --store {self.path}` reports what is "
            "still readable"
        )

    def _enable_wal(self, connection: sqlite3.Connection) -> None:
        """Switch the file to WAL. When two processes open a new file at once, SQLite can
        answer "database is locked" at once instead of waiting out its busy timeout, so
        retry until timeout_s has passed."""
        deadline = time.monotonic() + self.timeout_s
        delay = 0.005
        while True:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    def _transaction(self, connection: sqlite3.Connection) -> AbstractContextManager[None]:
        return immediate(connection)

    def _has_schema(self, connection: sqlite3.Connection) -> bool:
        tables = {
            name
            for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        if tables and "openprogram_meta" not in tables:
            raise StoreError(
                f"{self._where} is a SQLite database but not an openprogram session "
                f"store (it has tables {sorted(tables)!r}); use another file"
            )
        return "openprogram_meta" in tables

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            if _corrupt(exc):
                raise self._damaged([f"could not {action}: {exc}"]) from exc
            raise StoreError(f"SQLite store {self._where} could not {action}: {exc}") from exc

    def _fold_pending(self, connection: sqlite3.Connection, session: str | None) -> None:
        """Fold the journals of writers that died (journal.py) into the file."""
        if self.memory or self.read_only:
            return

        def write(session: str, rows: Sequence[NodeRow], owner: str) -> NodeRow | None:
            return self._upsert(connection, session, rows, {}, owner)

        replay(pending_dir(self.path), write, self._where, session)

    def journal(self, session: str) -> Journal | None:
        """A journal for the records of `session` that wait for their batch's commit
        (None when none is needed: an in-memory or read-only store, or one not holding
        the session's lease): with it a killed process loses none of them. Raises
        OSError when it cannot be kept (no flock: Windows; an unwritable folder); the
        Recorder then commits each record at once; JournalRefused, an OSError, when
        `<store>-pending/` is not this store's own (journal.py)."""
        owner = self._held.get(session)
        if self.memory or self.read_only or owner is None:
            return None
        if not available():
            raise OSError("this platform has no flock, which journals need")
        return Journal.open(pending_dir(self.path), session, owner)

    def forget_in_fork_child(self) -> None:
        if self.memory:  # the child's own copy of the data: it stays usable here
            self._lock = threading.RLock()
            self._held.clear()
            self._lost.clear()
            return
        super().forget_in_fork_child()
        self._checkpointer = None  # the parent's thread: not in this process
        self._turn = self._start_cursor = None  # the parent's lock and connection

    def _lock_session(self, connection: sqlite3.Connection, key: int) -> None:
        """Nothing to do: BEGIN IMMEDIATE made every other writer of the file wait."""

    def close(self) -> None:
        """Release the connection; an in-memory store keeps it (it holds the data)."""
        with self._lock:
            if self._checkpointer is not None:
                self._checkpointer.stop()
                self._checkpointer = None
            if not self.memory:
                self._start_cursor = None
                written = self._connection is not None and not self.read_only
                super().close()
                if written:  # closing folded the WAL into the file: our own write
                    refresh(self.path)

    def _written(self, rows: int) -> None:
        """Count written rows; every _CHECKPOINT_EVERY of them, fold the WAL into the file."""
        before = self._writes
        self._writes += rows
        if self._writes // _CHECKPOINT_EVERY != before // _CHECKPOINT_EVERY:
            if self._checkpointer is None:
                turn = turns(self.path, self.synchronous).turn()
                self._checkpointer = _Checkpointer(self.path, self.timeout_s, turn)
                self._checkpointer.start()
            self._checkpointer.wake()

    # -- writes --------------------------------------------------------------------------
    def _add_session(
        self, connection: sqlite3.Connection, values: tuple[str, float, str]
    ) -> int | None:
        try:
            cursor = connection.execute(self._statements.insert_session, values)
        except sqlite3.IntegrityError:  # the id exists already
            return None
        assert cursor.lastrowid is not None
        return cursor.lastrowid

    def _upsert_rows(
        self, cursor: sqlite3.Cursor, key: int, rows: Sequence[NodeRow], owner: str
    ) -> int:
        """Upsert `rows` _CHUNKS rows at a time, one statement each (the rest row by row):
        a statement per row costs SQLite a virtual machine run, and sqlite3 a release and
        retake of the GIL, per row."""
        changed, done = 0, 0
        for size in _CHUNKS:
            statement = _chunk_upsert(self._statements.upsert, size)
            while len(rows) - done >= size:
                values = [value for row in rows[done : done + size] for value in (key, *row)]
                changed += cursor.execute(statement, (*values, key, owner)).rowcount
                done += size
        if done < len(rows):
            changed += super()._upsert_rows(cursor, key, rows[done:], owner)
        return changed

    def write_start(self, session: str, row: NodeRow) -> bool:
        """Record `row`, a new node, on its own in one statement (its own transaction,
        fenced by the writer lease like every write): the committed start of a call
        with a declared effect (store/recorder.py), without write_batch's round trips.
        Whether it was recorded; False, recording nothing, when this store does not
        hold the lease or the seq is another node's; raises the driver's errors (the
        recorder then records the row as it records any, which reports them)."""
        owner, key = self._held.get(session), self._keys.get(session)
        if owner is None or key is None:
            return False
        values = (key, *row, key, owner)
        if self.memory:
            with self._lock:
                connection = self._connection or self._connect()
                return bool(connection.execute(self._statements.upsert, values).rowcount)
        turn = self._turn
        if turn is None:
            turn = self._turn = turns(self.path, self.synchronous).turn()
        with self._lock, turn:
            connection = self._connection or self._connect()
            cursor = self._start_cursor  # kept, with its statement prepared
            if cursor is None or cursor.connection is not connection:
                cursor = self._start_cursor = connection.cursor()
            changed = cursor.execute(self._statements.upsert, values).rowcount
        self._written(1)
        return bool(changed)

    def _record(
        self, session: str, rows: Sequence[NodeRow], blobs: Mapping[str, bytes], owner: str
    ) -> NodeRow | None:
        connection = self._connection or self._connect()
        if self.memory:
            return self._upsert(connection, session, rows, blobs, owner)

        def apply(cursor: sqlite3.Cursor) -> bool:
            key = self._keys.get(session) or self._key(cursor.connection, session)
            return self._apply(cursor, key, rows, blobs, owner)

        def alone(on: sqlite3.Connection) -> NodeRow | None:
            return self._upsert(on, session, rows, blobs, owner)

        refused = turns(self.path, self.synchronous).write(connection, apply, alone)
        self._written(len(rows))
        return refused

    def __repr__(self) -> str:
        return f"SQLiteStore({self._where})"


_CHUNKS = (64, 8)
"""Rows per multi-row upsert statement, largest first (few sizes: each is prepared once
and kept in sqlite3's statement cache)."""
_ONE_ROW = "SELECT " + ", ".join(["?"] * 13) + " WHERE"


@functools.cache
def _chunk_upsert(upsert: str, size: int) -> str:
    """`upsert` (one row of 13 values) made to insert `size` rows at once."""
    rows = ", ".join(["(" + ", ".join(["?"] * 13) + ")"] * size)
    assert _ONE_ROW in upsert
    return upsert.replace(_ONE_ROW, f"SELECT * FROM (VALUES {rows}) WHERE", 1)


def _corrupt(exc: sqlite3.Error) -> bool:
    """Whether SQLite reported damage (SQLITE_CORRUPT or one of its extended codes)."""
    return (getattr(exc, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_CORRUPT


_CHECKPOINT_EVERY = 500
"""Writes between WAL checkpoints (each write adds a page or two to the WAL)."""
_RESTART_FRAMES = 1024
"""A WAL of more pages than this (4 MB of 4 kB pages) is caught up with this process's
writers paused, so that the next commit starts it over from its beginning."""
_WAL_LIMIT_FRAMES = 8192
"""A WAL of more pages than this (32 MB of 4 kB pages) is truncated: a PASSIVE checkpoint
cannot restart the WAL while writes keep arriving (another process's too), so it would
grow without bound."""


class _Checkpointer(threading.Thread):
    """Folds the WAL back into the database file when woken, on a connection of its own.

    SQLite's automatic checkpoint runs inside the commit that crosses its threshold, and
    its fsync costs that one record milliseconds; here it runs beside the writers
    (_checkpoint). If the process dies mid-checkpoint, the next open finishes the job:
    checkpoints are crash-safe.
    """

    def __init__(self, path: Path, timeout_s: float, turn: threading.Lock) -> None:
        super().__init__(name=f"openprogram-checkpoint-{path.name}", daemon=True)
        self._path = path
        self._timeout_s = timeout_s
        self._turn = turn
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
                    _checkpoint(connection, self._turn)
                    refresh(self._path)  # our own write into the file
                except sqlite3.Error as exc:  # busy or locked: the next wake tries again
                    log.debug("openprogram: WAL checkpoint of %s skipped: %s", self._path, exc)
        finally:
            connection.close()


def _checkpoint(connection: sqlite3.Connection, turn: threading.Lock) -> None:
    """Fold the WAL into the file on `connection` (the _Checkpointer's): a PASSIVE
    checkpoint, which never blocks the writers; a TRUNCATE one, which does for as long
    as it takes, when the WAL grew past _WAL_LIMIT_FRAMES.

    Writers that never pause leave a PASSIVE checkpoint behind by the frames they
    committed meanwhile, and SQLite starts the WAL over only when a commit finds every
    frame checkpointed: the log would only grow, each commit writing into pages the
    kernel must first allocate and zero (on the benchmark's machine a quarter of a
    one-row commit's CPU). So once it holds more than _RESTART_FRAMES, the frames
    committed meanwhile are checkpointed too with this process's writers of the file
    paused (`turn`, the file's Turns lock): the next commit then writes from the log's
    start, into pages the file has already (the file keeps its size)."""
    busy, frames, _ = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    if frames > _WAL_LIMIT_FRAMES:  # writers never paused: make them, briefly
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    elif frames > _RESTART_FRAMES and not busy:
        with turn:  # the frames committed meanwhile: a copy of them and the syncs
            connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
