"""Operation managers: the `OperationManager` protocol and LocalOperations.

A manager runs operations it is handed and reports what happens to each (running,
heartbeats, done, failed, cancelled, lost); it records nothing itself (tracker.py does,
durably, before it lets work start). LocalOperations runs them on threads of this
process; process.py and ray.py hold the others. Start at OperationManager.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, Protocol, runtime_checkable

from openprogram.operations.operation import (
    Operation,
    OperationCancelled,
    OperationContext,
    OperationKind,
)

__all__ = ["LocalOperations", "OperationManager", "Report", "Reported", "run_executor"]

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
    """Runs operations on a pool of threads of this process (the default manager).

    max_workers: threads running operations at once (default 8). Cancelling a queued
    operation stops it before it starts; a running one sees `context.cancelled` set.
    """

    def __init__(self, max_workers: int = 8) -> None:
        self._pool = ThreadPoolExecutor(max_workers, thread_name_prefix="openprogram-op")
        self._lock = threading.Lock()
        self._live: dict[str, tuple[OperationContext, Future[None]]] = {}
        self._closed = False

    def submit(self, operation: Operation, kind: OperationKind, report: Report) -> None:
        context = OperationContext(operation.id, lambda d: report(operation.id, "heartbeat", d))
        with self._lock:
            if self._closed:
                report(operation.id, "failed", "the operation manager was closed")
                return
            future = self._pool.submit(self._run, operation, kind, context, report)
            self._live[operation.id] = (context, future)

    def _run(
        self, operation: Operation, kind: OperationKind, context: OperationContext, report: Report
    ) -> None:
        try:
            if context.cancelled.is_set():
                report(operation.id, "cancelled", None)
                return
            if not report(operation.id, "running", None):
                return
            what, value = run_executor(operation, kind, context)
            report(operation.id, what, value)
        finally:
            with self._lock:
                self._live.pop(operation.id, None)

    def cancel(self, id: str) -> bool:
        with self._lock:
            live = self._live.get(id)
        if live is None:
            return False
        live[0].cancelled.set()
        return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            live = list(self._live.values())
        for context, _ in live:
            context.cancelled.set()
        self._pool.shutdown(wait=True, cancel_futures=False)

    def __repr__(self) -> str:
        return f"LocalOperations(live={len(self._live)})"
