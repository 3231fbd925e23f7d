"""Calling a scorer (or a judge) with a deadline: its call runs on a worker thread, and
a call that outlasts its deadline is given up (TimeoutError) while the eval goes on.

Owns the pool of worker threads (a thread per call costs ~0.5 ms on a busy machine; a
handoff to an idle worker ~40 us). Python cannot stop a thread: a call given up keeps
its worker until it returns, and is then forgotten. Start at call_within().
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["call_within"]

IDLE_S = 30.0
"""Seconds an idle worker waits for its next call before it ends."""

_idle: list[_Worker] = []
_lock = threading.Lock()


class _Worker:
    """One daemon thread running the calls handed to it, one at a time."""

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
                continue  # taken just now: its call is on its way
            job()
            with _lock:
                _idle.append(self)


def call_within(seconds: float | None, fn: Callable[..., Any], *arguments: Any) -> Any:
    """`fn(*arguments)` in a copy of the caller's context, on a worker thread; its result,
    or what it raised. Raises TimeoutError when it has not returned after `seconds`
    (None: wait as long as it takes, on the caller's own thread)."""
    if seconds is None:
        return fn(*arguments)
    with _lock:
        worker = _idle.pop() if _idle else None
    if worker is None:
        worker = _Worker()
    context = contextvars.copy_context()
    finished = threading.Event()
    outcome: dict[str, Any] = {}

    def job() -> None:
        try:
            outcome["value"] = context.run(fn, *arguments)
        except BaseException as exc:  # handed to the caller, never lost in the worker
            outcome["error"] = exc
        finally:
            finished.set()

    worker.jobs.put(job)
    if not finished.wait(seconds):
        raise TimeoutError(f"it took over {seconds:g} s and was given up (it may still be running)")
    if "error" in outcome:
        error = outcome["error"]
        raise error.with_traceback(error.__traceback__)
    return outcome["value"]
