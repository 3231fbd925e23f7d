"""The `Store` protocol: what a session store must do, whatever holds the bytes.

A store keeps sessions (SessionInfo), their node rows (one upsert per record, each its
own transaction) and a blob table of images keyed by sha256. It knows nothing of
Nodes or resuming: session.py encodes rows with store/format.py. Backends: memory.py,
sqlite.py, postgres.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

from openprogram.store.format import NodeRow, SessionInfo

__all__ = ["Store"]


@runtime_checkable
class Store(Protocol):
    """Where sessions are recorded. Every method is safe to call from several threads.

    A store works because it has these methods, not because it inherits: any object
    with them can be passed as `Session(store=...)`.
    """

    url: str
    """Where the store lives (a file path, a postgresql:// URL without the password)."""

    def create_session(self, info: SessionInfo) -> None:
        """Add a session; raises UsageError when `info.id` exists already."""
        ...

    def session(self, id: str) -> SessionInfo | None:
        """The session's entry (with its node count), or None when it does not exist."""
        ...

    def list_sessions(self) -> list[SessionInfo]:
        """Every session, oldest first, with node counts."""
        ...

    def write(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> None:
        """Record one node in one transaction: the blobs it references (kept once per
        sha256) and the row, inserted or, when its seq is recorded already, updated
        (status, output, data). Raises StoreError when the seq belongs to another node."""
        ...

    def rows(self, session: str) -> list[NodeRow]:
        """The session's own rows in seq order (a fork's inherited history is not here)."""
        ...

    def blob(self, sha256: str) -> bytes | None:
        """The PNG bytes stored under `sha256`, or None."""
        ...

    def close(self) -> None:
        """Release connections; a later call reconnects."""
        ...
