"""Ambient state: the current frame, session and runtime of this thread or task.

Everything lives in contextvars so threads and asyncio tasks never share a call stack;
sessions also keep a process-wide stack so worker threads started inside a
`with Session()` block record into it.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openprogram.runtime import Runtime
    from openprogram.session import Session

frame_var: ContextVar[str | None] = ContextVar("openprogram_frame", default=None)
session_var: ContextVar[Session | None] = ContextVar("openprogram_session", default=None)
runtime_var: ContextVar[Runtime | None] = ContextVar("openprogram_runtime", default=None)

_lock = threading.Lock()
_entered: list[Session] = []
_default: list[Session] = []


def push_session(session: Session) -> None:
    with _lock:
        _entered.append(session)


def pop_session(session: Session) -> None:
    with _lock:
        for index in range(len(_entered) - 1, -1, -1):
            if _entered[index] is session:
                del _entered[index]
                break


def current_session() -> Session:
    """The session that records here: this context's, else the newest entered, else a
    process-wide default in-memory session."""
    session = session_var.get()
    if session is not None:
        return session
    if _entered:
        return _entered[-1]
    with _lock:
        if not _default:
            from openprogram.session import Session

            _default.append(Session())
        return _default[0]


def reset_default_session() -> None:
    """Drop the process-wide default session (tests and notebooks starting afresh)."""
    with _lock:
        _default.clear()
