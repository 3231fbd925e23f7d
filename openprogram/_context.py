"""Ambient state: the current frame, session and runtime of this thread or task.

Everything lives in contextvars so threads and asyncio tasks never share a call stack.
Entered sessions and runtimes are also registered process-wide, so a plain thread (one
that did not copy a context) finds them by the threads rule of DESIGN.md §3: the one
live, or a UsageError when several are. Start at current_session().
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar

from openprogram.errors import UsageError

if TYPE_CHECKING:
    from openprogram.runtime import Runtime
    from openprogram.session import Session

frame_var: ContextVar[str | None] = ContextVar("openprogram_frame", default=None)
session_var: ContextVar[Session | None] = ContextVar("openprogram_session", default=None)
runtime_var: ContextVar[Runtime | None] = ContextVar("openprogram_runtime", default=None)

_lock = threading.Lock()
_entered: list[Session] = []  # live sessions, once per `with` block still open
_live_runtimes: list[Runtime] = []  # likewise for runtimes made ambient
_default: list[Session] = []

T = TypeVar("T")

_FIX = (
    "start the thread in the current context: openprogram.start_thread(target, ...), "
    "or threading.Thread(target=contextvars.copy_context().run, args=(target, ...)); "
    "for an executor, executor.submit(contextvars.copy_context().run, fn, ...)"
)


def push_session(session: Session) -> None:
    with _lock:
        _entered.append(session)


def pop_session(session: Session) -> None:
    _remove(_entered, session)


def push_runtime(runtime: Runtime) -> None:
    with _lock:
        _live_runtimes.append(runtime)


def pop_runtime(runtime: Runtime) -> None:
    _remove(_live_runtimes, runtime)


def _remove(live: list[Any], item: Any) -> None:
    with _lock:
        for index in range(len(live) - 1, -1, -1):
            if live[index] is item:
                del live[index]
                break


def _the_one_live(live: list[T], what: str) -> T | None:
    """The one distinct live object, None when there is none; UsageError for several."""
    with _lock:
        distinct: list[T] = []
        for item in live:
            if not any(item is seen for seen in distinct):
                distinct.append(item)
    if len(distinct) > 1:
        raise UsageError(
            f"this thread has no {what} of its own and {len(distinct)} are live in the "
            f"process ({', '.join(repr(x) for x in distinct[:3])}), so it cannot tell "
            f"which one it belongs to. To record into the {what} that started the work, " + _FIX
        )
    return distinct[0] if distinct else None


def current_session() -> Session:
    """The session that records here: this context's (`with Session()`); else, in a plain
    thread, the one session live in the process; else a process-wide default in-memory
    session. Raises UsageError when this context has none and several are live."""
    session = session_var.get()
    if session is not None:
        return session
    live = _the_one_live(_entered, "Session")
    if live is not None:
        return live
    with _lock:
        if not _default:
            from openprogram.session import Session

            _default.append(Session())
        return _default[0]


def live_runtime() -> Runtime | None:
    """This context's Runtime, else the one live in the process (None when none is).
    Raises UsageError when this context has none and several are live."""
    runtime = runtime_var.get()
    if runtime is not None:
        return runtime
    return _the_one_live(_live_runtimes, "Runtime")


def reset_default_session() -> None:
    """Drop the process-wide default session (tests and notebooks starting afresh)."""
    with _lock:
        _default.clear()
