"""Tools that return operations: `operation_tool`, and the tools that follow background work.

An operation tool's function only describes the work (returns Operation(s), no I/O);
its call node is recorded like any tool call's, the operations are committed with it,
the Runtime's manager runs them, and their results are the call's result (or, with
background=True, a handle at once, which poll_operation / wait_operation /
cancel_operation follow). Start at operation_tool().
"""

from __future__ import annotations

import functools
import inspect
import json
import threading
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, overload

from openprogram.agentic.ask import ask_to_settle
from openprogram.agentic.function import agentic_function
from openprogram.core import _context
from openprogram.echo import elide
from openprogram.errors import UsageError
from openprogram.operations.manager import OperationManager
from openprogram.operations.operation import Operation, OperationRecord
from openprogram.operations.tracker import TrackedSession, tracked, tracker

__all__ = [
    "operation_tool",
    "operation_tools",
    "session_operations",
    "settle_operation",
]

F = TypeVar("F", bound=Callable[..., Any])


def _manager() -> OperationManager | None:
    runtime = _context.live_runtime() or _context.call_context().runtime
    return getattr(runtime, "operations", None)


def _operations(value: Any) -> list[Operation] | None:
    if isinstance(value, Operation):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, Operation) for v in value):
        return list(value)
    return None


@overload
def operation_tool(fn: F) -> F: ...
@overload
def operation_tool(
    fn: None = None,
    *,
    background: bool = False,
    input: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[[F], F]: ...


def operation_tool(
    fn: Callable[..., Any] | None = None,
    *,
    background: bool = False,
    input: Mapping[str, Mapping[str, Any]] | None = None,
) -> Callable[..., Any]:
    """Make `fn`, which returns Operation(s) instead of doing the work, a recorded tool.

    The call is recorded as a code node; the operations it returns are committed with
    that node in one transaction and run by the Runtime's manager (`Runtime(operations=
    ...)`; default LocalOperations, or a ProcessOperations sandbox for sandbox kinds).
    The call returns their results (one operation: its result; several: a list); a
    failed or cancelled one raises OperationFailed, an `unknown` one EffectUnknown.
    background=True: the call returns handles at once (`{"operation", "kind",
    "state"}`; a list for several), for poll_operation / wait_operation /
    cancel_operation and `session.operations()`. A value that is not operations is
    returned as it is (say, a message for the model about invalid arguments). On resume
    a recorded call is answered from the record; an interrupted one takes its
    operations up again instead of describing them anew.
    """

    def decorate(translate: Callable[..., Any]) -> Any:
        raw = inspect.unwrap(translate)
        if inspect.iscoroutinefunction(raw):
            raise UsageError(
                f"operation_tool({raw.__qualname__}): describing operations does no I/O, so "
                "the function is a plain `def`, not `async def`"
            )

        @functools.wraps(raw)
        def body(*args: Any, **kwargs: Any) -> Any:
            return _run(raw, background, args, kwargs)

        try:  # resolved where the function was written (body lives here)
            hints = typing.get_type_hints(raw)
        except Exception:
            hints = dict(getattr(raw, "__annotations__", {}))
        hints.pop("return", None)  # the call returns results, not operations
        body.__annotations__ = hints
        body.__wrapped__ = _without_return(raw)  # nor resumed as them
        wrapped = agentic_function(body, input=input)
        wrapped.background = background
        wrapped.__operations__ = True
        return wrapped

    return decorate if fn is None else decorate(fn)


def _without_return(raw: Callable[..., Any]) -> Callable[..., Any]:
    """`raw` as a function whose return annotation is gone (its signature and docs are
    the tool's): a resumed call's recorded result (a handle, an operation's result) is
    not read back as the Operation the function returns."""
    copy = types.FunctionType(
        raw.__code__, raw.__globals__, raw.__name__, raw.__defaults__, raw.__closure__
    )
    functools.update_wrapper(copy, raw, updated=())
    copy.__kwdefaults__ = raw.__kwdefaults__
    copy.__annotations__ = {k: v for k, v in inspect.get_annotations(raw).items() if k != "return"}
    del copy.__wrapped__  # type: ignore[attr-defined]
    return copy


def _run(raw: Callable[..., Any], background: bool, args: Any, kwargs: Any) -> Any:
    session = _context.current_session()
    frame = _context.frame_id()
    node = session.dag.node(frame) if frame is not None and frame in session.dag else None
    if node is None:  # not recorded: describe and run without a record
        raise UsageError(
            f"{raw.__qualname__} is an operation tool and its call was not recorded; call it "
            "inside a session (it is recorded as a code node)"
        )
    ops_of = tracker(tracked(session))
    found = ops_of.of_node(node.id)  # a resumed call: its operations, not new ones
    if found:
        ids = [record.id for record in found]
    else:
        produced = raw(*args, **kwargs)
        operations = _operations(produced)
        if operations is None:
            return produced
        ops_of.commit(node, operations, background=background)
        ids = [op.id for op in operations]
    manager = _manager()
    ops_of.start(ids, manager)
    ops_of.pick_up_background(manager)  # a resumed session's unfinished background work
    if background:
        handles = [record.handle() for record in (ops_of.get(id) for id in ids)]
        return handles[0] if len(handles) == 1 else handles
    while True:  # an unknown operation is put to a person when the runtime has an asker
        unknown = [r for r in ops_of.wait(ids) if r.state == "unknown"]
        settled = [_ask_to_settle(ops_of, node.name, record) for record in unknown[:1]]
        if not any(settled):
            return ops_of.results(node, ids)  # EffectUnknown for one nobody settled
        ops_of.start(ids, manager)  # one settled to run again


_QUESTION = (
    "operation {id} ({kind} {args}) of {call} was running when its process died, and "
    'whether it happened is unknown. Look it up. Answer "rerun" to run it again, or what '
    "it returned (JSON, or text)."
)


def _ask_to_settle(ops_of: Any, call: str, record: OperationRecord) -> bool:
    """Have the runtime's asker settle unknown operation `record`: whether it was."""
    args = elide(json.dumps(record.args, ensure_ascii=False, default=str), 300)
    question = _QUESTION.format(id=record.id, kind=record.kind, args=args, call=call)
    answer = ask_to_settle(question)
    if answer is None:
        return False
    rerun, result = answer
    ops_of.settle(record.id, result=result, rerun=rerun)
    return True


# -- following background work ---------------------------------------------------------
def _picked_up(id: str) -> Any:
    ops_of = tracker(tracked(_context.current_session()))
    ops_of.pick_up_background(_manager())
    return ops_of


def _poll_operation(operation: str) -> dict[str, Any]:
    """Show a background operation's state, and its result once it is done.

    operation is the id a background tool returned."""
    return _picked_up(operation).get(operation).handle()  # type: ignore[no-any-return]


def _wait_operation(operation: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """Wait up to timeout_s seconds for a background operation to finish; its state then.

    operation is the id a background tool returned."""
    ops_of = _picked_up(operation)
    (record,) = ops_of.wait([operation], max(0.0, min(float(timeout_s), 600.0)))
    return record.handle()  # type: ignore[no-any-return]


def _cancel_operation(operation: str) -> dict[str, Any]:
    """Ask a background operation to stop; its state then.

    operation is the id a background tool returned."""
    return _picked_up(operation).cancel(operation).handle()  # type: ignore[no-any-return]


_tools: list[Callable[..., Any]] = []
_tools_lock = threading.Lock()


def operation_tools() -> list[Callable[..., Any]]:
    """The tools a model follows background work with: poll_operation(operation),
    wait_operation(operation, timeout_s=30), cancel_operation(operation) (made on first
    use: importing openprogram does not pay for their schemas)."""
    with _tools_lock:
        if not _tools:
            for fn, name in ((_poll_operation, "poll_operation"),
                             (_wait_operation, "wait_operation"),
                             (_cancel_operation, "cancel_operation")):  # fmt: skip
                fn.__name__ = fn.__qualname__ = name
                _tools.append(agentic_function(fn))
        return list(_tools)


# -- for people ------------------------------------------------------------------------
def session_operations(session: TrackedSession) -> list[OperationRecord]:
    """Every operation of `session` (what Session.operations() returns), oldest first."""
    return tracker(session).records()


def settle_operation(
    session: TrackedSession,
    operation: str,
    *,
    result: object = None,
    rerun: bool = False,
    by: str = "",
) -> OperationRecord:
    """Settle an `unknown` operation of `session`: done with `result`, or (rerun=True)
    pending again, to run when its tool call is resumed; `by` (who settles) goes into
    its event. AlreadySettled, naming who settled it, when it was settled already."""
    return tracker(session).settle(operation, result=result, rerun=rerun, by=by)
