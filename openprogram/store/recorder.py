"""Recorder: the DAG listener that makes a session durable, by group commit.

Records each node when it is created and when it completes. A store with `write_batch`
(SQLite, PostgreSQL) gets the records in batches, one transaction each, at the durable
points of docs/sessions.md#durability (an llm exchange, an input, a call of 1 ms or
more, the start of a call with a declared effect, a full or 0.2 s old batch, closing,
exit). A batch is written outside the lock,
one commit at a time: records go on waiting in the next batch meanwhile, and every
writer that reaches a durable point during a commit shares the next one (group commit
across threads); each returns once a commit holding its record is done. A store that
keeps a journal (SQLite files: store/journal.py) gets every waiting record appended to
it first, so a killed process loses none: two files per writer, the batch being written
in one, the next batch's records in the other; without one (PostgreSQL), a call that
completes before its batch is committed is encoded once. Other stores get each record
at once. A failing store is logged, never raised.
"""

from __future__ import annotations

import atexit
import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from openprogram.core._secrets import scrub_exception, scrub_jsons, scrub_name
from openprogram.core.dag import ContextDAG, Node
from openprogram.store.base import Store
from openprogram.store.format import NodeRow, ReadsBase, encode_node, reads_overlap

__all__ = ["BATCH_AGE_S", "BATCH_ROWS", "SLOW_CALL_S", "Recorder"]

log = logging.getLogger("openprogram.store")

SLOW_CALL_S = 0.001
"""A call that ran this long (seconds) or longer is committed when it completes: redoing
it after a crash would cost more than its commit (tens of microseconds) costs now."""
BATCH_ROWS = 256
"""A batch of this many rows is committed at once."""
BATCH_BYTES = 8 << 20
"""A batch holding this many bytes of new images is committed at once."""
BATCH_AGE_S = 0.2
"""A batch is committed this long (seconds) after its first row, by a background thread."""


class Recorder:
    """Append to `dag.listeners`: records every "created"/"completed" event of `dag`
    into session `session` of `store`. `failures` counts node records that could not be
    stored; `rows` holds the seqs of the session's rows known to be stored (`stored_rows`
    at the start). Rows waiting in a batch are in neither until it is committed."""

    def __init__(
        self,
        store: Store,
        session: str,
        dag: ContextDAG,
        stored_blobs: Iterable[str] = (),
        stored_rows: Iterable[int] = (),
    ) -> None:
        self.store = store
        self.session = session
        self.dag = dag
        self.failures = 0
        self._journal_failures = 0
        self.rows: set[int] = set(stored_rows)
        self._sent: set[str] = set(stored_blobs)
        self._inputs: dict[str, tuple[str, list[str]]] = {}
        self._reads: dict[str, tuple[str, Sequence[str]]] = {}  # function -> newest llm reads
        write_batch = getattr(store, "write_batch", None)
        self._write_batch = write_batch if callable(write_batch) else None
        self._write_start = getattr(store, "write_start", None)  # an effect call's start
        journal = getattr(store, "journal", None)
        self._open_journal = journal if callable(journal) and self._write_batch else None
        self._journal: Any = None  # a journal.Journal once a record waits, or False
        self._spare: Any = None  # the other Journal: the batch being written, then empty
        self._lock = threading.RLock()  # the batch
        self._commit_lock = threading.Lock()  # one commit at a time, batches in order
        self._slot: list[bool | None] = [None]  # the batch's outcome, once committed
        self._flying: list[bool | None] | None = None  # the slot of the batch being written
        # seq -> the newest row and its images, or a running call's node not yet encoded
        self._batch: dict[int, tuple[NodeRow, list[str]] | Node] = {}
        self._fresh = 0  # rows of the batch whose node the store does not hold yet
        self._began: dict[int, float] = {}  # seq -> when its effect start was committed
        self._blobs: dict[str, bytes] = {}  # images of the batch not yet in the store
        self._blob_bytes = 0
        self._since: float | None = None  # time.monotonic() of the batch's first row
        self._scheduled = False

    @property
    def sent(self) -> set[str]:
        """Hashes of the images this recorder knows to be in the store."""
        return self._sent

    def __call__(self, event: str, node: Node) -> None:
        created = event == "created"
        if (
            created
            and node.kind == "code"
            and self._write_batch is not None
            and self._open_journal is None
        ):
            with self._lock:  # encoded when committed, unless it completes first
                if node.seq not in self._batch:
                    self._fresh += 1  # a created node: not stored yet
                self._batch[node.seq] = node
                # a call with a declared effect (effects.py) is committed before it runs
                slot = self._slot if "effect" in node.meta else self._wait()
            if slot is not None:
                self._sync(slot)
            return
        try:
            row, refs = self._encode(node, created=created)
        except Exception as exc:
            self._failed(node.id, node.name, node.seq, exc)
            return
        if self._write_batch is None:
            stored = self._write_one(row, refs, self._new_blobs(refs, {}))
        elif created and not refs and "effect" in node.meta and self._start_alone(row):
            return
        else:
            slot = None
            with self._lock:
                if row.seq not in self._batch and row.seq not in self.rows:
                    self._fresh += 1
                self._batch[row.seq] = (row, refs)
                new = self._new_blobs(refs, self._blobs)
                for sha, image in new.items():
                    self._blobs[sha] = image
                    self._blob_bytes += len(image)
                stored = False
                if (
                    node.kind != "code"
                    or self._ran(node) >= SLOW_CALL_S
                    or len(self._batch) >= BATCH_ROWS
                    or self._blob_bytes >= BATCH_BYTES
                    or ("effect" in node.meta and (created or self._open_journal is None))
                    or not self._journaled(row, with_input=created, images=bool(new))
                ):
                    slot = self._slot  # committed below, outside the lock
                else:
                    slot = self._wait()
            if slot is not None:
                stored = self._sync(slot) is True
        if stored and node.kind == "llm" and node.status == "completed" and node.reads:
            self._reads[node.name] = (node.id, node.reads)  # a stored node's reads stay

    def _start_alone(self, row: NodeRow) -> bool:
        """Commit the start of a call with a declared effect on its own (one statement,
        its own transaction: no BEGIN/COMMIT round trips, no other row) when every
        record waiting in the batch updates a row the store holds already: the store
        then still holds every node created before this one, and the waiting updates
        stay in the journal. Whether it was committed (else the caller commits it with
        the batch, as any durable point, and reports a failure there)."""
        with self._commit_lock:  # no batch is being written meanwhile
            # a node created before this one is not stored yet (only a commit, which
            # the commit lock keeps out, lowers the count: it needs no lock to be read)
            if self._fresh:
                return False
            try:
                lean = self._write_start
                if lean is not None:
                    if not lean(self.session, row):
                        return False
                else:
                    assert self._write_batch is not None
                    self._write_batch(self.session, (row,), {})
            except Exception:
                return False
            with self._lock:
                self.rows.add(row.seq)
                self._began[row.seq] = time.time()  # its body runs from here
        return True

    def _ran(self, node: Node) -> float:
        """Seconds `node` ran: from its start to its end, less the commit of an effect
        call's start (the work a crash would redo is its body's)."""
        began = self._began.pop(node.seq, node.started_at) if self._began else node.started_at
        return (node.ended_at or began) - began

    # -- the journal ---------------------------------------------------------------------
    def _journaled(self, row: NodeRow, *, with_input: bool, images: bool) -> bool:
        """Append a waiting record to the journal (the caller holds the lock): True when
        it is there or the store keeps none, False when it must be committed now (it
        brings new images, which the journal does not hold, or the journal failed).
        Without `with_input`, its input is left out: the call's start holds it (every
        code call's start is journaled or committed before it completes)."""
        if self._open_journal is None:
            return True
        if images:
            return False
        journal = self._journal
        if journal is None:
            try:
                journal = self._journal = self._open_journal(self.session)
            except OSError as exc:
                log.warning(
                    "openprogram: no journal for session %s beside %s (%s): every record "
                    "is committed at once instead, which is slower",
                    self.session, getattr(self.store, "url", self.store), exc,
                )  # fmt: skip
                journal = self._journal = False
            if journal is None:  # none needed: in memory, read-only, no lease (yet)
                return True
        if journal is False:
            return False
        try:
            if journal.append(row, with_input=with_input) is False:  # too big to journal
                return False
        except OSError as exc:
            self._journal_failed("append to", journal.path, exc)
            return False
        return True

    def _journal_failed(self, action: str, path: Any, exc: OSError) -> None:
        """Log a failed journal write on the 1st, 2nd, 4th, 8th... (a full disk fails
        every one of them; the record is committed at once instead)."""
        self._journal_failures += 1
        if _logged(self._journal_failures):
            log.warning(
                "openprogram: could not %s %s (%d journal writes failed so far; each of "
                "their records is committed at once instead): %s",
                action, path, self._journal_failures, exc,
            )  # fmt: skip

    def _wait(self) -> list[bool | None] | None:
        """Let the batch wait (the caller holds the lock): committed when full, else
        scheduled BATCH_AGE_S after its first row. Returns the slot to _sync() once the
        lock is let go when the full batch is to be committed outside it."""
        if len(self._batch) >= BATCH_ROWS:
            return self._slot
        if self._since is None:
            self._since = time.monotonic()
            if not self._scheduled:
                self._scheduled = True
                _flusher().schedule(self, self._since + BATCH_AGE_S)
        return None

    def flush(self) -> bool:
        """Commit the waiting rows now; False when any could not be stored (each one is
        counted in `failures` and logged)."""
        if self._write_batch is None:  # every record was written at once
            return True
        with self._lock:  # the batch being written, if any, is waited for too
            slots = [self._slot] if self._flying is None else [self._flying, self._slot]
        stored = self._sync(slots[-1])
        return stored is True and all(slot[0] is True for slot in slots[:-1])

    def answer(self, node: Node) -> NodeRow | None:
        """Record `node`, a question's node as its answer completes it, only while the
        store still holds it waiting: a compare-and-set, so of two answers given through
        two Sessions (or processes) only the first lands. None when recorded, else the
        row the store holds. Commits what waits first; raises the store's errors (the
        caller holds the writer lease). A store without `answer` is read, then written,
        under the lease; a fork's inherited question is written as the fork's own row."""
        self.flush()
        row, _ = self._encode(node, created=False)
        compare_and_set = getattr(self.store, "answer", None)
        if row.seq not in self.rows:  # a fork's question, inherited: its first own row
            self.store.write(self.session, row, {})
            self.rows.add(row.seq)
            return None
        if callable(compare_and_set):
            return compare_and_set(self.session, row)  # type: ignore[no-any-return]
        stored = next((r for r in self.store.rows(self.session) if r.seq == row.seq), None)
        if stored is not None and stored.status != "waiting":
            return stored
        self.store.write(self.session, row, {})
        return None

    def commit_with(self, node: Node, write: Callable[[NodeRow, dict[str, bytes]], None]) -> None:
        """Record `node` as created through `write(row, images)`, the caller's own
        transaction (operations commit with their tool call's node so), after the
        waiting rows are committed: nothing older of the node is written after it. The
        row and its images count as stored once `write` returns; it raises the store's
        errors."""
        self.flush()
        row, refs = self._encode(node, created=True)
        blobs = self._new_blobs(refs, {})
        write(row, blobs)
        self.rows.add(node.seq)
        self._sent.update(blobs)

    def compare_and_set(self, node: Node, expect: Callable[[NodeRow], bool]) -> NodeRow | None:
        """Record `node` as it is now only while the store holds its row as `expect`
        accepts (effects.py settles calls so): None when recorded, else the row the
        store holds. Commits what waits first; raises the store's errors (the caller
        holds the writer lease). A store without `compare_and_set` is read, then written,
        under the lease."""
        self.flush()
        row, refs = self._encode(node, created=False)
        blobs = self._new_blobs(refs, {})
        swap = getattr(self.store, "compare_and_set", None)
        if callable(swap):
            stored: NodeRow | None = swap(self.session, row, expect, blobs)
        else:
            stored = next((r for r in self.store.rows(self.session) if r.seq == row.seq), None)
            if stored is None or expect(stored):
                self.store.write(self.session, row, blobs)
                stored = None
        if stored is None:
            self.rows.add(row.seq)
            self._sent.update(blobs)
        return stored

    def detach(self) -> None:
        """In a fork child: forget the parent's waiting rows and journal, so flush() and
        close() write nothing (the caller stops sending events). Never writes."""
        self._lock = threading.RLock()  # another thread may have held it at the fork
        self._commit_lock = threading.Lock()
        self._batch, self._blobs, self._blob_bytes, self._since = {}, {}, 0, None
        self._fresh, self._began = 0, {}
        self._slot, self._flying = [None], None
        self._journal = self._spare = self._open_journal = None
        self._scheduled = False

    def close(self) -> None:
        """Commit the waiting rows and remove the journal (the session stops writing;
        a later record opens a new one)."""
        if self._write_batch is None:
            return
        with self._commit_lock:
            while True:  # until no record waits (another thread may still be recording)
                self._commit_held()
                with self._lock:
                    if not self._batch:
                        for journal in (self._journal, self._spare):
                            if journal:
                                journal.close()
                        self._journal = self._spare = None
                        return

    # -- encoding ------------------------------------------------------------------------
    def _encode(self, node: Node, *, created: bool) -> tuple[NodeRow, list[str]]:
        refs: list[str] = []
        cached = None if created else self._inputs.pop(node.id, None)
        reads_base = self._reads_base(node)
        if cached is not None:
            refs.extend(cached[1])
            row = encode_node(node, refs, cached[0], reads_base)
        else:
            row = encode_node(node, refs, reads_base=reads_base)
            if created and node.status == "running" and row.input is not None:
                self._inputs[node.id] = (row.input, list(refs))
        return _scrubbed(row), refs

    def _new_blobs(self, refs: list[str], waiting: Mapping[str, bytes]) -> dict[str, bytes]:
        """PNG bytes of the images in `refs` neither in the store nor in `waiting`."""
        blobs: dict[str, bytes] = {}
        for sha in refs:
            if sha in self._sent or sha in blobs or sha in waiting:
                continue
            image = self.dag.blobs.get(sha)
            if image is not None:
                blobs[sha] = image.png()
        return blobs

    def _reads_base(self, node: Node) -> ReadsBase | None:
        """Where `node`'s reads can be stored as a slice of an earlier, recorded node's."""
        if node.kind != "llm" or not node.reads:
            return None
        base = self._reads.get(node.name)
        if base is None or base[0] == node.id:
            return None
        overlap = reads_overlap(base[1], node.reads)
        return None if overlap is None else (base[0], *overlap)

    # -- writing -------------------------------------------------------------------------
    def _sync(self, slot: list[bool | None]) -> bool | None:
        """Wait until the batch whose outcome `slot` holds is committed, committing it
        (with every record that waits by then) unless another thread has; the caller
        does not hold the lock. Its outcome: True when every row was stored."""
        with self._commit_lock:
            if slot[0] is None:  # no commit covered it yet: it is the waiting batch
                self._commit_held()
        return True if slot[0] is None else slot[0]  # None: nothing was waiting

    def _commit_held(self) -> None:
        """Write the waiting batch in one transaction (the caller holds the commit lock,
        not the lock) and set its slot (an empty batch keeps its slot, for the records
        that will wait in it). When that fails, each row is tried on its own,
        so one bad row loses only itself. Records made meanwhile go to the other
        journal; this batch's is emptied once it is stored (or counted as failed)."""
        with self._lock:  # batches swap only here
            slot = self._slot
            if not self._batch:
                return
            batch, blobs, self._flying = self._batch, self._blobs, slot
            self._batch, self._blobs, self._blob_bytes, self._since = {}, {}, 0, None
            self._fresh = 0
            self._slot = [None]
            flying = self._journal
            if flying:
                self._journal, self._spare = self._spare, flying
            entries, encoded = self._encoded(batch.values(), blobs)  # running calls
        try:
            slot[0] = self._write(entries, blobs) and encoded
        finally:
            if slot[0] is None:  # interrupted (KeyboardInterrupt): not known stored
                slot[0] = False
            self._flying = None
            if flying:
                try:
                    flying.clear()
                except OSError as exc:  # its records are stored: the file must not stay
                    self._journal_failed("empty", flying.path, exc)
                    flying.close()
                    with self._lock:
                        if self._spare is flying:
                            self._spare = None

    def _write(self, entries: list[tuple[NodeRow, list[str]]], blobs: dict[str, bytes]) -> bool:
        assert self._write_batch is not None
        try:
            if entries:
                self._write_batch(self.session, [row for row, _ in entries], blobs)
        except Exception as exc:
            if len(entries) == 1:
                row = entries[0][0]
                self._failed(row.id, row.name, row.seq, exc)
                return False
        else:
            with self._lock:
                self.rows.update(row.seq for row, _ in entries)
                self._sent.update(blobs)
            return True
        written = [  # outside the except block: each failure is reported as its own
            self._write_one(row, refs, {sha: blobs[sha] for sha in refs if sha in blobs})
            for row, refs in entries
        ]
        return all(written)

    def _encoded(
        self, items: Iterable[tuple[NodeRow, list[str]] | Node], blobs: dict[str, bytes]
    ) -> tuple[list[tuple[NodeRow, list[str]]], bool]:
        """The batch's rows, running calls encoded as they are now (their new images
        added to `blobs`), and whether every one could be encoded."""
        entries: list[tuple[NodeRow, list[str]]] = []
        encoded = True
        for item in items:
            if not isinstance(item, Node):
                entries.append(item)
                continue
            try:
                row, refs = self._encode(item, created=True)
            except Exception as exc:
                self._failed(item.id, item.name, item.seq, exc)
                encoded = False
                continue
            blobs.update(self._new_blobs(refs, blobs))
            entries.append((row, refs))
        return entries, encoded

    def _write_one(self, row: NodeRow, refs: list[str], blobs: dict[str, bytes]) -> bool:
        blobs = {sha: image for sha, image in blobs.items() if sha not in self._sent}
        try:
            self.store.write(self.session, row, blobs)
        except Exception as exc:
            self._failed(row.id, row.name, row.seq, exc)
            return False
        with self._lock:
            self.rows.add(row.seq)
            self._sent.update(blobs)
        return True

    def _failed(self, id: str, name: str, seq: int, exc: Exception) -> None:
        self.failures += 1
        if _logged(self.failures):
            log.error(
                "openprogram: could not record node %s (%s #%s) of session %s in %s "
                "(%d failed writes so far): %s",
                id, name, seq, self.session, getattr(self.store, "url", self.store),
                self.failures, scrub_exception(exc), exc_info=self.failures == 1,
            )  # fmt: skip

    def flush_if_due(self, now: float) -> float | None:
        """For the flusher: commit the batch when it is BATCH_AGE_S old (`now`: as
        time.monotonic()); the time its newer batch will be, or None when nothing waits
        (then it is no longer scheduled)."""
        with self._lock:
            due = self._since is not None and now - self._since >= BATCH_AGE_S
            slot = self._slot if due else None
        if slot is not None:
            self._sync(slot)
        with self._lock:
            if self._since is None:
                self._scheduled = False
                return None
            return self._since + BATCH_AGE_S


def _logged(count: int) -> bool:
    """Whether the `count`th failure of a kind is logged: the 1st, 2nd, 4th, 8th...,
    so a store that fails every write (a full disk) does not flood the log."""
    return count & (count - 1) == 0


def _scrubbed(row: NodeRow) -> NodeRow:
    """The row with secret values (keys, tokens) masked in its JSON columns and its name
    (an MCP server names its own tools)."""
    columns = (row.input, row.output, row.data)
    values = scrub_jsons(columns, refresh=False)
    name = scrub_name(row.name)
    if values is columns and name is row.name:
        return row
    return row._replace(input=values[0], output=values[1], data=values[2], name=name)


class _Flusher(threading.Thread):
    """Commits each scheduled Recorder's batch BATCH_AGE_S after its first row, so a
    program that stops recording (waiting for a person, say) has nothing waiting long.
    At interpreter exit every batch is committed (atexit; a killed process cannot)."""

    def __init__(self) -> None:
        super().__init__(name="openprogram-store-flush", daemon=True)
        self._condition = threading.Condition()
        self._due: dict[Recorder, float] = {}
        self._waking = math.inf  # when the thread wakes next (time.monotonic())

    def schedule(self, recorder: Recorder, at: float) -> None:
        """Look at `recorder` at time.monotonic() `at` (and after, while it has rows)."""
        with self._condition:
            self._due[recorder] = at
            if self.ident is None:
                self.start()
            elif at < self._waking:
                self._condition.notify()

    def run(self) -> None:
        while True:
            with self._condition:
                now = time.monotonic()
                first = min(self._due.values(), default=math.inf)
                if first > now:
                    self._waking = first
                    self._condition.wait(None if first == math.inf else first - now)
                    self._waking = math.inf
                    continue
                ready = [recorder for recorder, at in self._due.items() if at <= now]
                for recorder in ready:
                    del self._due[recorder]
            for recorder in ready:
                later = recorder.flush_if_due(now)
                if later is not None:
                    with self._condition:
                        self._due[recorder] = later

    def forget_in_fork_child(self) -> None:
        """In a fork child, where its thread is gone: nothing is scheduled, and its
        condition (a parent's thread may have held it) is a new one."""
        self._condition = threading.Condition()
        self._due = {}

    def flush_all(self) -> None:
        """Commit every scheduled batch now (at exit)."""
        with self._condition:
            recorders = list(self._due)
        for recorder in recorders:
            recorder.flush()


_the_flusher: _Flusher | None = None
_flusher_lock = threading.Lock()


def _forget_in_child() -> None:
    """In a fork child: the parent's flusher (its thread is gone) commits nothing here,
    at exit either; a recorder made in the child starts a flusher of its own."""
    global _the_flusher, _flusher_lock
    if _the_flusher is not None:
        _the_flusher.forget_in_fork_child()
    _the_flusher, _flusher_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _flusher() -> _Flusher:
    """The process's flusher thread (started when a batch is first scheduled)."""
    global _the_flusher
    with _flusher_lock:
        if _the_flusher is None or (_the_flusher.ident is not None and not _the_flusher.is_alive()):
            _the_flusher = _Flusher()
            atexit.register(_the_flusher.flush_all)
        return _the_flusher
