"""RunQueue: the run queue of one store, on a connection of its own to the store's database.

Owns submitting (a run row, then its session: the same id is one run), claiming the best
queued run (PostgreSQL: SELECT … FOR UPDATE SKIP LOCKED; SQLite: BEGIN IMMEDIATE, one
machine), finding running runs whose worker is gone, and ending a run, fenced by its
session's writer lease. The worker (worker.py) and the Run handle (handle.py) use it.
Start at RunQueue.claim().
"""

from __future__ import annotations

import json
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from typing import Any

from openprogram.echo import echo, mask_url
from openprogram.errors import StoreError, UsageError
from openprogram.runs._sql import FINISHED, POSTGRES, SQLITE, Dialect
from openprogram.store import SessionInfo
from openprogram.store.base import Store
from openprogram.store.format import check_id_size
from openprogram.store.lease import Holder, new_owner
from openprogram.store.open import open_store

__all__ = ["Claimed", "Orphan", "RunInfo", "RunQueue"]

_LOCK_ID = 0x6F70_7275_6E73  # "oprruns": creating the tables, once per database


@dataclass(frozen=True)
class _Outcome:
    """What one statement gave, read while the queue's lock was held."""

    rows: list[Any]
    rowcount: int

    def fetchone(self) -> Any:
        return self.rows[0] if self.rows else None

    def fetchall(self) -> list[Any]:
        return self.rows


@dataclass(frozen=True)
class RunInfo:
    """A run as its row says: what it calls, where it is, how it ended."""

    id: str
    queue: str
    function: str
    args: str
    priority: int
    state: str
    run_at: float
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    worker: str | None
    worker_process: str | None
    claimed_at: float | None
    attempts: int
    takeovers: int
    cancel: int
    result: str | None
    error: str | None

    @property
    def finished(self) -> bool:
        return self.state in FINISHED

    def call(self) -> tuple[list[Any], dict[str, Any]]:
        """The positional and keyword arguments it was submitted with."""
        args, kwargs = json.loads(self.args)
        return list(args), dict(kwargs)


@dataclass(frozen=True)
class Claimed:
    """A run claimed for a worker, and the writer lease of its session taken in the same
    statement (`owner`, the session's `key`), or None when the lease was held already
    or the session is missing: the worker then takes it as any writer does."""

    run: RunInfo
    owner: str | None
    key: int | None


@dataclass(frozen=True)
class Orphan:
    """A running run and who holds it: its claiming worker and its session's lease."""

    id: str
    worker: str
    claimer: Holder
    lease: Holder | None


class RunQueue:
    """The runs of the store `spec` (a SQLite file path or "sqlite:///…", or a
    "postgresql://…" URL): what `submit`, the Run handle and `openprogram worker` share.

    Raises UsageError for a store that cannot hold runs (memory, a Store object),
    StoreError when the database cannot be reached.
    """

    def __init__(self, spec: object) -> None:
        if isinstance(spec, os.PathLike):
            spec = os.fspath(spec)
        if not isinstance(spec, str) or spec == "memory":
            raise UsageError(
                f"store={echo(spec)} cannot hold runs: runs outlive the process that submits "
                "them, so they need a durable store named by its URL or path: a SQLite file "
                "('runs.db', 'sqlite:///runs.db') or 'postgresql://...'"
            )
        store, _ = open_store(spec)  # creates the session tables when missing
        assert store is not None
        self.spec = spec
        self.store: Store = store
        self.url = store.url
        postgres = spec.startswith(("postgresql:", "postgres:"))
        self.dialect: Dialect = POSTGRES if postgres else SQLITE
        self._lock = threading.RLock()
        self._connection: Any = None
        self._connect()

    # -- connection ----------------------------------------------------------------------
    def _connect(self) -> Any:
        with self._lock:
            if self._connection is not None:
                return self._connection
            with self._translate("connect"):
                if self.dialect.postgres:
                    import psycopg

                    connection: Any = psycopg.connect(
                        self.spec, autocommit=True, connect_timeout=10
                    )
                else:
                    path = getattr(self.store, "path", None)
                    if path is None or str(path) == ":memory:":
                        raise UsageError(f"store={echo(self.spec)}: runs need a SQLite file")
                    connection = sqlite3.connect(
                        path, timeout=30.0, isolation_level=None, check_same_thread=False
                    )
                try:
                    with self._transaction(connection):
                        if self.dialect.postgres:
                            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_ID,))
                        for statement in self.dialect.tables:
                            connection.execute(statement)
                except BaseException:
                    connection.close()
                    raise
            self._connection = connection
            return connection

    def _transaction(self, connection: Any) -> AbstractContextManager[Any]:
        if self.dialect.postgres:
            return connection.transaction()  # type: ignore[no-any-return]
        return _immediate(connection)

    @contextmanager
    def _translate(self, action: str) -> Iterator[None]:
        try:
            yield
        except (UsageError, StoreError):
            raise
        except Exception as exc:
            if not _driver_error(exc):
                raise
            self.close()  # the next call reconnects
            why = mask_url(str(exc), self.spec)
            raise StoreError(f"the run queue in {self.url} could not {action}: {why}") from None

    def _run(self, action: str, statement: str, params: Sequence[Any] = ()) -> _Outcome:
        # the rows are read under the lock too: a cursor read after it was let go fails if
        # another thread closed the connection meanwhile (close(), or a driver error)
        with self._lock, self._translate(action):
            cursor = self._connect().execute(statement, tuple(params))
            rows = cursor.fetchall() if cursor.description is not None else []
            return _Outcome(rows, cursor.rowcount)

    def close(self) -> None:
        """Close the queue's connection and its store's (a later call reconnects)."""
        with self._lock:
            try:
                if self._connection is not None:
                    self._connection.close()
            finally:
                self._connection = None
                self.store.close()

    def __enter__(self) -> RunQueue:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:  # a dropped queue closes its connections, quietly
        with suppress(Exception):
            self.close()

    def now(self) -> float:
        """The database's clock (seconds since the epoch)."""
        return float(self._run("read the clock", self.dialect.clock).fetchone()[0])

    # -- submitting ----------------------------------------------------------------------
    def submit(
        self,
        id: str,
        function: str,
        args: Sequence[Any],
        kwargs: dict[str, Any],
        *,
        queue: str,
        priority: int,
        delay: float,
        at: float | None,
    ) -> RunInfo:
        """Record the run (and its session) unless run `id` exists; returns its row.
        UsageError when `id` is a run of another call, or a session that is no run, or
        longer than any store indexes."""
        check_id_size(id)
        try:
            encoded = json.dumps([list(args), kwargs], allow_nan=False, sort_keys=True)
        except (TypeError, ValueError) as exc:
            raise UsageError(
                f"the arguments of run {echo(id)} are not JSON ({exc}): a run is started by "
                "another process, which gets its arguments from the store. Pass JSON values "
                "(strings, numbers, lists, dicts) and build richer ones inside the function"
            ) from None
        values = (id, queue, function, encoded, int(priority), at, float(delay))
        if self.store.session(id) is not None and self.get(id) is None:
            raise UsageError(
                f"{self.url} holds session {echo(id)} already, and it is not a run: choose another "
                "run id (a run's id is its session's)"
            )
        created = self._run(f"submit run {echo(id)}", self.dialect.insert, values).rowcount
        found = self.get(id)
        assert found is not None
        if not created and (found.function, found.args) != (function, encoded):
            raise UsageError(
                f"run {echo(id)} exists already with another call ({echo(found.function)} with "
                f"{_cut(found.args)}); the same id is one run. Submit this call under "
                "another id"
            )
        if self.store.session(id) is None:  # also when a submit died between the two
            with suppress(UsageError):  # another submit of the same id made it meanwhile
                self.store.create_session(
                    SessionInfo(id=id, created_at=time.time(), extra={"run": function})
                )
        return found

    def set_limit(self, queue: str, concurrency: int | None) -> None:
        """At most `concurrency` runs of `queue` run at once, over all workers (None: no
        limit)."""
        if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
            raise UsageError(f"concurrency={echo(concurrency)} must be a whole number >= 1 or None")
        self._run(f"limit queue {echo(queue)}", self.dialect.set_limit, (queue, concurrency))

    # -- reading -------------------------------------------------------------------------
    def get(self, id: str) -> RunInfo | None:
        found = self._run(f"read run {echo(id)}", self.dialect.select, (id,)).fetchone()
        return None if found is None else RunInfo(*found)

    def list_runs(self, state: str | None = None) -> list[RunInfo]:
        where, params = ("", ()) if state is None else (f"WHERE state = {self.dialect.p}", (state,))
        found = self._run("list runs", self.dialect.listing(where), params).fetchall()
        return [RunInfo(*row) for row in found]

    def counts(self) -> dict[str, int]:
        """How many runs are in each state (states without runs left out)."""
        found = self._run("count runs", self.dialect.counts).fetchall()
        return {state: int(count) for state, count in found}

    # -- workers -------------------------------------------------------------------------
    def claim(self, queues: Sequence[str], owner: str, process: str) -> RunInfo | None:
        """Take the best queued run due on `queues` for writer `owner` (process `process`,
        lease.this_process()), or None when there is none: it becomes `running`."""
        d = self.dialect
        with self._lock, self._translate("claim a run"):
            connection = self._connect()
            with self._transaction(connection):
                if d.postgres:
                    connection.execute(d.lock_limited(len(queues)), tuple(queues)).fetchall()
                found = connection.execute(d.candidates(len(queues)), tuple(queues)).fetchone()
                if found is None:
                    return None
                connection.execute(d.claim, (owner, process, found[0]))
                row = connection.execute(d.select, (found[0],)).fetchone()
        return RunInfo(*row)

    def claim_batch(
        self, queues: Sequence[str], n: int, worker: str, process: str, *, limited: bool
    ) -> list[Claimed]:
        """Take up to `n` of the best queued runs due on `queues` for `worker` (process
        `process`, lease.this_process()) and the writer leases of their sessions, in one
        statement on PostgreSQL (SELECT … FOR UPDATE SKIP LOCKED: workers claiming at
        once skip each other's rows), in one BEGIN IMMEDIATE on SQLite; best first.
        `limited`: some of `queues` have a concurrency limit (limited_queues()): one
        run is claimed, its queue's running runs counted under a lock."""
        d = self.dialect
        n = 1 if limited else max(1, n)
        prefix = new_owner().rpartition(":")[0] + ":"  # the lease owners: host:pid:random
        host = prefix.rsplit(":", 2)[0]
        with self._lock, self._translate("claim runs"):
            connection = self._connect()
            with self._transaction(connection) if limited or not d.postgres else _none():
                if limited and d.postgres:
                    connection.execute(d.lock_limited(len(queues)), tuple(queues)).fetchall()
                if d.postgres:  # the WITH's parameters first
                    salt = secrets.token_hex(8)
                    params = (*queues, n, worker, process, prefix, salt, host, os.getpid(), process)
                    rows = connection.execute(d.claim_batch(len(queues), limited), params)
                    found = [(RunInfo(*row[:-2]), row[-1], row[-2]) for row in rows.fetchall()]
                else:
                    statement = d.claim_batch(len(queues), limited)
                    runs = connection.execute(statement, (worker, process, *queues, n))
                    claimed = [RunInfo(*row) for row in runs.fetchall()]
                    ids = tuple(r.id for r in claimed)
                    leases: dict[int, str] = {}
                    keys: dict[str, int] = {}
                    if ids:
                        lease = (prefix, host, os.getpid(), process, *ids)
                        taken = connection.execute(d.lease_claimed(len(ids)), lease).fetchall()
                        leases = {key: owner for key, owner in taken}
                        keys = dict(connection.execute(d.keys(len(ids)), ids).fetchall())
                    found = [(r, leases.get(keys.get(r.id, -1)), keys.get(r.id)) for r in claimed]
        found.sort(key=lambda c: (-c[0].priority, c[0].run_at, c[0].submitted_at))
        return [
            Claimed(run, owner, key if owner is not None else None) for run, owner, key in found
        ]

    def limited_queues(self, queues: Sequence[str]) -> set[str]:
        """Which of `queues` have a concurrency limit now."""
        names = self._run("read the queue limits", self.dialect.limited).fetchall()
        return {row[0] for row in names} & set(queues)

    def unclaim(self, claimed: Claimed) -> bool:
        """Put a claimed run this worker never started back as it was, and give up the
        lease its claim took (a drained worker's runs waiting for a slot)."""
        if claimed.owner is None:
            self.release(claimed.run.id, claimed.run.worker or "")
            return True
        id, owner = claimed.run.id, claimed.owner
        d = self.dialect
        with self._lock, self._translate(f"hand back run {echo(id)}"):
            connection = self._connect()
            with self._transaction(connection):
                back = connection.execute(d.unclaim(), (id, id, owner)).rowcount
                connection.execute(
                    f"DELETE FROM openprogram_leases WHERE session = {d.p} AND owner = {d.p}",
                    (claimed.key, owner),
                )
        return bool(back)

    def running(self) -> tuple[float, list[Orphan]]:
        """The database's time and every running run with who holds it."""
        with self._lock, self._translate("read the running runs"):
            connection = self._connect()
            now = float(connection.execute(self.dialect.clock).fetchone()[0])
            rows = connection.execute(self.dialect.running).fetchall()
        found = []
        for id, worker, process, claimed_at, *lease in rows:
            host, pid = _host_pid(worker or "")
            claimer = Holder(worker or "", host, pid, process or "", claimed_at or 0.0,
                             claimed_at or 0.0)  # fmt: skip
            holder = None if lease[0] is None else Holder(*lease)
            found.append(Orphan(id, worker or "", claimer, holder))
        return now, found

    def requeue_orphan(self, id: str, worker: str) -> bool:
        """Put run `id` back in its queue if `worker` still has it (a compare-and-set)."""
        changed = self._run(f"requeue run {echo(id)}", self.dialect.orphaned, (id, worker)).rowcount
        return bool(changed)

    def finish(
        self, id: str, owner: str, state: str, result: str | None, error: str | None
    ) -> bool:
        """End run `id` as `state`, only while `owner` holds its session's writer lease."""
        params = (state, result, error, id, id, owner)
        return bool(self._run(f"end run {echo(id)}", self.dialect.finish(), params).rowcount)

    def hand_back(self, id: str, owner: str) -> bool:
        """Queue run `id` again now (a drained worker's), fenced like finish()."""
        done = self._run(f"hand back run {echo(id)}", self.dialect.hand_back(), (id, id, owner))
        return bool(done.rowcount)

    def release(self, id: str, owner: str, *, delay: float = 0.0) -> None:
        """Queue a claimed run again, due in `delay` seconds, whose session this worker
        could not open or whose lease a live writer holds."""
        self._run(f"release run {echo(id)}", self.dialect.release, (delay, id, owner))

    def cancel(self, id: str, reason: str) -> str:
        """Cancel run `id`: at once when queued or waiting; a running one stops at its
        next call (its worker looks). Returns its state after."""
        d = self.dialect
        if not self._run(f"cancel run {echo(id)}", d.cancel_queued, (reason, id)).rowcount:
            self._run(f"cancel run {echo(id)}", d.cancel_running, (id,))
        found = self.get(id)
        if found is None:
            raise UsageError(f"no run {echo(id)} in {self.url}")
        return found.state

    def cancelled(self, owner: str) -> list[str]:
        found = self._run("read cancelled runs", self.dialect.cancelled, (owner,)).fetchall()
        return [row[0] for row in found]

    def requeue(self, id: str) -> bool:
        """Queue a waiting run again (its question answered, its effect settled)."""
        return bool(self._run(f"requeue run {echo(id)}", self.dialect.requeue, (id,)).rowcount)

    def __repr__(self) -> str:
        return f"RunQueue({self.url!r})"


def _host_pid(owner: str) -> tuple[str, int]:
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    return host, int(pid) if pid.isdigit() else 0


def _cut(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


def _driver_error(exc: Exception) -> bool:
    if isinstance(exc, sqlite3.Error):
        return True
    module = type(exc).__module__
    return module.startswith("psycopg")


@contextmanager
def _none() -> Iterator[None]:
    yield


@contextmanager
def _immediate(connection: sqlite3.Connection) -> Iterator[None]:
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
