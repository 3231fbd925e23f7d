"""Worker: takes queued runs and runs each inside its session, under the session's lease.

A worker has `concurrency` slots (threads), each claiming the best run due on its queues
and calling it inside `Session.open(store, id, resume=True)`: what a run recorded before
(another worker's, that died) is answered from the record. A watch thread requeues
running runs whose worker is gone (a dead process on this machine at once, elsewhere
once its lease's heartbeat expired) and stops runs asked to cancel or whose lease was
taken over. SIGTERM drains: each run stops at its next call boundary and is handed back
at once. Start at Worker.run().
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import signal
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from openprogram import Session
from openprogram.agentic import _drain
from openprogram.core._secrets import scrub
from openprogram.core.values import to_jsonable
from openprogram.echo import echo, elide
from openprogram.errors import (
    EffectUnknown,
    RunStopped,
    RunWaiting,
    SessionLocked,
    StoreError,
    UsageError,
)
from openprogram.runs.queue import Claimed, RunInfo, RunQueue
from openprogram.store.lease import new_owner, this_process
from openprogram.store.open import open_store

__all__ = ["Worker", "resolve"]

log = logging.getLogger("openprogram.runs")

CANCELLED = "cancelled by request"
LOST = "the session's writer lease was taken over by another worker"


def resolve(name: str) -> Callable[..., Any]:
    """The function "package.module:function" names (attributes may be dotted).
    UsageError when it cannot be imported or is not callable."""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{echo(name)} names no function: write 'package.module:function'")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as exc:
        raise UsageError(
            f"cannot load {echo(name)}: {type(exc).__name__}: {exc}. The worker imports it by "
            "that name: run the worker where the module is importable (its folder on "
            "PYTHONPATH, or --import it)"
        ) from None
    if not callable(target):
        raise UsageError(f"{echo(name)} is a {type(target).__name__}, not a function")
    return target  # type: ignore[no-any-return]


class Worker:
    """Runs the queued runs of `store` (a URL or path) on `queues`, `concurrency` at once.

    poll_s: how long an idle slot waits before looking for a due run again. watch_s:
    how often running runs are checked for a dead worker, a cancel or a lost lease.
    """

    def __init__(
        self,
        store: object,
        *,
        queues: Sequence[str] = ("default",),
        concurrency: int = 1,
        poll_s: float = 0.2,
        watch_s: float = 0.5,
    ) -> None:
        if not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(f"concurrency={echo(concurrency)} must be a whole number >= 1")
        if not queues or not all(isinstance(q, str) and q for q in queues):
            raise UsageError(f"queues={echo(queues)} must name at least one queue")
        self.queue = RunQueue(store)
        self.spec = self.queue.spec
        self.queues = tuple(queues)
        self.concurrency = concurrency
        self.poll_s = poll_s
        self.watch_s = watch_s
        self.process = this_process()
        self.started = 0
        self.finished = 0
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._active: dict[str, tuple[str, Session]] = {}  # run id -> (claimer, session)
        self._ready: deque[Claimed] = deque()  # claimed with others, waiting for a slot
        self._busy = 0  # slots running a run
        self._claiming_lock = threading.Lock()  # one claim at a time: no slot over-claims
        self._limited = False  # some of the queues have a concurrency limit
        self._stranded: dict[str, str] = {}  # run id -> slot: its end not recorded yet

    # -- lifetime ------------------------------------------------------------------------
    def run(self, *, until_idle: bool = False) -> None:
        """Work until stop() (or SIGTERM / SIGINT in the main thread: drain), or, with
        `until_idle`, until no run is queued, running or due on its queues."""
        handlers = self._install() if threading.current_thread() is threading.main_thread() else {}
        self._limited = bool(self.queue.limited_queues(self.queues))
        slots = [
            threading.Thread(target=self._slot, args=(until_idle,), name=f"openprogram-run-{i}")
            for i in range(self.concurrency)
        ]
        watch = threading.Thread(target=self._watch, name="openprogram-run-watch", daemon=True)
        try:
            watch.start()
            for slot in slots:
                slot.start()
            for slot in slots:
                while slot.is_alive():  # a join with a timeout lets signals in
                    slot.join(0.5)
        finally:
            self._stopping.set()
            self._wake.set()
            for signum, previous in handlers.items():
                signal.signal(signum, previous)
            try:
                self._hand_back_ready()
            finally:
                self.queue.close()

    def stop(self) -> None:
        """Drain: take no new run; each running one stops at its next call boundary (an
        `effect="once"` body is let finish) and goes back to its queue at once."""
        if self._stopping.is_set():
            return
        log.info("openprogram: worker draining (%d runs running)", len(self._active))
        self._stopping.set()
        self._wake.set()
        _drain.requested[0] = True  # every session of this process stops at a boundary

    def _install(self) -> dict[int, Any]:
        previous: dict[int, Any] = {}

        def drain(signum: int, frame: Any) -> None:
            if self._stopping.is_set():  # the second: stop now
                signal.signal(signum, previous.get(signum, signal.SIG_DFL))
                signal.raise_signal(signum)
                return
            self.stop()

        for signum in (signal.SIGTERM, signal.SIGINT):
            previous[signum] = signal.signal(signum, drain)
        return previous

    # -- slots ---------------------------------------------------------------------------
    def _slot(self, until_idle: bool) -> None:
        slot = new_owner()
        store, _ = open_store(self.spec)  # the slot's sessions share its connection
        try:
            self._claiming(slot, store, until_idle)
        finally:
            if store is not None:
                store.close()

    def _claiming(self, slot: str, store: Any, until_idle: bool) -> None:
        while not self._stopping.is_set():
            claimed = self._next(slot)
            if claimed is None:
                if until_idle and self._idle():
                    return
                self._wake.wait(self.poll_s)
                self._wake.clear()
                continue
            try:  # (_next counted this slot busy)
                self._execute(claimed, store)
            finally:
                with self._lock:
                    self._busy -= 1

    def _next(self, slot: str) -> Claimed | None:
        """A run for this slot: one claimed with others before, else a new claim of as
        many runs as slots are free (one statement, their leases taken with them)."""
        with self._claiming_lock:
            with self._lock:  # a slot is busy from the moment it is handed a run
                if self._ready:
                    self._busy += 1
                    return self._ready.popleft()
                free = self.concurrency - self._busy
            if self._stopping.is_set():
                return None
            try:
                claimed = self.queue.claim_batch(
                    self.queues, free, slot, self.process, limited=self._limited
                )
            except StoreError as exc:
                log.warning("openprogram: worker could not claim a run: %s", exc)
                return None
            if not claimed:
                return None
            with self._lock:
                self._busy += 1
                self._ready.extend(claimed[1:])
        if len(claimed) > 1:
            self._wake.set()  # the other free slots take them
        return claimed[0]

    def _hand_back_ready(self) -> None:
        """Runs claimed but never started (the worker stops) go back at once."""
        while True:
            with self._lock:
                if not self._ready:
                    return
                claimed = self._ready.popleft()
            try:
                if self.queue.unclaim(claimed):
                    log.info("openprogram: run %s handed back (never started)", claimed.run.id)
            except StoreError as exc:  # its lease expires with this process: taken over
                log.warning("openprogram: could not hand back run %s: %s", claimed.run.id, exc)

    def _idle(self) -> bool:
        """Whether no run of this worker's queues is running or due (not idle when the
        store could not say: the slot looks again after its pause)."""
        try:
            now = self.queue.now()
            runs = self.queue.list_runs()
        except StoreError as exc:
            log.warning("openprogram: worker could not read its queues: %s", exc)
            return False
        return not any(
            r.state == "running" or (r.state == "queued" and r.run_at <= now)
            for r in runs
            if r.queue in self.queues
        )

    def _execute(self, claimed: Claimed, store: Any) -> None:
        """Run the claimed run in its session, under the lease its claim took (else one
        taken now); its row ends as the call did (fenced by the lease)."""
        run, owner = claimed.run, claimed.owner
        slot = run.worker or ""  # the slot that claimed it
        with self._lock:
            self.started += 1
        if owner is not None and claimed.key is not None:
            store.adopt(run.id, owner, claimed.key)
        try:
            function = resolve(run.function)
            args, kwargs = run.call()
            session = Session.open(store, run.id, resume=True, create=True, writer=owner)
        except Exception as exc:
            if owner is not None:  # the claim's lease: given up before anything else
                with contextlib.suppress(StoreError):
                    store.release(run.id, owner)
            if isinstance(exc, UsageError):  # it can never run here: say why on the run
                if self._end_unleased(run, slot, store, exc):
                    with self._lock:
                        self.finished += 1
            else:
                log.warning("openprogram: could not open run %s: %s", run.id, exc)
                self.queue.release(run.id, slot, delay=self.watch_s)
            return
        try:
            with session:
                if owner is None:  # the lease was taken after the claim: still ours?
                    latest = self.queue.get(run.id)
                    if latest is None or latest.state != "running" or latest.worker != slot:
                        return  # ended, or taken over, between the claim and the lease
                with self._lock:
                    self._active[run.id] = (slot, session)
                try:
                    ended = self._call(run, session, function, args, kwargs)
                finally:
                    with self._lock:
                        self._active.pop(run.id, None)
            if ended is not None:  # said once the lease is given up
                state, why = ended
                if why is None:
                    log.info("openprogram: run %s %s", run.id, state)
                else:  # what `runs list` and Run.result() say too
                    log.warning("openprogram: run %s %s: %s", run.id, state, elide(why, 300))
        except SessionLocked as exc:  # a live writer has it: it ends the run (fenced)
            log.info("openprogram: run %s is another writer's: %s", run.id, exc)
            self.queue.release(run.id, slot, delay=self.watch_s)
        except StoreError as exc:
            log.warning("openprogram: run %s: the store failed: %s", run.id, exc)
            self._strand(run.id, slot)
        with self._lock:
            self.finished += 1

    def _strand(self, id: str, slot: str) -> None:
        """A run whose end the store did not take (a lock held too long, a lost
        connection) goes back to its queue, not left `running` under a live worker that
        no longer runs it: its resume replays what it recorded (nothing completed runs
        again) and ends it. When even that fails, the watch tries again."""
        try:
            self.queue.release(id, slot)
        except StoreError as exc:
            log.warning("openprogram: run %s could not go back to its queue yet: %s", id, exc)
            with self._lock:
                self._stranded[id] = slot
            return
        with self._lock:
            self._stranded.pop(id, None)
        self._wake.set()

    def _call(
        self,
        run: RunInfo,
        session: Session,
        function: Callable[..., Any],
        args: list[Any],
        kwargs: dict[str, Any],
    ) -> tuple[str, str | None] | None:
        """Call the run's function; the state its row ended in and its error (None: not
        ended here)."""
        owner = session.writer
        state, result, error = "completed", None, None
        try:
            value = function(*args, **kwargs)
            if inspect.isawaitable(value):
                value = asyncio.run(_awaited(value))
            result = scrub(json.dumps(to_jsonable(value, None), allow_nan=False, default=str))
        except RunWaiting as exc:  # a person must answer: requeue it after
            state, error = "waiting", f"RunWaiting: {exc}"
        except EffectUnknown as exc:  # a person must settle a `once` call
            state, error = "waiting", f"EffectUnknown: {exc}"
        except RunStopped as exc:
            if exc.reason == LOST:
                log.error("openprogram: run %s stopped: %s", run.id, LOST)
                return None
            if exc.reason == _drain.REASON or self._stopping.is_set():
                session.flush()
                if self.queue.hand_back(run.id, owner):
                    log.info("openprogram: run %s handed back (drained)", run.id)
                return None
            state = "cancelled" if exc.reason == CANCELLED else "stopped"
            error = f"{type(exc).__name__}: {exc}"
        except SessionLocked:
            log.error("openprogram: run %s stopped: %s", run.id, LOST)
            return None
        except Exception as exc:
            state, error = "failed", f"{type(exc).__name__}: {exc}"[:4000]
        error = None if error is None else scrub(error)
        if not session.flush():
            log.warning("openprogram: run %s: some records failed (see the log)", run.id)
        if self.queue.finish(run.id, owner, state, result, error):
            return state, error
        log.error("openprogram: run %s ended, but %s: its end is not recorded", run.id, LOST)
        return None

    def _end_unleased(self, run: RunInfo, slot: str, store: Any, exc: Exception) -> bool:
        """A run that cannot start here at all (its function cannot be loaded): failed.
        Whether its end was recorded."""
        try:
            with Session.open(store, run.id, create=True) as session:
                ended = self.queue.finish(
                    run.id, session.writer, "failed", None, f"UsageError: {exc}"
                )
        except Exception as again:
            log.warning("openprogram: run %s cannot run (%s), nor be ended: %s", run.id, exc, again)
            self.queue.release(run.id, slot)
            return False
        if ended:
            log.warning("openprogram: run %s failed: %s", run.id, elide(scrub(str(exc)), 300))
        return bool(ended)

    # -- watching ------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._stopping.wait(self.watch_s):
            try:
                self.watch_once()
            except StoreError as exc:
                log.warning("openprogram: worker could not check running runs: %s", exc)

    def watch_once(self) -> int:
        """Requeue running runs whose worker is gone; stop own runs asked to cancel or
        whose lease was lost. Returns how many runs were requeued."""
        with self._lock:
            stranded = dict(self._stranded)
        for id, slot in stranded.items():
            self._strand(id, slot)
        self._limited = bool(self.queue.limited_queues(self.queues))
        now, running = self.queue.running()
        requeued = 0
        mine = {slot for slot, _ in self._active.values()}
        for found in running:
            if found.worker in mine:
                continue
            # the lease taken since the claim is the claimer's: it tells; an older one is
            # a dead writer's, which the live claimer takes over next
            lease = found.lease
            if lease is not None and lease.acquired_at < found.claimer.acquired_at:
                lease = None
            holder = found.claimer if lease is None else lease
            why = holder.expired(now, _ttl(self.queue))
            if why is None:
                continue  # a live worker runs it, or is about to
            if self.queue.requeue_orphan(found.id, found.worker):
                requeued += 1
                log.warning("openprogram: run %s requeued: %s", found.id, why)
        if requeued:
            self._wake.set()
        with self._lock:
            active = dict(self._active)
        cancelled: set[str] = set()
        for slot in {slot for slot, _ in active.values()}:
            cancelled.update(self.queue.cancelled(slot))
        for id, (_, session) in active.items():
            if id in cancelled:
                session.stop(CANCELLED)
            elif session.store is not None and id in getattr(session.store, "_lost", {}):
                session.stop(LOST)
        return requeued


def _ttl(queue: RunQueue) -> float:
    return float(getattr(queue.store, "lease_ttl_s", 30.0))


async def _awaited(value: Any) -> Any:
    return await value
