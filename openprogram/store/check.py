"""Checking a store for damage: what `openprogram sessions check` reports.

Owns StoreReport: SQLite's integrity_check over the whole file, then every session's rows
read one at a time and decoded, and the links between them followed, so the report says
what is damaged and how much is still readable. Only reads (a SQLite file is opened
read-only). Start at check_store().
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from openprogram.errors import StoreError, UsageError
from openprogram.store._sql import SQLStore
from openprogram.store.format import ROW_COLUMNS, NodeRow, SessionInfo, _decode
from openprogram.store.journal import pending, pending_dir
from openprogram.store.open import open_store
from openprogram.store.sqlite import SQLiteStore

__all__ = ["SessionReport", "StoreReport", "check_store"]

_SHOWN = 10


@dataclass
class SessionReport:
    """What could be read of one session's own rows."""

    id: str
    rows: int = 0
    """Rows read before the end (or before reading failed)."""
    nodes: int = 0
    """Rows that decode to nodes."""
    stopped: str | None = None
    """Why reading stopped before the last row, when it did."""
    bad_rows: list[str] = field(default_factory=list)
    """Rows that are not nodes: "node 'x' (seq 3): why"."""
    broken_links: list[str] = field(default_factory=list)
    """Nodes naming a parent or predecessor that cannot be read, or a completion later
    than any readable row: signs of rows that are missing."""

    @property
    def ok(self) -> bool:
        return self.stopped is None and not self.bad_rows and not self.broken_links


@dataclass
class StoreReport:
    """The damage found in a store, and what of it is readable."""

    url: str
    problems: list[str] = field(default_factory=list)
    """Damage of the store itself (SQLite's integrity_check, an unreadable session table)."""
    sessions: list[SessionReport] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    """Journals of SQLite writers that died, not yet folded in (not damage): "N records
    of session 'x' in path"."""
    refused: list[str] = field(default_factory=list)
    """The journals' folder or files that are never folded in, and why: not the store's
    own (another user's, writable by others, a symbolic link, not a regular file) or
    damaged (over a size limit, a record that is not a node row)."""

    @property
    def damaged(self) -> bool:
        return bool(self.problems) or not all(s.ok for s in self.sessions)

    @property
    def ok(self) -> bool:
        return not self.damaged and not self.refused

    def lines(self) -> list[str]:
        """The report as text lines, ending with what to do when something is damaged."""
        nodes = sum(s.nodes for s in self.sessions)
        state = "DAMAGED" if self.damaged else "JOURNALS REFUSED" if self.refused else "ok"
        head = f"store {self.url}: {state}"
        out = [f"{head} — {len(self.sessions)} session(s), {nodes:,} nodes readable"]
        if self.problems:
            out.append(f"  the file: {len(self.problems)} problem(s)")
            out += [f"    {p}" for p in self.problems[:_SHOWN]]
            if len(self.problems) > _SHOWN:
                out.append(f"    … {len(self.problems) - _SHOWN} more")
        for report in self.sessions:
            state = "ok" if report.ok else "DAMAGED"
            counts = f"{report.nodes:,} of {report.rows:,} rows read are nodes"
            out.append(f"  session {report.id}: {state}, {counts}")
            if report.stopped is not None:
                out.append(f"    reading stopped after {report.rows:,} rows: {report.stopped}")
            for title, items in (
                ("rows that are not nodes", report.bad_rows),
                ("signs of missing rows", report.broken_links),
            ):
                if items:
                    out.append(f"    {len(items)} {title}:")
                    out += [f"      {item}" for item in items[:_SHOWN]]
                    if len(items) > _SHOWN:
                        out.append(f"      … {len(items) - _SHOWN} more")
        if self.pending:
            out.append(
                f"  {len(self.pending)} journal(s) of writers that died, folded in when the "
                "store is next opened for writing (a Session, `sessions show`):"
            )
            out += [f"    {p}" for p in self.pending[:_SHOWN]]
        if self.refused:
            out.append(f"  {len(self.refused)} journal file(s) or folder refused:")
            out += [f"    {r}" for r in self.refused[:_SHOWN]]
            if len(self.refused) > _SHOWN:
                out.append(f"    … {len(self.refused) - _SHOWN} more")
            out.append(
                "What to do about the refused journals: nothing in them is folded in. If "
                "they are this store's (copied as another user, say), give them the store's "
                "owner and mode 0600 (the folder 0700) and open the store again; if not, "
                "someone else wrote them: remove them."
            )
        if self.damaged:
            out.append(
                "What to do: restore the store from a backup. Until then, sessions marked ok "
                "above can be read with SQLiteStore(path, read_only=True, check=False); do not "
                "record into this file (openprogram refuses to)."
            )
        return out


def check_store(spec: object, session: str | None = None) -> StoreReport:
    """Check the store `spec` (as Session(store=...) takes it), all sessions or one.

    Raises StoreError when the store cannot be opened at all, UsageError for an unknown
    session.
    """
    store, owned = open_store(spec, read_only=True, check=False)
    if store is None:
        raise StoreError(f"store={spec!r} keeps nothing to check; pass a file or a URL")
    try:
        report = StoreReport(store.url)
        if isinstance(store, SQLiteStore):
            report.problems += _integrity(store)
            report.pending += _pending(store, report)
        infos = _sessions(store, report)
        if session is not None:
            infos = [info for info in infos if info.id == session]
            if not infos:
                raise UsageError(f"no session {session!r} readable in {store.url}")
        by_id = {info.id: info for info in infos}
        for info in infos:
            report.sessions.append(_check_session(store, info, by_id))
        return report
    finally:
        if owned:
            store.close()


def _pending(store: SQLiteStore, report: StoreReport) -> list[str]:
    """The journals nobody holds beside the file, left as they are (those refused are
    added to the report)."""
    found = []
    for journal in pending(pending_dir(store.path), refused=report.refused):
        torn = ", the last one cut short" * journal.torn
        found.append(
            f"{len(journal.rows)} records of session {journal.session!r}{torn} in {journal.path}"
        )
        journal.skip()
    return found


def _integrity(store: SQLiteStore) -> list[str]:
    try:
        with store.connected(None) as connection:
            found = [r for (r,) in connection.execute("PRAGMA integrity_check(100)")]
    except sqlite3.DatabaseError as exc:
        return [f"SQLite's integrity_check could not finish: {exc}"]
    lines = [line for r in found if r != "ok" for line in r.splitlines()]
    return [line for line in lines if not line.startswith("*** in database")]


def _sessions(store: Any, report: StoreReport) -> list[SessionInfo]:
    """Every session entry that can be read (damaged ones noted in the report)."""
    if not isinstance(store, SQLStore):
        return list(store.list_sessions())
    infos: list[SessionInfo] = []
    query = "SELECT id, created_at, info FROM openprogram_sessions ORDER BY key"
    try:
        for values in _cursor(store, query, ()):
            try:
                infos.append(SessionInfo.from_json(*values))
            except StoreError as exc:
                report.problems.append(str(exc))
    except StoreError as exc:
        report.problems.append(f"the session table could not be read to the end: {exc}")
    return infos


def _cursor(store: SQLStore, query: str, args: tuple[Any, ...]) -> Iterator[tuple[Any, ...]]:
    """The rows of `query`, one at a time; a failure mid-way raises StoreError."""
    with store.connected("read") as connection:
        cursor = connection.execute(query, args)
        while True:
            values = cursor.fetchone()
            if values is None:
                return
            yield tuple(values)


def _rows(store: Any, id: str, report: SessionReport) -> list[NodeRow]:
    if not isinstance(store, SQLStore):
        return list(store.rows(id))
    rows: list[NodeRow] = []
    p = store.placeholder
    query = (
        f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = "
        f"(SELECT key FROM openprogram_sessions WHERE id = {p}) ORDER BY seq"
    )
    try:
        for values in _cursor(store, query, (id,)):
            rows.append(NodeRow(*values))
    except StoreError as exc:
        report.stopped = str(exc.__cause__ or exc)
    return rows


def _check_session(store: Any, info: SessionInfo, infos: dict[str, SessionInfo]) -> SessionReport:
    report = SessionReport(info.id)
    try:
        rows = _rows(store, info.id, report)
    except StoreError as exc:
        report.stopped = str(exc)
        return report
    report.rows = len(rows)
    known: dict[str, int] = {}
    nodes = []
    for row in rows:
        if isinstance(row.seq, int):
            known[str(row.id)] = row.seq
        try:
            node, _ = _decode(row, info.id)
        except StoreError as exc:
            report.bad_rows.append(
                f"node {row.id!r} (seq {row.seq!r}): {str(exc).split(': ', 1)[-1]}"
            )
            continue
        nodes.append(node)
    report.nodes = len(nodes)
    inherited = _inherited(store, info, infos)
    last = max([*known.values(), *inherited.values()], default=0)
    for node in nodes:
        for link, target in (("parent", node.parent), ("predecessor", node.predecessor)):
            if target is not None and target not in known and target not in inherited:
                report.broken_links.append(
                    f"node {node.id!r} (seq {node.seq}) names {link} {target!r}, "
                    "which is not readable"
                )
        if node.end_seq is not None and node.end_seq > last and not report.stopped:
            report.broken_links.append(
                f"node {node.id!r} (seq {node.seq}) completed at seq {node.end_seq}, "
                f"but the readable rows end at seq {last}"
            )
    return report


def _inherited(store: Any, info: SessionInfo, infos: dict[str, SessionInfo]) -> dict[str, int]:
    """The ids (and seqs) a fork may refer to from its parents' rows."""
    ids: dict[str, int] = {}
    seen: set[str] = set()
    parent = info.parent
    while parent is not None and parent not in seen:
        seen.add(parent)
        try:
            ids.update((str(row.id), row.seq) for row in store.rows(parent))
        except StoreError:
            break
        parent_info = infos.get(parent) or store.session(parent)
        parent = None if parent_info is None else parent_info.parent
    return ids
