"""MemoryStore: a Store held in this process, for tests and short-lived sharing.

Keeps the same rows and blobs a durable store would (so a session can be reopened,
resumed and forked within the process) and loses them when the process ends.
`Session()` without a store records no rows at all; pass `MemoryStore()` to get them.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import replace

from openprogram.errors import StoreError, UsageError
from openprogram.store.format import FORMAT_VERSION, NodeRow, SessionInfo

__all__ = ["MemoryStore"]


class MemoryStore:
    """Sessions, rows and blobs in dictionaries, guarded by one lock."""

    format_version = FORMAT_VERSION

    def __init__(self) -> None:
        self.url = f"memory://{id(self):x}"
        self._lock = threading.Lock()
        self._sessions: dict[str, SessionInfo] = {}
        self._rows: dict[str, dict[int, NodeRow]] = {}
        self._blobs: dict[str, bytes] = {}

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

    def rows(self, session: str) -> list[NodeRow]:
        with self._lock:
            rows = self._rows.get(session, {})
            return [rows[seq] for seq in sorted(rows)]

    def blob(self, sha256: str) -> bytes | None:
        with self._lock:
            return self._blobs.get(sha256)

    def close(self) -> None:
        """Nothing to release; the data stays until the store is dropped."""

    def __repr__(self) -> str:
        return f"MemoryStore(sessions={len(self._sessions)})"
