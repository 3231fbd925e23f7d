"""start_thread: run work on a new thread that records where its starter records.

A plain `threading.Thread` starts with an empty context (DESIGN.md §3 threads rule);
this helper copies the caller's context (session, runtime, current frame) into it, so
its calls nest under the calling function even when several sessions are live.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["start_thread"]


def start_thread(
    target: Callable[..., Any],
    *args: Any,
    name: str | None = None,
    daemon: bool | None = None,
    **kwargs: Any,
) -> threading.Thread:
    """Start `target(*args, **kwargs)` on a new thread in a copy of the current context.

    Its agentic calls record into this context's session, use its Runtime and nest
    under the function that called start_thread. Returns the started thread (join it).
    For an executor, submit `contextvars.copy_context().run` with the function instead.
    """
    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(target, *args), kwargs=kwargs, name=name, daemon=daemon
    )
    thread.start()
    return thread
