"""Retention: removing finished sessions older than a cutoff, and the images only they used.

Owns which sessions may go (SQLStore.prune): finished (no node running, waiting for a
person or `unknown`, no operation pending, running or `unknown`), no writer lease, not
read by a fork nor by a reader noted in the store (store/_readers.py: a dataset made
from its calls, a saved eval report), not a queued, running or waiting run
(openprogram.runs' table, when the store has one), and, with keep_failed, not failed.
Their nodes, operations, run rows and sessions go in one transaction per batch; then
blobs no remaining node refers to; then, with `compact`, the file (SQLite: VACUUM) or
the tables (PostgreSQL: VACUUM FULL) shrink. Start at prune().
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol

from openprogram.errors import UsageError
from openprogram.store._readers import readers_of
from openprogram.store.format import SessionInfo

__all__ = ["PruneReport", "prune"]

_IMAGE = re.compile(r'"\$image":"([0-9a-f]{64})"')  # format.py's stored image reference
_BATCH = 500
_UNFINISHED = ("running", "waiting", "unknown")
_OPEN_OPERATIONS = ("pending", "running", "unknown")  # a resumed run takes them up
_TABLES = ("openprogram_nodes", "openprogram_sessions", "openprogram_blobs",
           "openprogram_operations", "openprogram_operation_events")  # fmt: skip


class PrunedStore(Protocol):
    """What prune() uses of a store: SQLStore's connection and the sessions it lists."""

    placeholder: ClassVar[str]

    def connected(self, action: str | None) -> AbstractContextManager[Any]: ...
    def transaction(self, connection: object) -> AbstractContextManager[Any]: ...
    def database_time(self) -> float: ...
    def forget_sessions(self, ids: Iterable[str]) -> None: ...
    def list_sessions(self) -> list[SessionInfo]: ...


@dataclass
class PruneReport:
    """What prune() removed (or, with dry_run, would remove) and what it kept, and why."""

    removed: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # old session -> why it stays
    nodes: int = 0
    blobs: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    dry_run: bool = False


def prune(
    store: PrunedStore,
    *,
    older_than: float,
    keep_failed: bool = False,
    dry_run: bool = False,
    compact: bool = True,
) -> PruneReport:
    """Remove the finished sessions of `store` (a SQLStore) whose last record is older
    than `older_than` seconds (by the database's clock); see the module's rules."""
    if not isinstance(older_than, (int, float)) or older_than < 0:
        raise UsageError(f"older_than={older_than!r} must be a number of seconds >= 0")
    report = PruneReport(dry_run=dry_run)
    p = store.placeholder
    with store.connected("prune sessions") as connection:
        report.bytes_before = _size(store, connection)
        cutoff = store.database_time() - older_than
        runs = _has_table(store, connection, "openprogram_runs")
        candidates = _candidates(connection, p, cutoff, runs)
        parents = {info.parent for info in store.list_sessions() if info.parent is not None}
        readers = readers_of(connection, p)
        going: list[tuple[str, int]] = []
        for id, key, nodes, unfinished, failed, leased, state, operating in candidates:
            why = _why_kept(id, unfinished, failed, leased, state, parents, keep_failed)
            if why is None and operating:
                why = "an operation of it is pending, running or unknown"
            if why is None and id in readers:
                names = readers[id]
                why = f"{names[0]} reads it" if len(names) == 1 else f"{', '.join(names)} read it"
            if why is not None:
                report.kept[id] = why
                continue
            going.append((id, key))
            report.nodes += nodes
        report.removed = [id for id, _ in going]
        if dry_run or not going:
            report.bytes_after = report.bytes_before
            return report
        for start in range(0, len(going), _BATCH):
            keys = [key for _, key in going[start : start + _BATCH]]
            ids = [id for id, _ in going[start : start + _BATCH]]
            _remove(store, connection, p, keys, ids, runs)
        store.forget_sessions(id for id, _ in going)
        report.blobs = _unreferenced_blobs(store, connection, p)
        if compact:
            _compact(store, connection)
        report.bytes_after = _size(store, connection)
    return report


def _candidates(connection: Any, p: str, cutoff: float, runs: bool) -> list[tuple[Any, ...]]:
    """(id, key, nodes, unfinished nodes, failed top-level nodes, leased, run state, open
    operations) of each session created before `cutoff` whose last record is before it
    too."""
    unfinished = ", ".join(f"'{s}'" for s in _UNFINISHED)
    operations = ", ".join(f"'{s}'" for s in _OPEN_OPERATIONS)
    run_state = "(SELECT r.state FROM openprogram_runs r WHERE r.id = s.id)" if runs else "NULL"
    statement = (
        "SELECT s.id, s.key, "
        "(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key), "
        f"(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key "
        f"AND n.status IN ({unfinished})), "
        "(SELECT count(*) FROM openprogram_nodes n WHERE n.session = s.key "
        "AND n.parent IS NULL AND n.status = 'error'), "
        "(SELECT count(*) FROM openprogram_leases l WHERE l.session = s.key), "
        f"{run_state}, (SELECT count(*) FROM openprogram_operations o WHERE o.session = s.key "
        f"AND o.state IN ({operations})) FROM openprogram_sessions s WHERE s.created_at < {p} "
        "AND NOT EXISTS (SELECT 1 FROM openprogram_nodes n WHERE n.session = s.key "
        f"AND (n.started_at >= {p} OR n.ended_at >= {p})) ORDER BY s.created_at"
    )
    return list(connection.execute(statement, (cutoff, cutoff, cutoff)).fetchall())


def _why_kept(
    id: str,
    unfinished: int,
    failed: int,
    leased: int,
    state: str | None,
    parents: set[str],
    keep_failed: bool,
) -> str | None:
    if state is not None and state not in ("completed", "failed", "stopped", "cancelled"):
        return f"its run is {state}"
    if unfinished:
        return "it has calls running, waiting for a person or unknown"
    if leased:
        return "a writer holds its lease"
    if id in parents:
        return "a fork reads its history"
    if keep_failed and (failed or state == "failed"):
        return "it failed (--keep-failed)"
    return None


def _remove(
    store: PrunedStore, connection: Any, p: str, keys: list[int], ids: list[str], runs: bool
) -> None:
    marks = ", ".join([p] * len(keys))
    names = ", ".join([p] * len(ids))
    with store.transaction(connection):
        for table in ("openprogram_nodes", "openprogram_operation_events",
                      "openprogram_operations", "openprogram_leases"):  # fmt: skip
            connection.execute(f"DELETE FROM {table} WHERE session IN ({marks})", tuple(keys))
        if runs:
            connection.execute(f"DELETE FROM openprogram_runs WHERE id IN ({names})", tuple(ids))
        connection.execute(f"DELETE FROM openprogram_sessions WHERE key IN ({marks})", tuple(keys))


def _unreferenced_blobs(store: PrunedStore, connection: Any, p: str) -> int:
    """Delete the images no remaining node refers to; how many."""
    used: set[str] = set()
    rows = connection.execute(
        "SELECT input, output, data FROM openprogram_nodes WHERE input LIKE '%$image%' "
        "OR output LIKE '%$image%' OR data LIKE '%$image%'"
    )
    for values in rows.fetchall():
        for text in values:
            if text:
                used.update(_IMAGE.findall(text))
    stored = [row[0] for row in connection.execute("SELECT sha256 FROM openprogram_blobs")]
    unused = [sha for sha in stored if sha not in used]
    with store.transaction(connection):
        for start in range(0, len(unused), _BATCH):
            chunk = unused[start : start + _BATCH]
            marks = ", ".join([p] * len(chunk))
            connection.execute(f"DELETE FROM openprogram_blobs WHERE sha256 IN ({marks})", chunk)
    return len(unused)


def _has_table(store: PrunedStore, connection: Any, name: str) -> bool:
    if store.placeholder == "%s":
        return connection.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0] is not None
    found = connection.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).fetchone()
    return found is not None


def _size(store: PrunedStore, connection: Any) -> int:
    """The store's bytes: the SQLite file and its WAL, or the tables' total relation size."""
    if store.placeholder == "%s":
        total = 0
        for table in _TABLES:
            if _has_table(store, connection, table):
                found = connection.execute("SELECT pg_total_relation_size(%s)", (table,))
                total += int(found.fetchone()[0])
        return total
    path = getattr(store, "path", None)
    if path is None or getattr(store, "memory", False):
        return 0
    from pathlib import Path

    return sum(f.stat().st_size for f in (Path(path), Path(f"{path}-wal")) if f.exists())


def _compact(store: PrunedStore, connection: Any) -> None:
    """Give the freed pages back: SQLite rewrites the file (VACUUM, then truncates its
    WAL); PostgreSQL rewrites the tables (VACUUM FULL: each locked while it runs)."""
    if store.placeholder == "%s":
        for table in _TABLES:
            if _has_table(store, connection, table):
                connection.execute(f"VACUUM FULL {table}")
        return
    connection.execute("VACUUM")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
