"""submit() and Run, the handle of a run: its state, its result, cancelling it.

A handle holds only the run's id and a RunQueue on its store: any process can make one
(`Run(store, id)`) and ask. result() waits on the run's row. Start at submit().
"""

from __future__ import annotations

import json
import time
from typing import Any

from openprogram.echo import echo
from openprogram.errors import RunFailed, UsageError
from openprogram.runs.queue import RunInfo, RunQueue

__all__ = ["Run", "limit", "submit"]


def submit(
    function: str,
    *args: Any,
    id: str,
    store: object,
    queue: str = "default",
    priority: int = 0,
    delay: float = 0.0,
    at: float | None = None,
    **kwargs: Any,
) -> Run:
    """Queue a run of `function` ("package.module:function") with `args` and `kwargs`
    (JSON values) as session `id` of `store`; a worker (`openprogram worker STORE`)
    runs it inside Session.open(store, id, resume=True). The same `id` again is the same
    run (its handle; UsageError when it was submitted with another call).

    queue: which workers take it. priority: higher first among due runs. delay: seconds
    from now before it may start; at: a time (seconds since the epoch) it may start.
    """
    if not isinstance(id, str) or not id or not id.isprintable():
        raise UsageError(
            f"id={echo(id)}: submit(..., id=...) needs the run's id as printable text: a run "
            "is found again by it (and the same id is one run)"
        )
    if not isinstance(function, str) or ":" not in function:
        raise UsageError(
            f"function={echo(function)}: name it as 'package.module:function', which the "
            "worker imports"
        )
    if not isinstance(priority, int):
        raise UsageError(f"priority={echo(priority)} must be a whole number (higher runs first)")
    if delay < 0 or (at is not None and not isinstance(at, (int, float))):
        raise UsageError(f"delay={echo(delay)} must be >= 0 and at={echo(at)} a time in seconds")
    runs = RunQueue(store)
    try:
        runs.submit(id, function, args, kwargs, queue=queue, priority=priority, delay=delay, at=at)
    except BaseException:
        runs.close()
        raise
    return Run(runs, id)


def limit(store: object, queue: str, concurrency: int | None) -> None:
    """At most `concurrency` runs of `queue` run at once over all workers (None: no
    limit)."""
    runs = RunQueue(store)
    try:
        runs.set_limit(queue, concurrency)
    finally:
        runs.close()


class Run:
    """A submitted run: `Run(store, id)` from anywhere, or what submit() returns."""

    def __init__(self, store: object, id: str) -> None:
        self._queue = store if isinstance(store, RunQueue) else RunQueue(store)
        self.id = id
        if self._queue.get(id) is None:
            self._queue.close()
            raise UsageError(f"no run {echo(id)} in {self._queue.url}")

    @property
    def store(self) -> str:
        return self._queue.url

    def info(self) -> RunInfo:
        """The run's row: state, queue, attempts, takeovers, times, result or error."""
        found = self._queue.get(self.id)
        if found is None:  # pruned meanwhile
            raise UsageError(f"run {echo(self.id)} is no longer in {self._queue.url}")
        return found

    def status(self) -> str:
        """queued, running, waiting (for a person: answer or settle, then requeue()),
        completed, failed, stopped or cancelled."""
        return self.info().state

    def result(self, timeout: float | None = None) -> Any:
        """Wait for the run to end and return what its function returned (as JSON).

        Raises TimeoutError after `timeout` seconds, RunFailed when it failed, was
        stopped, cancelled, or waits for a person."""
        deadline = None if timeout is None else time.monotonic() + timeout
        pause = 0.01
        while True:
            info = self.info()
            if info.state == "completed":
                return None if info.result is None else json.loads(info.result)
            if info.finished or info.state == "waiting":
                raise RunFailed(
                    f"run {echo(self.id)} {info.state}: {info.error or 'no error recorded'}"
                    + (
                        ". Answer its question or settle its call (`openprogram sessions "
                        f"pending --store ... {self.id}`), then Run(store, id).requeue()"
                        if info.state == "waiting"
                        else ""
                    ),
                    state=info.state,
                )
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"run {echo(self.id)} is still {info.state} after {timeout} s; result() "
                    "again later (it goes on without you)"
                )
            wait = pause if deadline is None else min(pause, max(0.0, deadline - time.monotonic()))
            time.sleep(wait)  # another process ends it: its row is all there is to watch
            pause = min(pause * 2, 0.25)

    def cancel(self, reason: str = "cancelled by request") -> str:
        """Cancel the run: a queued or waiting one at once, a running one at its next
        call boundary. Returns its state now."""
        return self._queue.cancel(self.id, reason)

    def requeue(self) -> bool:
        """Queue a waiting run again once its question is answered or its call settled;
        False when it was not waiting."""
        return self._queue.requeue(self.id)

    def close(self) -> None:
        self._queue.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Run({self.id!r}, store={self._queue.url!r})"
