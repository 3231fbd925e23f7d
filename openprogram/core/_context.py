"""Ambient state: the call context of this thread or task, and the live sessions.

What a call runs in (its frame, session and runtime, the tool call it answers, the meta
the next recorded call takes, its compactor, ask_user's schema) is one frozen
CallContext held in one ContextVar: a call that changes any of it enters a new one and
leaves it by its token, so threads and asyncio tasks never share a call stack and no
part is ever changed in place. Entered sessions and runtimes are also registered
process-wide, so a plain thread (one that did not copy a context) finds them by the
threads rule of DESIGN.md §3: the one live, or a UsageError when several are. This layer
sits below session.py and runtime.py: it knows them only as the AmbientSession and
AmbientRuntime protocols, and the package root provides the makers of the process
defaults (_wiring.py). Start at call_context() and current_session().
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from openprogram import _wiring
from openprogram.errors import UsageError

if TYPE_CHECKING:
    from openprogram.core.dag import ContextDAG, Node


class AmbientSession(Protocol):
    """What the layers below session.py use of the recording Session: its DAG, and the
    recording of calls and exchanges (enter_*, exit_call) that @agentic_function and
    llm() drive."""

    @property
    def id(self) -> str: ...

    @property
    def dag(self) -> ContextDAG: ...

    def enter_call(
        self, name: str, arguments: dict[str, Any], parent: str | None, settings: dict[str, Any]
    ) -> Node: ...

    def enter_llm(
        self, name: str, parent: str | None, content: str | list[Any], meta: dict[str, Any]
    ) -> Node: ...

    def exit_call(self, node: Node, result: object, exc: BaseException | None) -> None: ...

    def not_recorded(self, name: str, parent: str | None, exc: BaseException) -> None: ...

    def resumed_output(self, node: Node, fn: object) -> object: ...


class AmbientRuntime(Protocol):
    """What the layers below runtime.py use of the ambient Runtime."""

    @property
    def callbacks(self) -> Sequence[Any]: ...


@dataclass
class ToolCallSlot:
    """Set by the tool loop around one tool call: the call's id and the llm node that
    asked for it; the next recorded call takes them into its meta and leaves its node."""

    id: str
    asked_by: str
    node: Node | None = None


@dataclass(frozen=True)
class CallContext:
    """What the code running here is part of; replaced, never changed, when a call starts.

    frame: the id of the running agentic function's code node (None at top level).
    session, runtime: the ones this context chose (None: the threads rule decides).
    tool_call: the model's tool call the next recorded call answers.
    next_meta: meta the next recorded call carries on its node (not the calls inside it).
    compactor: the innermost running function's own compactor.
    schema: the pydantic model an ask_user answer is validated into.
    """

    frame: str | None = None
    session: AmbientSession | None = None
    runtime: AmbientRuntime | None = None
    tool_call: ToolCallSlot | None = None
    next_meta: Mapping[str, Any] | None = None
    compactor: Callable[[str], Any] | None = None
    schema: type[Any] | None = None


_OUTSIDE = CallContext()  # frozen, so one is shared by every context outside any call
_call: ContextVar[CallContext] = ContextVar("openprogram_call", default=_OUTSIDE)


def call_context() -> CallContext:
    """This thread's or task's call context."""
    return _call.get()


def frame_id() -> str | None:
    """The id of the code node of the agentic function running here (None at top level)."""
    return _call.get().frame


def enter(**changes: Any) -> Token[CallContext]:
    """Make a new call context, this one with `changes` (CallContext's fields), current;
    leave(token) restores the one before."""
    return _call.set(dataclasses.replace(_call.get(), **changes))


def leave(token: Token[CallContext]) -> None:
    """Restore the call context that was current before enter() gave `token`."""
    _call.reset(token)


@contextmanager
def entered(**changes: Any) -> Iterator[CallContext]:
    """enter(**changes) for the block; the new call context."""
    token = enter(**changes)
    try:
        yield _call.get()
    finally:
        leave(token)


_lock = threading.Lock()  # made anew in a fork child (below)
_entered: list[AmbientSession] = []  # live sessions, once per `with` block still open
_live_runtimes: list[AmbientRuntime] = []  # likewise for runtimes made ambient
_default: list[AmbientSession] = []
_default_runtime: list[AmbientRuntime] = []

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


def entered_sessions() -> list[AmbientSession]:
    """The sessions entered (`with`) in this process now, once per open block."""
    with _lock:
        return list(_entered)


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


def _process_default(defaults: list[T], what: str) -> T:
    make = _wiring.factory(what)
    with _lock:
        if not defaults:
            defaults.append(make())
        return defaults[0]


def current_session() -> AmbientSession:
    """The session that records here: this context's (`with Session()`); else, in a plain
    thread, the one session live in the process; else a process-wide default in-memory
    session. Raises UsageError when this context has none and several are live."""
    session = _call.get().session
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
    runtime = _call.get().runtime
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
