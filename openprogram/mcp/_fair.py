"""Fair turns for `mcp serve`'s tasks: the operations of many clients run in turn.

Owns `FairOperations`, an operation manager in front of the ones that run the work
(operations.tracker.default_manager: the sandbox for bash, threads for the rest). It
runs at most `running` operations at once, at most half of them one client's, and
hands a free slot to the clients with waiting operations in turn, each client's own in
the order it started them: one client's hundreds of queued tasks never make another's
wait behind them. Start at FairOperations.submit().
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any

from openprogram.operations.manager import Report, Reported
from openprogram.operations.operation import Operation, OperationKind
from openprogram.operations.tracker import default_manager

__all__ = ["FairOperations"]

_ENDS: tuple[Reported, ...] = ("done", "failed", "cancelled", "lost")


class FairOperations:
    """Operations of many clients, at most `running` at once and `running // 2` (at
    least one) of any one client, the free slots handed out in turn. for_client(key)
    is the manager a client's task runs its operations with (a Runtime's operations=)."""

    def __init__(
        self, running: int = 8, managers: Callable[[OperationKind], Any] = default_manager
    ) -> None:
        """`managers(kind)`: the manager that runs an operation of `kind`."""
        self.running = running
        self._managers = managers
        self.per_client = max(1, running // 2)
        self._lock = threading.Lock()
        self._waiting: dict[Hashable, deque[tuple[Operation, OperationKind, Report]]] = {}
        self._turns: deque[Hashable] = deque()  # clients with waiting operations, in turn
        self._busy: dict[Hashable, int] = {}  # client -> its operations running
        self._live: dict[str, tuple[Hashable, Any]] = {}  # operation id -> client, manager

    def for_client(self, client: Hashable) -> _ClientOperations:
        """The manager of `client`'s operations."""
        return _ClientOperations(self, client)

    def submit(
        self, client: Hashable, operation: Operation, kind: OperationKind, report: Report
    ) -> None:
        """Queue `operation` behind `client`'s earlier ones; it starts at its turn."""
        with self._lock:
            queue = self._waiting.get(client)
            if queue is None:
                queue = self._waiting[client] = deque()
                self._turns.append(client)
            queue.append((operation, kind, report))
        self._start_next()

    def _start_next(self) -> None:
        """Start waiting operations while slots are free, one per client in turn."""
        while True:
            with self._lock:
                picked = self._pick()
                if picked is None:
                    return
                client, (operation, kind, report) = picked
                manager = self._managers(kind)
                self._busy[client] = self._busy.get(client, 0) + 1
                self._live[operation.id] = (client, manager)
            try:
                manager.submit(operation, kind, self._reporter(report))
            except Exception as exc:  # the manager cannot take it (Ray missing, say)
                self._end(operation.id)
                report(operation.id, "failed", f"{type(exc).__name__}: {exc}")

    def _pick(self) -> tuple[Hashable, tuple[Operation, OperationKind, Report]] | None:
        """Under the lock: the next client whose turn it is and may run one more, and its
        oldest waiting operation; None when no slot is free or nobody may take one."""
        if len(self._live) >= self.running:
            return None
        for _ in range(len(self._turns)):
            client = self._turns.popleft()
            if self._busy.get(client, 0) >= self.per_client:
                self._turns.append(client)  # its turn comes again when one of its ends
                continue
            queue = self._waiting[client]
            item = queue.popleft()
            if queue:
                self._turns.append(client)  # behind the others: one at a time each
            else:
                del self._waiting[client]
            return client, item
        return None

    def _reporter(self, report: Report) -> Report:
        """`report`, and a slot given back when the operation has ended (or was not
        started: "running" answered False)."""

        def reported(id: str, what: Reported, value: Any) -> bool:
            if what in _ENDS:  # the slot first: a lost one may be submitted again in it
                self._end(id)
                try:
                    return report(id, what, value)
                finally:
                    self._start_next()
            try:
                answer = report(id, what, value)
            except BaseException:  # its record failed: the manager reports nothing more
                if what == "running":
                    self._end(id)
                    self._start_next()
                raise
            if what == "running" and not answer:
                self._end(id)
                self._start_next()
            return answer

        return reported

    def _end(self, id: str) -> None:
        with self._lock:
            found = self._live.pop(id, None)
            if found is not None:
                client = found[0]
                self._busy[client] -= 1
                if not self._busy[client]:
                    del self._busy[client]

    def cancel(self, id: str) -> bool:
        """Stop operation `id`: a waiting one is taken out of its queue and reported
        cancelled, a running one is its manager's to stop."""
        report = None
        with self._lock:
            for client, queue in self._waiting.items():
                for item in queue:
                    if item[0].id == id:
                        queue.remove(item)
                        report = item[2]
                        if not queue:
                            del self._waiting[client]
                            self._turns.remove(client)
                        break
                if report is not None:
                    break
            running = self._live.get(id)
        if report is not None:
            report(id, "cancelled", None)
            return True
        return running is not None and bool(running[1].cancel(id))

    def waiting(self) -> int:
        """Operations waiting for a slot."""
        with self._lock:
            return sum(len(queue) for queue in self._waiting.values())

    def __repr__(self) -> str:
        return f"FairOperations(running={self.running}, live={len(self._live)})"


class _ClientOperations:
    """One client's view of FairOperations: an OperationManager (submit, cancel, close)."""

    def __init__(self, fair: FairOperations, client: Hashable) -> None:
        self._fair, self._client = fair, client

    def submit(self, operation: Operation, kind: OperationKind, report: Report) -> None:
        self._fair.submit(self._client, operation, kind, report)

    def cancel(self, id: str) -> bool:
        return self._fair.cancel(id)

    def close(self) -> None:
        """Nothing of its own to release: the managers behind it are the process's."""
