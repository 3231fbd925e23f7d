"""The Callback base class and how hooks are called.

Owns the three hook kinds of DESIGN.md §7 — observers (errors logged and recorded,
fatal only for strict callbacks), transformers (chained, errors propagate) and gates
(any False stops the run) — and the order: the runtime's callback list order.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from openprogram.core import _context
from openprogram.core.dag import Node

__all__ = ["Callback", "current_run", "gate", "notify", "transform"]

log = logging.getLogger("openprogram.callbacks")

OBSERVERS = (
    "on_run_start",
    "on_run_end",
    "on_call_start",
    "on_call_end",
    "on_usage",
    "on_llm_chunk",
    "on_screenshot",
    "on_action_start",
    "on_action_end",
    "on_settle",
)
TRANSFORMERS = ("on_llm_start", "on_llm_end")
GATES = ("on_run_continue", "on_reserve")


class Callback:
    """Base for lifecycle callbacks: define only the hooks you need.

    Observers: on_run_start(run), on_run_end(run), on_call_start(node),
    on_call_end(node), on_usage(node, usage), on_llm_chunk(node, chunk) (each text
    chunk of a streamed reply), on_screenshot(image, step),
    on_action_start(action), on_action_end(action, error).
    Transformers: on_llm_start(messages) -> messages, on_llm_end(reply) -> reply.
    Gate: on_run_continue(runtime, *, kind, frame) -> bool; set `stop_reason` to explain.
    `kind` says what is about to happen ("llm" before a model call, "gui_step" before a
    GUI step); `frame` is the code node it happens in (None at top level).
    Reservations (how a limit holds under concurrency, see BudgetManager):
    on_reserve(reservation, *, frame, tokens) -> bool, a gate asked once a request is
    built, holding `reservation` until the observer on_settle(reservation) gives it back
    (answered, failed, abandoned or never sent).
    A run is the top-level code node of a call tree; `current_run()` finds it from
    hooks that are not given it. strict=True makes this callback's observer errors fatal.
    """

    strict: bool = False
    stop_reason: str | None = None


def notify(callbacks: Sequence[Any], hook: str, *args: Any, record_on: Node | None = None) -> None:
    """Call observer `hook` on each callback defining it; errors are logged and recorded
    on `record_on` (the run's node) unless the callback is strict."""
    for callback in callbacks:
        method = getattr(callback, hook, None)
        if method is None:
            continue
        try:
            method(*args)
        except Exception as exc:
            if getattr(callback, "strict", False):
                raise
            log.warning("callback %s.%s failed: %s", type(callback).__name__, hook, exc)
            if record_on is not None:
                record_on.meta.setdefault("callback_errors", []).append(
                    f"{type(callback).__name__}.{hook}: {type(exc).__name__}: {exc}"
                )
                _persist_late(record_on)


def _persist_late(node: Node) -> None:
    """A node already completed was written without what was just noted on it: write it
    again (stores upsert by seq), so nothing recorded is lost."""
    if node.status == "running":
        return
    dag = _context.current_session().dag
    if node.id in dag:
        dag.notify("completed", node)


def transform(callbacks: Sequence[Any], hook: str, value: object) -> Any:
    """Chain transformer `hook` through the callbacks in order; errors propagate."""
    for callback in callbacks:
        method = getattr(callback, hook, None)
        if method is not None:
            value = method(value)
    return value


def gate(callbacks: Sequence[object], runtime: object, **context: Any) -> str | None:
    """None when every gate allows going on, else the first refusing gate's reason.

    Gates are asked in list order and the first refusal wins; its reason is recorded as
    `meta["stop_reason"]` on `context["frame"]` (a Node) and on that frame's run.
    Errors raised by a gate (BudgetExceeded, bugs) propagate.
    """
    for callback in callbacks:
        method = getattr(callback, "on_run_continue", None)
        if method is not None and method(runtime, **context) is False:
            reason = getattr(callback, "stop_reason", None) or (
                f"{type(callback).__name__} stopped the run"
            )
            _record_stop(context.get("frame"), reason)
            return reason
    return None


def _record_stop(frame: Any, reason: str) -> None:
    if not isinstance(frame, Node):
        return
    frame.meta["stop_reason"] = reason
    dag = _context.current_session().dag
    if frame.id in dag:
        dag.top_level_ancestor(frame).meta.setdefault("stop_reason", reason)


def current_run() -> Node | None:
    """The run (top-level code node) of the calling context, or None outside any call."""
    frame_id = _context.frame_id()
    if frame_id is None:
        return None
    dag = _context.current_session().dag
    frame = dag.get(frame_id)
    return None if frame is None else dag.top_level_ancestor(frame)


_scoped: contextvars.ContextVar[tuple[Any, ...]] = contextvars.ContextVar(
    "openprogram_scoped_callbacks", default=()
)


def scoped() -> tuple[Any, ...]:
    """The callbacks added for the calls of this context (`scope()`), outermost first."""
    return _scoped.get()


@contextlib.contextmanager
def scope(*callbacks: Any) -> Iterator[None]:
    """Add `callbacks` to every runtime's own for the calls made inside the block: in
    this context and the tasks it starts (asyncio.gather), not in other threads' or
    tasks'. BudgetManager.scope() is the usual way in."""
    token = _scoped.set(_scoped.get() + callbacks)
    try:
        yield
    finally:
        _scoped.reset(token)
