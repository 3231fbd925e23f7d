"""MemoryStore: a Store held in this process, for tests and short-lived sharing.

Keeps the same rows and blobs a durable store would (so a session can be reopened,
resumed and forked within the process) and loses them when the process ends.
`Session()` without a store records no rows at all; pass `MemoryStore()` to get them.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from openprogram.errors import StoreError, UsageError
from openprogram.store._budgets import BudgetLimits, BudgetTally, LocalBudgets
from openprogram.store._operations import OperationEvent, OperationRow
from openprogram.store.format import FORMAT_VERSION, NodeRow, SessionInfo
from openprogram.store.lease import Holder, this_process

__all__ = ["MemoryStore"]


class MemoryStore:
    """Sessions, rows and blobs in dictionaries, guarded by one lock."""

    format_version = FORMAT_VERSION

    def __init__(self) -> None:
        self.url = f"memory://{id(self):x}"
        self.identity = secrets.token_hex(16)  # effect keys include it (see SQLStore's)
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionInfo] = {}
        self._rows: dict[str, dict[int, NodeRow]] = {}
        self._blobs: dict[str, bytes] = {}
        self._leases: dict[str, Holder] = {}
        self._operations: dict[str, dict[str, OperationRow]] = {}
        self._events: dict[str, list[OperationEvent]] = {}
        self._budgets = LocalBudgets()

    def create_session(self, info: SessionInfo) -> None:
        with self._lock:
            if info.id in self._sessions:
                raise UsageError(
                    f"session {info.id!r} exists already in {self.url}; "
                    "reopen it with Session.open(store, id)"
                )
            self._sessions[info.id] = info
            self._rows[info.id] = {}

    def session(self, id: str) -> SessionInfo | None:
        with self._lock:
            info = self._sessions.get(id)
            return None if info is None else replace(info, nodes=len(self._rows[id]))

    def list_sessions(self) -> list[SessionInfo]:
        with self._lock:
            infos = [
                replace(info, nodes=len(self._rows[key])) for key, info in self._sessions.items()
            ]
        return sorted(infos, key=lambda info: info.created_at)

    def write(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> None:
        with self._lock:
            rows = self._rows.get(session)
            if rows is None:
                raise StoreError(f"no session {session!r} in {self.url}")
            if session not in self._leases:
                raise StoreError(
                    f"cannot record node {row.id!r} into session {session!r} of {self.url}: "
                    "nobody holds the session's writer lease. Enter the session (`with "
                    "session:`) before recording; a Store's own caller takes the lease "
                    "with store.acquire(session, owner)"
                )
            old = rows.get(row.seq)
            if old is not None and old.id != row.id:
                raise StoreError(
                    f"seq {row.seq} of session {session!r} belongs to node {old.id!r}, not "
                    f"{row.id!r}: two writers are recording into one session"
                )
            for sha, data in blobs.items():
                self._blobs.setdefault(sha, data)
            if old is not None and old.input is not None:
                row = row._replace(input=old.input)
            rows[row.seq] = row

    def answer(self, session: str, row: NodeRow) -> NodeRow | None:
        """Record `row`, a question's node completed by its answer, only while the stored
        row of its seq still waits for one (a compare-and-set under the lock): None when
        recorded, else the row as stored (answered already)."""
        with self._lock:
            rows = self._rows.get(session)
            if rows is None or session not in self._leases:
                raise StoreError(
                    f"cannot record the answer {row.id!r} into session {session!r} of "
                    f"{self.url}: nobody holds the session's writer lease"
                )
            old = rows.get(row.seq)
            if old is None or old.id != row.id:
                raise StoreError(
                    f"the answer {row.id!r} was not recorded into session {session!r} of "
                    f"{self.url}: the store holds no question of that id at seq {row.seq}"
                )
            if old.status != "waiting":
                return old
            rows[row.seq] = row if old.input is None else row._replace(input=old.input)
            return None

    def compare_and_set(
        self,
        session: str,
        row: NodeRow,
        expect: Callable[[NodeRow], bool],
        blobs: Mapping[str, bytes] | None = None,
    ) -> NodeRow | None:
        """Record `row` only while the stored row of its seq is one `expect` accepts
        (under the lock): None when recorded, else the row as stored."""
        with self._lock:
            rows = self._rows.get(session)
            if rows is None or session not in self._leases:
                raise StoreError(
                    f"cannot record node {row.id!r} into session {session!r} of {self.url}: "
                    "nobody holds the session's writer lease"
                )
            old = rows.get(row.seq)
            if old is None or old.id != row.id:
                raise StoreError(
                    f"node {row.id!r} was not recorded into session {session!r} of "
                    f"{self.url}: the store holds no such node at seq {row.seq}"
                )
            if not expect(old):
                return old
            for sha, data in (blobs or {}).items():
                self._blobs.setdefault(sha, data)
            rows[row.seq] = row if old.input is None else row._replace(input=old.input)
            return None

    # -- operations (store/_operations.py has the SQL stores' twins) -----------------------
    def commit_operations(
        self,
        session: str,
        operations: Sequence[OperationRow],
        node: NodeRow | None = None,
        blobs: Mapping[str, bytes] | None = None,
    ) -> None:
        """Record `operations` and the tool call `node` that made them, all at once."""
        if node is not None:
            self.write(session, node, blobs or {})
        with self._lock:
            if session not in self._leases:
                raise StoreError(f"cannot record operations of session {session!r}: no lease")
            kept = self._operations.setdefault(session, {})
            for row in operations:
                if row.id not in kept:
                    kept[row.id] = row
                    self._events.setdefault(session, []).append(
                        OperationEvent(row.id, row.created_at, row.state, None)
                    )

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
        """Move operation `id` to `state` if it is in one of `expect` (see SQLOperations)."""
        with self._lock:
            row = self._operations.get(session, {}).get(id)
            if row is None or row.state not in expect:
                return False
            self._operations[session][id] = row._replace(
                state=state,
                result=row.result if result is None else result,
                error=error,
                attempts=row.attempts if attempts is None else attempts,
                updated_at=at,
                heartbeat_at=at,
            )
            if not (state == "running" and tuple(expect) == ("running",) and detail is None):
                self._events.setdefault(session, []).append(OperationEvent(id, at, state, detail))
            return True

    def operations(self, session: str) -> list[OperationRow]:
        with self._lock:
            return list(self._operations.get(session, {}).values())

    def operation_events(self, session: str, id: str | None = None) -> list[OperationEvent]:
        with self._lock:
            events = self._events.get(session, [])
            return [e for e in events if id is None or e.operation == id]

    def rows(self, session: str) -> list[NodeRow]:
        with self._lock:
            rows = self._rows.get(session, {})
            return [rows[seq] for seq in sorted(rows)]

    def blob(self, sha256: str) -> bytes | None:
        with self._lock:
            return self._blobs.get(sha256)

    def acquire(self, session: str, owner: str) -> None:
        """Take `session`'s writer lease for `owner`; SessionLocked while another holds it
        (every writer of a MemoryStore lives in this process, so none expires)."""
        with self._lock:
            if session not in self._sessions:
                raise StoreError(f"no session {session!r} in {self.url}")
            now = time.time()
            holder = self._leases.get(session)
            if holder is not None and holder.owner != owner:
                raise holder.locked(session, self.url, now)
            host = owner.rsplit(":", 2)[0]
            self._leases[session] = Holder(owner, host, os.getpid(), this_process(), now, now)

    def renew(self, session: str, owner: str) -> bool:
        with self._lock:
            holder = self._leases.get(session)
            return holder is not None and holder.owner == owner

    def release(self, session: str, owner: str) -> None:
        with self._lock:
            holder = self._leases.get(session)
            if holder is not None and holder.owner == owner:
                del self._leases[session]

    def holder(self, session: str) -> Holder | None:
        with self._lock:
            return self._leases.get(session)

    def charge_budget(self, name: str, span: str, limits: BudgetLimits) -> BudgetTally | None:
        """Count one request against a shared budget (see store/_budgets.py)."""
        return self._budgets.charge_budget(name, span, limits)

    def spend_budget(self, name: str, span: str, spent: BudgetTally) -> None:
        self._budgets.spend_budget(name, span, spent)

    def budget_tally(self, name: str, span: str) -> BudgetTally:
        return self._budgets.budget_tally(name, span)

    def close(self) -> None:
        """Nothing to release; the data stays until the store is dropped."""

    def __repr__(self) -> str:
        return f"MemoryStore(sessions={len(self._sessions)})"
