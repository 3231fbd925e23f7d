"""Operation managers: the `OperationManager` protocol and LocalOperations.

A manager runs operations it is handed and reports what happens to each (running,
heartbeats, done, failed, cancelled, lost); it records nothing itself (tracker.py does,
durably, before it lets work start). LocalOperations runs them on threads of this
process; process.py and ray.py hold the others. Start at OperationManager.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import Any, Literal, Protocol, runtime_checkable

from openprogram.errors import UsageError
from openprogram.operations.operation import (
    Operation,
    OperationCancelled,
    OperationContext,
    OperationKind,
)

__all__ = ["LocalOperations", "OperationManager", "Report", "Reported", "run_executor"]

log = logging.getLogger("openprogram.operations")

Reported = Literal["running", "heartbeat", "done", "failed", "cancelled", "lost"]
"""What a manager reports: running (the executor is about to start: the report returns
once that is recorded), heartbeat (alive; `value` is a detail or None), done (`value` is
the result), failed (`value` is the error text), cancelled, lost (the process running
it died: whether it ran is not known; the tracker applies the kind's effect rule)."""

Report = Callable[[str, Reported, Any], bool]
"""`report(operation_id, what, value)`; for "running", False means: do not start it (it
was cancelled meanwhile, or another process took it)."""


@runtime_checkable
class OperationManager(Protocol):
    """Runs operations outside the agent's loop. Replaceable: `Runtime(operations=...)`.

    submit() returns at once; the manager calls `report` from its own threads, first
    "running" (and starts the work only if that returns True), then heartbeats, then
    exactly one of done, failed, cancelled or lost.
    """

    def submit(self, operation: Operation, kind: OperationKind, report: Report) -> None:
        """Start `operation` (whose registered kind is `kind`) when a worker is free."""
        ...

    def cancel(self, id: str) -> bool:
        """Ask operation `id` to stop: whether this manager knew it (still running)."""
        ...

    def close(self) -> None:
        """Stop taking work; cancel what runs; release threads and processes."""
        ...


def run_executor(
    operation: Operation | dict[str, Any], kind: OperationKind, context: OperationContext
) -> tuple[Reported, Any]:
    """Run the executor: ("done", result), ("cancelled", None) or ("failed", error text)."""
    args = operation.args if isinstance(operation, Operation) else operation["args"]
    try:
        result = kind.executor(dict(args), context)
    except OperationCancelled:
        return "cancelled", None
    except Exception as exc:
        return "failed", f"{type(exc).__name__}: {exc}"
    if context.cancelled.is_set():
        return "cancelled", None
    return "done", result


class LocalOperations:
    """Runs operations on threads of this process (the default manager).

    max_workers: operations running at once (default 8); the rest wait in a queue.
    Cancelling a queued operation stops it before it starts; a running one sees
    `context.cancelled` set. Workers are daemon threads: an operation that never ends
    does not keep the process from exiting.
    """

    def __init__(self, max_workers: int = 8) -> None:
        if not isinstance(max_workers, int) or max_workers < 1:
            raise UsageError(f"max_workers={max_workers!r} must be an int >= 1")
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[_Queued | None] = queue.SimpleQueue()
        self._live: dict[str, OperationContext] = {}
        self._workers = 0
        self._idle = 0
        self._closed = False

    def submit(self, operation: Operation, kind: OperationKind, report: Report) -> None:
        def heartbeat(detail: str | None) -> None:
            report(operation.id, "heartbeat", detail)

        context = OperationContext(operation.id, heartbeat)
        with self._lock:
            closed = self._closed
            if not closed:
                self._live[operation.id] = context
                self._queue.put((operation, kind, context, report))
                if self._idle > 0:
                    self._idle -= 1
                elif self._workers < self.max_workers:
                    self._workers += 1
                    threading.Thread(target=self._work, daemon=True, name="openprogram-op").start()
        if closed:
            report(operation.id, "failed", "the operation manager was closed")

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            operation, kind, context, report = item
            try:
                if context.cancelled.is_set():
                    report(operation.id, "cancelled", None)
                elif report(operation.id, "running", None):
                    what, value = run_executor(operation, kind, context)
                    report(operation.id, what, value)
            except Exception:  # its record failed (the store): logged; the worker goes on
                log.exception("openprogram: operation %s could not be recorded", operation.id)
            finally:
                with self._lock:
                    self._live.pop(operation.id, None)
                    self._idle += 1

    def cancel(self, id: str) -> bool:
        with self._lock:
            context = self._live.get(id)
        if context is None:
            return False
        context.cancelled.set()
        return True

    def close(self) -> None:
        """Cancel what is queued or running and let the workers go (without waiting)."""
        with self._lock:
            self._closed = True
            live = list(self._live.values())
            workers = self._workers
        for context in live:
            context.cancelled.set()
        for _ in range(workers):
            self._queue.put(None)

    def __repr__(self) -> str:
        return f"LocalOperations(max_workers={self.max_workers}, live={len(self._live)})"


_Queued = tuple[Operation, OperationKind, OperationContext, Report]
