"""The run queue's tables and statements, written once for SQLite and PostgreSQL.

A run is a session (its id is the session's id) plus a row in `openprogram_runs` saying
what to call, on which queue, when, and how it ended; `openprogram_run_queues` holds
queue limits. The tables live beside the store's own (created when first used, outside
the store's format_version: an older openprogram ignores them). Start at Dialect.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FINISHED", "POSTGRES", "SQLITE", "STATES", "Dialect"]

STATES = ("queued", "running", "waiting", "completed", "failed", "stopped", "cancelled")
"""queued: waits for a worker (maybe until `run_at`); running: a worker holds its
session's writer lease; waiting: it suspended for a person (an unanswered question, an
effect to settle) and goes on when requeued; the rest are final."""
FINISHED = ("completed", "failed", "stopped", "cancelled")

_COLUMNS = (
    "id, queue, function, args, priority, state, run_at, submitted_at, started_at, "
    "ended_at, worker, worker_process, claimed_at, attempts, takeovers, cancel, result, error"
)


@dataclass(frozen=True)
class Dialect:
    """The statements of one backend: `p` its placeholder, `now` its clock (seconds since
    the epoch: every worker compares times by the database's clock)."""

    p: str
    now: str
    real: str
    postgres: bool
    cast: str = ""

    @property
    def tables(self) -> tuple[str, ...]:
        return (
            "CREATE TABLE IF NOT EXISTS openprogram_runs (id TEXT PRIMARY KEY, "
            "queue TEXT NOT NULL, function TEXT NOT NULL, args TEXT NOT NULL, "
            f"priority INTEGER NOT NULL, state TEXT NOT NULL, run_at {self.real} NOT NULL, "
            f"submitted_at {self.real} NOT NULL, started_at {self.real}, ended_at {self.real}, "
            f"worker TEXT, worker_process TEXT, claimed_at {self.real}, "
            "attempts INTEGER NOT NULL DEFAULT 0, takeovers INTEGER NOT NULL DEFAULT 0, "
            "cancel INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT)",
            "CREATE INDEX IF NOT EXISTS openprogram_runs_ready "
            "ON openprogram_runs (state, queue, priority, run_at)",
            "CREATE TABLE IF NOT EXISTS openprogram_run_queues (name TEXT PRIMARY KEY, "
            "concurrency INTEGER)",
        )

    @property
    def insert(self) -> str:
        p = self.p
        return (
            "INSERT INTO openprogram_runs (id, queue, function, args, priority, state, run_at, "
            f"submitted_at) VALUES ({p}, {p}, {p}, {p}, {p}, 'queued', "
            f"coalesce({p}{self.cast}, {self.now}) + {p}{self.cast}, {self.now}) "
            "ON CONFLICT (id) DO NOTHING"
        )

    @property
    def select(self) -> str:
        return f"SELECT {_COLUMNS} FROM openprogram_runs WHERE id = {self.p}"

    def candidates(self, queues: int) -> str:
        """Queued runs due now on `queues` (that many placeholders), best first, on queues
        below their concurrency limit: the first is claimed. PostgreSQL locks the row it
        returns and skips rows other workers have locked (SKIP LOCKED)."""
        p = self.p
        names = ", ".join([p] * queues)
        skip = " FOR UPDATE OF r SKIP LOCKED" if self.postgres else ""
        return (
            "SELECT r.id FROM openprogram_runs r WHERE r.state = 'queued' "
            f"AND r.queue IN ({names}) AND r.run_at <= {self.now} "
            "AND NOT EXISTS (SELECT 1 FROM openprogram_run_queues q WHERE q.name = r.queue "
            "AND q.concurrency IS NOT NULL AND q.concurrency <= (SELECT count(*) FROM "
            "openprogram_runs x WHERE x.queue = r.queue AND x.state = 'running')) "
            f"ORDER BY r.priority DESC, r.run_at, r.submitted_at LIMIT 1{skip}"
        )

    def lock_limited(self, queues: int) -> str:
        """PostgreSQL: lock the limited queues' rows, so that two workers counting a
        queue's running runs take turns (SQLite's BEGIN IMMEDIATE does that already)."""
        names = ", ".join([self.p] * queues)
        return (
            "SELECT name FROM openprogram_run_queues WHERE concurrency IS NOT NULL "
            f"AND name IN ({names}) ORDER BY name FOR UPDATE"
        )

    def pick(self, queues: int, limited: bool) -> str:
        """The ids of up to `p` queued runs due on `queues` (that many placeholders
        first), best first: with `limited`, as candidates() counts queue limits (claim
        one at a time then: the counts are read before the claim), else on queues
        without a limit only. PostgreSQL locks them, skipping rows locked by others."""
        p = self.p
        names = ", ".join([p] * queues)
        skip = " FOR UPDATE OF r SKIP LOCKED" if self.postgres else ""
        if limited:
            room = (
                "AND NOT EXISTS (SELECT 1 FROM openprogram_run_queues q WHERE q.name = "
                "r.queue AND q.concurrency IS NOT NULL AND q.concurrency <= (SELECT count(*) "
                "FROM openprogram_runs x WHERE x.queue = r.queue AND x.state = 'running'))"
            )
        else:
            room = (
                "AND NOT EXISTS (SELECT 1 FROM openprogram_run_queues q WHERE q.name = "
                "r.queue AND q.concurrency IS NOT NULL)"
            )
        return (
            "SELECT r.id FROM openprogram_runs r WHERE r.state = 'queued' "
            f"AND r.queue IN ({names}) AND r.run_at <= {self.now} {room} "
            f"ORDER BY r.priority DESC, r.run_at, r.submitted_at LIMIT {p}{skip}"
        )

    def claim_batch(self, queues: int, limited: bool) -> str:
        """Claim up to n runs and take their sessions' writer leases, in one statement
        (PostgreSQL) or the first of two in one transaction (SQLite, which has no
        UPDATE in WITH). Parameters: PostgreSQL the queues, n, worker, process, then
        the lease's owner prefix, salt, host, pid and process; SQLite worker, process,
        the queues, n. Returns the runs''
        columns, then (PostgreSQL) the session's key and the lease's owner: NULL when
        the lease is held already (a dead writer's, or a person's: the worker takes it
        as any writer does) or the session is missing (the worker makes it)."""
        p, now = self.p, self.now
        update = (
            f"UPDATE openprogram_runs SET state = 'running', worker = {p}, "
            f"worker_process = {p}, claimed_at = {now}, "
            f"started_at = coalesce(started_at, {now}), attempts = attempts + 1"
        )
        if not self.postgres:
            return f"{update} WHERE id IN ({self.pick(queues, limited)}) RETURNING {_COLUMNS}"
        columns = ", ".join(f"c.{c}" for c in _COLUMNS.split(", "))
        return (
            f"WITH picked AS ({self.pick(queues, limited)}), "
            f"claimed AS ({update} FROM picked WHERE openprogram_runs.id = picked.id "
            f"RETURNING {', '.join(f'openprogram_runs.{c}' for c in _COLUMNS.split(', '))}), "
            "leased AS (INSERT INTO openprogram_leases (session, owner, host, pid, process, "
            f"acquired_at, heartbeat_at) SELECT s.key, {p}::text || substr(md5({p}::text || "
            f"s.id), 1, 8), {p}::text, {p}::bigint, {p}::text, {now}, {now} FROM claimed c "
            "JOIN openprogram_sessions s ON s.id = c.id "
            "ON CONFLICT (session) DO NOTHING RETURNING session, owner) "
            f"SELECT {columns}, s.key, l.owner FROM claimed c "
            "LEFT JOIN openprogram_sessions s ON s.id = c.id "
            "LEFT JOIN leased l ON l.session = s.key"
        )

    def lease_claimed(self, runs: int) -> str:
        """SQLite: take the writer leases of `runs` claimed runs' sessions where none is
        held (parameters: the owner prefix, host, pid, process, then that many session
        ids); returns each lease taken's session key and owner."""
        p, now = self.p, self.now
        ids = ", ".join([p] * runs)
        return (
            "INSERT INTO openprogram_leases (session, owner, host, pid, process, "
            f"acquired_at, heartbeat_at) SELECT s.key, {p} || lower(hex(randomblob(4))), "
            f"{p}, {p}, {p}, {now}, {now} FROM openprogram_sessions s WHERE s.id IN ({ids}) "
            "AND true ON CONFLICT (session) DO NOTHING RETURNING session, owner"
        )

    def keys(self, runs: int) -> str:
        ids = ", ".join([self.p] * runs)
        return f"SELECT id, key FROM openprogram_sessions WHERE id IN ({ids})"

    def unclaim(self) -> str:
        """A claimed run this worker never started goes back as it was (not counted as
        an attempt), fenced by the lease the claim took. Then the lease is released."""
        return self.fenced(
            "state = 'queued', worker = NULL, worker_process = NULL, attempts = attempts - 1"
        )

    @property
    def limited(self) -> str:
        return "SELECT name FROM openprogram_run_queues WHERE concurrency IS NOT NULL"

    @property
    def claim(self) -> str:
        p = self.p
        return (
            f"UPDATE openprogram_runs SET state = 'running', worker = {p}, "
            f"worker_process = {p}, claimed_at = {self.now}, "
            f"started_at = coalesce(started_at, {self.now}), attempts = attempts + 1 "
            f"WHERE id = {p} AND state = 'queued'"
        )

    @property
    def running(self) -> str:
        """The running runs with their sessions' writer leases (None when none is held)."""
        return (
            "SELECT r.id, r.worker, r.worker_process, r.claimed_at, l.owner, l.host, l.pid, "
            "l.process, l.acquired_at, l.heartbeat_at FROM openprogram_runs r "
            "LEFT JOIN openprogram_sessions s ON s.id = r.id "
            "LEFT JOIN openprogram_leases l ON l.session = s.key WHERE r.state = 'running'"
        )

    @property
    def clock(self) -> str:
        return f"SELECT {self.now}"

    @property
    def orphaned(self) -> str:
        """Put a running run back in its queue, when its worker is the one seen (a
        compare-and-set: of two workers finding it orphaned, one requeues it). It keeps
        its due time, so it goes before the runs queued after it first started."""
        p = self.p
        return (
            f"UPDATE openprogram_runs SET state = 'queued', worker = NULL, "
            f"worker_process = NULL, takeovers = takeovers + 1 "
            f"WHERE id = {p} AND state = 'running' AND worker = {p}"
        )

    def fenced(self, assignments: str) -> str:
        """UPDATE the run `id` only while writer `owner` holds its session's lease: a
        worker that lost the lease (taken over while it was stopped) changes nothing.
        Parameters: the assignments', then id, id, owner."""
        p = self.p
        return (
            f"UPDATE openprogram_runs SET {assignments} WHERE id = {p} AND EXISTS (SELECT 1 "
            "FROM openprogram_leases l JOIN openprogram_sessions s ON s.key = l.session "
            f"WHERE s.id = {p} AND l.owner = {p})"
        )

    def finish(self) -> str:
        p = self.p
        return self.fenced(
            f"state = {p}, result = {p}, error = {p}, ended_at = {self.now}, worker = NULL, "
            "worker_process = NULL"
        )

    def hand_back(self) -> str:
        """A drained run goes back keeping its due time (ahead of later runs)."""
        return self.fenced("state = 'queued', worker = NULL, worker_process = NULL")

    @property
    def release(self) -> str:
        """A claimed run whose session this worker could not open goes back, unfenced
        (no lease was taken) but only while it still names this worker."""
        p = self.p
        return (
            "UPDATE openprogram_runs SET state = 'queued', worker = NULL, "
            f"worker_process = NULL, run_at = {self.now} + {p}{self.cast} "
            f"WHERE id = {p} AND state = 'running' AND worker = {p}"
        )

    @property
    def cancel_queued(self) -> str:
        p = self.p
        return (
            "UPDATE openprogram_runs SET state = 'cancelled', cancel = 1, "
            f"ended_at = {self.now}, error = {p} "
            f"WHERE id = {p} AND state IN ('queued', 'waiting')"
        )

    @property
    def cancel_running(self) -> str:
        return f"UPDATE openprogram_runs SET cancel = 1 WHERE id = {self.p} AND state = 'running'"

    @property
    def cancelled(self) -> str:
        """Which of a worker's running runs were asked to stop."""
        return (
            "SELECT id FROM openprogram_runs WHERE state = 'running' AND cancel = 1 "
            f"AND worker = {self.p}"
        )

    @property
    def requeue(self) -> str:
        p = self.p
        return (
            f"UPDATE openprogram_runs SET state = 'queued', run_at = {self.now}, "
            f"ended_at = NULL, error = NULL WHERE id = {p} AND state = 'waiting'"
        )

    @property
    def set_limit(self) -> str:
        p = self.p
        return (
            f"INSERT INTO openprogram_run_queues (name, concurrency) VALUES ({p}, {p}) "
            "ON CONFLICT (name) DO UPDATE SET concurrency = excluded.concurrency"
        )

    @property
    def counts(self) -> str:
        return "SELECT state, count(*) FROM openprogram_runs GROUP BY state"

    def listing(self, where: str) -> str:
        return f"SELECT {_COLUMNS} FROM openprogram_runs {where} ORDER BY submitted_at"


SQLITE = Dialect(p="?", now="((julianday('now') - 2440587.5) * 86400.0)", real="REAL",
                 postgres=False)  # fmt: skip
POSTGRES = Dialect(p="%s", now="extract(epoch from clock_timestamp())::float8",
                   real="DOUBLE PRECISION", postgres=True, cast="::float8")  # fmt: skip
