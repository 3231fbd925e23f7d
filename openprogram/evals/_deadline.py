"""Calling scorers (and judges) with deadlines: a run's scorer calls go, in order, to one
worker thread, and a call that outlasts its deadline is given up (TimeoutError) while
the rest go on, on another worker.

Owns the pool of worker threads: a thread per call costs ~0.5 ms on a busy machine, so
idle workers are reused, and a run's calls are handed over at once (one wake-up of the
caller per run, not per scorer). Python cannot stop a thread: a call given up keeps its
worker until it returns, and is then forgotten. Start at call_each_within().
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["Outcome", "call_each_within"]

IDLE_S = 30.0
"""Seconds an idle worker waits for its next batch before it ends."""

Outcome = tuple[bool, Any]
"""(True, the value a call returned) or (False, the exception it raised)."""

_idle: list[_Worker] = []
_lock = threading.Lock()


class _Worker:
    """One daemon thread running the batches handed to it, one at a time."""

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        thread = threading.Thread(target=self._loop, name="openprogram-scorer", daemon=True)
        thread.start()

    def _loop(self) -> None:
        while True:
            try:
                job = self.jobs.get(timeout=IDLE_S)
            except queue.Empty:
                with _lock:
                    if self in _idle:  # nobody took it meanwhile: end
                        _idle.remove(self)
                        return
                continue  # taken just now: its batch is on its way
            job()
            with _lock:
                _idle.append(self)


class _Batch:
    """Calls run in order on one worker; `current` is (index, start) of the running one."""

    def __init__(self, calls: Sequence[Callable[[], Any]]) -> None:
        self.calls = calls
        self.outcomes: list[Outcome | None] = [None] * len(calls)
        self.current = (0, time.monotonic())
        self.given_up = False
        self.finished = threading.Event()
        self.context = contextvars.copy_context()
        self.lock = threading.Lock()

    def run(self) -> None:
        for index, call in enumerate(self.calls):
            with self.lock:
                if self.given_up:
                    break
                self.current = (index, time.monotonic())
            try:
                outcome: Outcome = (True, self.context.run(call))
            except BaseException as exc:  # handed to the caller, never lost in the worker
                outcome = (False, exc)
            with self.lock:
                if self.given_up:
                    break
                self.outcomes[index] = outcome
        self.finished.set()


def call_each_within(calls: Sequence[tuple[float | None, Callable[[], Any]]]) -> list[Outcome]:
    """Each `(seconds, call)` in order, in a copy of the caller's context; the outcome of
    each. A call not done after its `seconds` (None: no limit) has a TimeoutError as its
    outcome; the calls after it run on another worker. With no limit at all the calls
    run on the caller's own thread."""
    if all(seconds is None for seconds, _ in calls):
        return [_inline(call) for _, call in calls]
    outcomes: list[Outcome] = []
    while len(outcomes) < len(calls):
        rest = calls[len(outcomes) :]
        batch = _Batch([call for _, call in rest])
        with _lock:
            worker = _idle.pop() if _idle else None
        (worker or _Worker()).jobs.put(batch.run)
        while True:
            with batch.lock:
                index, started = batch.current
            seconds = rest[index][0]
            wait = None if seconds is None else max(0.0, started + seconds - time.monotonic())
            if batch.finished.wait(wait):
                outcomes.extend(o for o in batch.outcomes if o is not None)
                break
            with batch.lock:
                if batch.current != (index, started) or batch.finished.is_set():
                    continue  # it moved on meanwhile: wait for the call running now
                batch.given_up = True
                done = [o for o in batch.outcomes[:index] if o is not None]
            outcomes.extend(done)
            outcomes.append((False, TimeoutError(
                f"it took over {seconds:g} s and was given up (it may still be running)"
            )))  # fmt: skip
            break
    return outcomes


def _inline(call: Callable[[], Any]) -> Outcome:
    try:
        return True, call()
    except Exception as exc:
        return False, exc
