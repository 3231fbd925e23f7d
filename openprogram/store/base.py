"""The `Store` protocol: what a session store must do, whatever holds the bytes.

A store keeps sessions (SessionInfo), their node rows (upserts, each `write` its own
transaction; a store may add `write_batch` to take several in one, which the Recorder
then uses for group commit; `answer(session, row)`, a compare-and-set that records a
question's answer only while it still waits, and `compare_and_set(session, row, expect)`,
which records a row only while the stored one is as `expect` accepts (how a call is
settled): every backend here has both), a blob table
of images keyed by sha256 and each session's writer lease (one writer per session,
lease.py). It knows nothing of Nodes or resuming: the Recorder encodes rows with
store/format.py. Backends: memory.py, sqlite.py, postgres.py.
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
        (status, output, data). Raises StoreError when the seq belongs to another node
        or this store holds no writer lease of the session, SessionLocked when the lease
        it held was taken over."""
        ...

    def acquire(self, session: str, owner: str) -> None:
        """Take the session's writer lease for `owner` ("host:pid:random"), atomically;
        raises SessionLocked naming the holder while another live writer holds it. An
        expired lease (lease.Holder.expired) is taken over."""
        ...

    def renew(self, session: str, owner: str) -> bool:
        """Refresh `owner`'s lease heartbeat; False when it no longer holds the lease."""
        ...

    def release(self, session: str, owner: str) -> None:
        """Give `owner`'s lease up; nothing when it does not hold it."""
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
