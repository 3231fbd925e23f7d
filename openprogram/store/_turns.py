"""Group commit across the sessions of one SQLite file in one process: `Turns`.

Every SQLiteStore of a file in this process (one per `Session` opened by path: a web
server's requests, a batch's workers) writes its batches through the file's `Turns`. A
writer queues its batch and waits for the file's lock; whoever holds it writes every
batch queued by then in one transaction on its own connection, and the others find
theirs written when their turn comes. A batch that is refused or fails undoes the
shared transaction, and each batch is then written alone, so a refusal or an error is
only ever its own batch's. Without this, 64 sessions of one file on threads made
10 000 commits of a row or two each, and every statement handed the interpreter to
another thread and back. Other processes are waited for in SQLite's busy handler.
"""

from __future__ import annotations

import collections
import copy
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from openprogram.store.format import NodeRow

__all__ = ["Turns", "immediate", "turns"]

Apply = Callable[[sqlite3.Cursor], bool]
"""Writes a batch inside a transaction another batch may share: whether every row of it
was written (False: one was refused)."""
Alone = Callable[[sqlite3.Connection], NodeRow | None]
"""Writes a batch in a transaction of its own: the row refused, None when all were written."""


class _Batch:
    __slots__ = ("alone", "apply", "done", "error", "refused")

    def __init__(self, apply: Apply, alone: Alone) -> None:
        self.apply = apply
        self.alone = alone
        self.done = False
        self.refused: NodeRow | None = None
        self.error: BaseException | None = None


class Turns:
    """The batches waiting to be written into one file, and the lock writers take turns by."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: collections.deque[_Batch] = collections.deque()

    def write(self, connection: sqlite3.Connection, apply: Apply, alone: Alone) -> NodeRow | None:
        """Write one batch (see Apply and Alone), with any others waiting when this
        writer's turn comes, on `connection`: returns what `alone` would, raises what
        it would."""
        batch = _Batch(apply, alone)
        self._waiting.append(batch)
        with self._lock:
            if not batch.done:  # still waiting: this writer writes it and the others
                taken = []
                while self._waiting:
                    taken.append(self._waiting.popleft())
                _write(connection, taken)
        if batch.error is not None:
            raise batch.error
        return batch.refused

    def turn(self) -> threading.Lock:
        """The lock itself, for a write of one statement that shares no transaction: the
        batches that wait meanwhile are written by their own writers after it."""
        return self._lock


def _write(connection: sqlite3.Connection, taken: list[_Batch]) -> None:
    """Write `taken`, together when there are several and all go in, else each alone."""
    try:
        if len(taken) == 1 or not _together(connection, taken):
            for batch in taken:
                try:
                    batch.refused = batch.alone(connection)
                except Exception as exc:  # its writer raises it
                    batch.error = exc
                batch.done = True
    finally:
        for batch in taken:  # interrupted (a KeyboardInterrupt in this thread)
            if not batch.done:
                batch.error = sqlite3.OperationalError("the write was interrupted")
                batch.done = True


def _together(connection: sqlite3.Connection, taken: list[_Batch]) -> bool:
    """One transaction for all of `taken`. False (rolled back) when one of them was
    refused or raised: they are then written alone. When the transaction itself fails
    (the file is locked by another process past its timeout, the disk is full), every
    batch gets that error, its own copy (each writer raises it): none was written."""
    try:
        with immediate(connection), closing(connection.cursor()) as cursor:
            for batch in taken:
                try:
                    written = batch.apply(cursor)
                except Exception:
                    written = False
                if not written:
                    raise _Alone
    except _Alone:
        return False
    except Exception as exc:
        for batch in taken:
            batch.error = copy.copy(exc)
    for batch in taken:
        batch.done = True
    return True


class _Alone(Exception):
    """A batch of a shared transaction was refused or raised: each is written alone."""


@contextmanager
def immediate(connection: sqlite3.Connection) -> Iterator[None]:
    """A transaction that takes the file's write lock at once (BEGIN IMMEDIATE),
    committed when the block ends, rolled back however else it ends."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
        connection.execute("COMMIT")
    finally:
        if connection.in_transaction:
            connection.execute("ROLLBACK")


_files: dict[tuple[Path, str], Turns] = {}
_files_lock = threading.Lock()


def turns(path: Path, synchronous: str) -> Turns:
    """The Turns of file `path` for stores that commit with `synchronous` (a batch is
    never committed with less care than its store asked for)."""
    found = _files.get((path, synchronous))
    if found is None:
        with _files_lock:
            found = _files.setdefault((path, synchronous), Turns())
    return found


def _forget_in_child() -> None:
    """In a fork child: a parent's thread may have held a file's lock at the fork."""
    global _files_lock
    _files.clear()
    _files_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)
