"""Ambient state: the current frame, session and runtime of this thread or task.

Everything lives in contextvars so threads and asyncio tasks never share a call stack.
Entered sessions and runtimes are also registered process-wide, so a plain thread (one
that did not copy a context) finds them by the threads rule of DESIGN.md §3: the one
live, or a UsageError when several are. This layer sits below session.py and
runtime.py: it knows them only as the AmbientSession and AmbientRuntime protocols, and
they register the factories of the process defaults. Start at current_session().
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, Protocol, TypeVar

from openprogram.core.dag import ContextDAG, Node
from openprogram.errors import UsageError


class AmbientSession(Protocol):
    """What the layers below session.py use of the recording Session."""

    @property
    def id(self) -> str: ...

    @property
    def dag(self) -> ContextDAG: ...

    def _enter_call(
        self, name: str, arguments: dict[str, Any], parent: str | None, settings: dict[str, Any]
    ) -> Node: ...

    def _enter_llm(
        self, name: str, parent: str | None, content: str | list[Any], meta: dict[str, Any]
    ) -> Node: ...

    def _exit_call(self, node: Node, result: Any, exc: BaseException | None) -> None: ...

    def _not_recorded(self, name: str, parent: str | None, exc: BaseException) -> None: ...

    def _resumed_output(self, node: Node, fn: Any) -> Any: ...


class AmbientRuntime(Protocol):
    """What the layers below runtime.py use of the ambient Runtime."""

    @property
    def callbacks(self) -> Sequence[Any]: ...


frame_var: ContextVar[str | None] = ContextVar("openprogram_frame", default=None)
session_var: ContextVar[AmbientSession | None] = ContextVar("openprogram_session", default=None)
runtime_var: ContextVar[AmbientRuntime | None] = ContextVar("openprogram_runtime", default=None)

_lock = threading.Lock()  # made anew in a fork child (below)
_entered: list[AmbientSession] = []  # live sessions, once per `with` block still open
_live_runtimes: list[AmbientRuntime] = []  # likewise for runtimes made ambient
_default: list[AmbientSession] = []
_default_runtime: list[AmbientRuntime] = []
_factories: dict[str, Callable[[], Any]] = {}

T = TypeVar("T")


def _new_lock_in_child() -> None:
    """In a fork child: another thread of the parent may have held the lock."""
    global _lock
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)

_FIX = (
    "start the thread in the current context: openprogram.start_thread(target, ...), "
    "or threading.Thread(target=contextvars.copy_context().run, args=(target, ...)); "
    "for an executor, executor.submit(contextvars.copy_context().run, fn, ...)"
)


def set_session_factory(factory: Callable[[], AmbientSession]) -> None:
    """How the process default session is made (session.py registers `Session`)."""
    _factories["session"] = factory


def set_runtime_factory(factory: Callable[[], AmbientRuntime]) -> None:
    """How the process default runtime is made (runtime.py registers `Runtime`)."""
    _factories["runtime"] = factory


def push_session(session: AmbientSession) -> None:
    with _lock:
        _entered.append(session)


def pop_session(session: AmbientSession) -> None:
    _remove(_entered, session)


def push_runtime(runtime: AmbientRuntime) -> None:
    with _lock:
        _live_runtimes.append(runtime)


def pop_runtime(runtime: AmbientRuntime) -> None:
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


# the modules that register each default's factory when imported (this layer makes no
# Session or Runtime itself): imported on first need, since `import openprogram` is lazy
_REGISTRARS = {"session": "openprogram.session.session", "runtime": "openprogram.runtime.runtime"}


def _process_default(defaults: list[T], what: str) -> T:
    if what not in _factories:
        importlib.import_module(_REGISTRARS[what])
    with _lock:
        if not defaults:
            defaults.append(_factories[what]())
        return defaults[0]


def current_session() -> AmbientSession:
    """The session that records here: this context's (`with Session()`); else, in a plain
    thread, the one session live in the process; else a process-wide default in-memory
    session. Raises UsageError when this context has none and several are live."""
    session = session_var.get()
    if session is not None:
        return session
    live = _the_one_live(_entered, "Session")
    if live is not None:
        return live
    return _process_default(_default, "session")


def is_process_default(session: AmbientSession) -> bool:
    """Whether `session` is the process-wide default one (no `with Session()` chose it)."""
    return bool(_default) and _default[0] is session


def live_runtime() -> AmbientRuntime | None:
    """This context's Runtime, else the one live in the process (None when none is).
    Raises UsageError when this context has none and several are live."""
    runtime = runtime_var.get()
    if runtime is not None:
        return runtime
    return _the_one_live(_live_runtimes, "Runtime")


def current_runtime() -> AmbientRuntime:
    """live_runtime(), else a process default Runtime (made on first use)."""
    runtime = live_runtime()
    if runtime is not None:
        return runtime
    return _process_default(_default_runtime, "runtime")


def reset_default_session() -> None:
    """Drop the process-wide default session (tests and notebooks starting afresh)."""
    with _lock:
        _default.clear()


def reset_defaults() -> None:
    """Drop the process-wide default session and runtime (tests starting afresh)."""
    with _lock:
        _default.clear()
        _default_runtime.clear()
