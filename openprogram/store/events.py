"""Following a session's records as other processes commit them (Session.events).

A Follow yields each node row of one session once when it is first seen committed, and
again whenever its stored status changes (a call completes, a question is answered). It
reads on a connection of its own. PostgreSQL pushes: a statement trigger on the node
table sends NOTIFY openprogram_nodes (installed on first use), and the follower waits in
LISTEN; SQLite has no push across processes, so the follower looks at the file's
`data_version` every `poll_s` (cheap: no query unless another connection committed) and
reads only then; other stores are read whole every `poll_s`. Start at Follow.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any, Protocol

from openprogram.core.dag import Node
from openprogram.errors import StoreError
from openprogram.store.format import ROW_COLUMNS, NodeRow, decode_after

__all__ = ["CHANNEL", "Follow", "Followed", "NodeEvents"]

CHANNEL = "openprogram_nodes"
_OPEN = ("running", "waiting")
_TRIGGER = (
    "CREATE OR REPLACE FUNCTION openprogram_nodes_notify() RETURNS trigger "
    "LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_notify('openprogram_nodes', d.session::text) "
    "FROM (SELECT DISTINCT session FROM changed) d; RETURN NULL; END $$",
    "CREATE OR REPLACE TRIGGER openprogram_nodes_inserted AFTER INSERT ON openprogram_nodes "
    "REFERENCING NEW TABLE AS changed FOR EACH STATEMENT "
    "EXECUTE FUNCTION openprogram_nodes_notify()",
    "CREATE OR REPLACE TRIGGER openprogram_nodes_updated AFTER UPDATE ON openprogram_nodes "
    "REFERENCING NEW TABLE AS changed FOR EACH STATEMENT "
    "EXECUTE FUNCTION openprogram_nodes_notify()",
)
_TRIGGER_LOCK = 0x6F70_6576_656E_7473  # "opevents": installing the trigger


class Followed(Protocol):
    """What a Follow reads of its store (any Store): its URL, for messages, and a
    session's rows, for a store it has no connection of its own to. A SQLite store's
    `path` and a PostgreSQL store's `new_connection()` are used when it has them."""

    @property
    def url(self) -> str: ...

    def rows(self, session: str) -> list[NodeRow]: ...


class Follow:
    """The records of session `session` of `store` as they are committed, from the first
    seq after `since` (nodes at or before it count as seen; their later changes are
    yielded). Iterate it (sync or `async for`); `wait=False` stops once what is stored
    now was yielded. `poll(timeout)` returns what arrived within `timeout` seconds."""

    def __init__(
        self,
        store: Followed,
        session: str,
        since: int = 0,
        *,
        poll_s: float = 0.05,
        wait: bool = True,
    ) -> None:
        self.store = store
        self.session = session
        self.poll_s = poll_s
        self.wait = wait
        self._seen = since
        self._open: dict[int, str] = {}  # seq -> status, of rows still running or waiting
        self._queue: list[NodeRow] = []
        self._connection: Any = None
        self._new_connection = getattr(store, "new_connection", None)  # a PostgresStore's
        self._postgres = self._new_connection is not None
        self._path = None if getattr(store, "memory", False) else getattr(store, "path", None)
        self._sqlite = self._path is not None
        self._key: int | None = None
        self._version: int | None = None
        self._connect()
        self._open_since(since)

    # -- connection ----------------------------------------------------------------------
    def _connect(self) -> None:
        try:
            if self._new_connection is not None:
                self._connection = self._new_connection()
                with self._connection.transaction():
                    self._connection.execute("SELECT pg_advisory_xact_lock(%s)", (_TRIGGER_LOCK,))
                    for statement in _TRIGGER:
                        self._connection.execute(statement)
                self._connection.execute(f"LISTEN {CHANNEL}")
            elif self._sqlite:
                self._connection = sqlite3.connect(
                    f"file:{self._path}?mode=ro", uri=True, check_same_thread=False,
                    isolation_level=None, timeout=30.0,
                )  # fmt: skip
            if self._connection is not None:
                p = "%s" if self._postgres else "?"
                found = self._connection.execute(
                    f"SELECT key FROM openprogram_sessions WHERE id = {p}", (self.session,)
                ).fetchone()
                if found is None:
                    raise StoreError(f"no session {self.session!r} in {self.store.url}")
                self._key = found[0]
        except StoreError:
            self.close()
            raise
        except Exception as exc:
            self.close()
            raise StoreError(
                f"cannot follow session {self.session!r} in {self.store.url}: {exc}"
            ) from None

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None

    def __enter__(self) -> Follow:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- reading -------------------------------------------------------------------------
    def _rows(self, where: str, params: tuple[Any, ...]) -> list[NodeRow]:
        if self._connection is None:  # another store: read it whole
            return [NodeRow(*r) for r in self.store.rows(self.session)]
        p = "%s" if self._postgres else "?"
        statement = (
            f"SELECT {ROW_COLUMNS} FROM openprogram_nodes WHERE session = {p} AND ({where}) "
            "ORDER BY seq"
        )
        found = self._connection.execute(statement.replace("?", p), (self._key, *params))
        return [NodeRow(*r) for r in found.fetchall()]

    def _open_since(self, since: int) -> None:
        """Note the rows up to `since` still open: their changes are yielded later."""
        if since <= 0:
            return
        for row in self._rows("seq <= ?", (since,)):
            if row.seq <= since and row.status in _OPEN:
                self._open[row.seq] = row.status

    def _fetch(self) -> None:
        """Queue what changed since the last look."""
        opened = sorted(self._open)
        where = "seq > ?" + "".join(" OR seq = ?" for _ in opened)
        for row in self._rows(where, (self._seen, *opened)):
            known = self._open.get(row.seq)
            if row.seq <= self._seen and (known is None or known == row.status):
                continue
            self._seen = max(self._seen, row.seq)
            if row.status in _OPEN:
                self._open[row.seq] = row.status
            else:
                self._open.pop(row.seq, None)
            self._queue.append(row)

    def _changed(self) -> bool:
        """SQLite: whether another connection committed since the last look."""
        version = self._connection.execute("PRAGMA data_version").fetchone()[0]
        changed, self._version = version != self._version, version
        return bool(changed)

    def _wait(self, timeout: float) -> None:
        """Wait until something may have changed, at most `timeout` seconds."""
        if self._postgres and self._connection is not None:
            for _ in self._connection.notifies(timeout=timeout, stop_after=1):
                break
            return
        deadline = time.monotonic() + timeout
        while True:
            if self._sqlite and self._connection is not None and self._changed():
                return
            left = deadline - time.monotonic()
            if left <= 0:
                return
            time.sleep(min(self.poll_s, left))  # no push across processes: a bounded look
            if not self._sqlite:
                return

    def poll(self, timeout: float) -> list[NodeRow]:
        """What was committed (or changed) within `timeout` seconds: at once when
        something is already waiting, else as soon as something arrives."""
        deadline = time.monotonic() + timeout
        if self._sqlite and self._version is None:
            self._changed()
        while True:
            self._fetch()
            if self._queue:
                found, self._queue = self._queue, []
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            self._wait(left)

    def __iter__(self) -> Iterator[NodeRow]:
        while True:
            found = self.poll(1.0 if self.wait else 0.0)
            if not found and not self.wait:
                return
            yield from found

    async def __aiter__(self) -> AsyncIterator[NodeRow]:
        while True:
            found = await asyncio.to_thread(self.poll, 0.25 if self.wait else 0.0)
            if not found and not self.wait:
                return
            for row in found:
                yield row


class NodeEvents:
    """Session.events(): a Follow's rows as Nodes, iterated with `for` or `async for`.
    A node comes again each time its stored status changes. Close it (or use `with`)
    to release its connection; iterating to the end (wait=False) closes it too."""

    def __init__(self, follow: Follow) -> None:
        self.follow = follow
        self._nodes: dict[str, Node] = {}

    def _node(self, row: NodeRow) -> Node:
        node = decode_after(row, self._nodes, self.follow.session)
        self._nodes[node.id] = node
        return node

    def poll(self, timeout: float) -> list[Node]:
        """The nodes recorded or changed within `timeout` seconds (see Follow.poll)."""
        return [self._node(row) for row in self.follow.poll(timeout)]

    def __iter__(self) -> Iterator[Node]:
        try:
            for row in self.follow:
                yield self._node(row)
        finally:
            self.follow.close()

    async def __aiter__(self) -> AsyncIterator[Node]:
        try:
            async for row in self.follow:
                yield self._node(row)
        finally:
            self.follow.close()

    def close(self) -> None:
        self.follow.close()

    def __enter__(self) -> NodeEvents:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
