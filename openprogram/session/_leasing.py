"""The writer lease of a session: one writer records a session at a time.

Owns the Session's side of the store's writer lease (store/lease.py keeps it alive):
taking it when a session is entered or records an input (SessionLocked when another
writer has it, or recorded since this Session read the session), adopting one taken
before the session was read, holding it for a block, and giving it up. Session
(session.py) inherits it. Start at Leasing._claim().
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from openprogram.errors import SessionLocked, StoreError
from openprogram.store.base import Store
from openprogram.store.lease import heartbeat
from openprogram.store.recorder import Recorder

__all__ = ["Leasing"]

log = logging.getLogger("openprogram")


class Leasing:
    """The writer-lease half of Session: it needs the Session's `store`, `id`, `_lock`,
    `_recorder`, and the lease's state (`_owner`, `_holding`, `_adopted`), which
    Session._setup makes."""

    store: Store | None
    id: str
    _lock: threading.Lock
    _recorder: Recorder | None
    _owner: str
    _holding: bool
    _adopted: bool

    @property
    def holding(self) -> bool:
        """Whether this Session holds its session's writer lease (it records; another
        Session object of the same session only reads)."""
        return self._holding

    @contextmanager
    def lease(self) -> Iterator[None]:
        """Hold the session's writer lease for the block: taken unless this Session holds
        it already (SessionLocked when another writer has it), given up after unless it
        was held before (settling or answering between runs: the run that resumes takes
        it next)."""
        held = self._holding
        self._claim()
        try:
            yield
        finally:
            if not held:
                self._release()

    @property
    def lock(self) -> threading.Lock:
        """The lock that orders this session's changes between threads of this process
        (the writer lease, inputs, answers and settlements)."""
        return self._lock

    @property
    def writer(self) -> str:
        """This Session's writer id ("host:pid:random"), the owner its lease is held as."""
        return self._owner

    def _claim(self) -> None:
        """Take the session's writer lease (once); SessionLocked when another writer has it."""
        with self._lock:
            if self.store is None or self._holding:
                return
            if self._adopted:  # held since before it was read: nothing can be newer
                self._adopted = False
                self._holding = True
                heartbeat().keep(self.store, self.id, self._owner)
                return
            self.store.acquire(self.id, self._owner)
            stored = self.store.session(self.id)
            known = self._recorder.rows if self._recorder is not None else set()
            if stored is not None and stored.nodes != len(known):
                self.store.release(self.id, self._owner)
                raise SessionLocked(
                    f"session {self.id!r} in {self.store.url} was recorded into by another "
                    f"writer after this Session loaded it (the store holds {stored.nodes} of "
                    f"its nodes, this Session knows {len(known)}): recording on would mix the "
                    f"two. Reopen it with Session.open(store, {self.id!r}) to go on from what "
                    "is stored, or fork it."
                )
            self._holding = True
            heartbeat().keep(self.store, self.id, self._owner)

    def _release(self) -> None:
        with self._lock:
            if self.store is None or not self._holding:
                return
            self._holding = False
            heartbeat().drop(self.store, self.id)
            try:
                self.store.release(self.id, self._owner)
            except StoreError as exc:  # it expires on its own once this process ends
                log.warning(
                    "openprogram: could not release the writer lease of %s: %s", self.id, exc
                )
