"""Tools: functions a model may call from `llm(..., tools=[...])`.

Owns the Toolbox: tools as provider specs, a tool call's arguments validated against
the tool's spec, and running the calls (concurrently under allm), each recorded as a
code node of the calling frame. runtime.py drives the loop; render.py shows the calls
and results to the next turn. Start at Toolbox.run().
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import re
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ValidationError

from openprogram.agentic.function import agentic_function, is_async
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.echo import cut, echo
from openprogram.errors import (
    EffectUnknown,
    ModelError,
    ReplayMismatch,
    ResumeDivergence,
    RunStopped,
    UnsupportedOperation,
    UsageError,
)
from openprogram.models.model import ToolCall
from openprogram.runtime._step import Effect, RunTools, Step, adrive, drive

__all__ = ["ToolLoop", "Toolbox"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_PROPAGATE = (
    RunStopped,
    UsageError,
    ResumeDivergence,
    ReplayMismatch,
    EffectUnknown,
    UnsupportedOperation,
)
"""Raised by a tool, these end the loop instead of going back to the model: a stop, a
programming mistake, a re-run that no longer matches its recording, a side effect a
person must settle (an interrupted effect="once" call or operation), or a recorded
operation this program cannot run."""
_wrapped: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _is_tool_object(tool: Any) -> bool:
    """A tool object (an MCP server's tool): not a function, but a `.spec`, a
    `validate(arguments)` and a call that records itself; `acall` for allm()."""
    return (
        not getattr(tool, "__agentic__", False)
        and isinstance(getattr(tool, "spec", None), dict)
        and callable(getattr(tool, "validate", None))
    )


class _Tool:
    def __init__(self, fn: Callable[..., Any]) -> None:
        self.checker: Callable[[Any], tuple[dict[str, Any], str | None]] | None = None
        if _is_tool_object(fn):
            self.checker = fn.validate  # type: ignore[attr-defined]
            acall = getattr(fn, "acall", None)
            self.is_async = acall is not None
            self.fn = fn
            self.afn: Callable[..., Any] = acall or fn
            self.spec: dict[str, Any] = fn.spec  # type: ignore[attr-defined]
        else:
            if not getattr(fn, "__agentic__", False):
                fn = _wrap_plain(fn)
            self.fn = fn
            self.spec = fn.spec  # type: ignore[attr-defined]
            self.model: type[BaseModel] = fn.arguments_model  # type: ignore[attr-defined]
            self.is_async = is_async(fn)
            self.afn = fn
        self.name: str = self.spec["name"]
        if not _NAME.match(self.name):
            raise UsageError(
                f"tool name {self.name!r} is not allowed by model providers (letters, digits, "
                "'_' and '-', at most 64); define the tool with `def` and a plain name"
            )
        if self.checker is None:
            self._check_fillable(fn)

    def _check_fillable(self, fn: Callable[..., Any]) -> None:
        fields = set(self.model.model_fields)
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if param.name in ("runtime", "self", "cls") or param.name in fields:
                continue
            if param.default is param.empty:
                raise UsageError(
                    f"tool {self.name!r} has a required parameter {param.name!r} the model "
                    "cannot fill (it is hidden); give it a default, or make a small tool "
                    "function that supplies it"
                )

    def validate(self, arguments: dict[str, Any] | str) -> tuple[dict[str, Any], str | None]:
        """(keyword arguments, None), or ({}, what is wrong) to tell the model."""
        if self.checker is not None:
            return self.checker(arguments)
        if not isinstance(arguments, dict):
            return {}, (
                f"the arguments of {self.name} are not a JSON object: {echo(arguments)}. "
                "Call it again with a JSON object matching its parameters."
            )
        unknown = sorted(set(arguments) - set(self.model.model_fields))
        if unknown:
            return {}, (
                f"{self.name} has no parameter {echo(unknown[0])}; its parameters are "
                f"{sorted(self.model.model_fields)!r}. Call it again with those."
            )
        try:
            parsed = self.model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{cut('.'.join(str(p) for p in e['loc']) or 'arguments')}: {cut(e['msg'])}"
                f" (got {echo(e['input'])})"
                for e in exc.errors()[:5]
            )
            return {}, (
                f"invalid arguments for {self.name}: {problems}. Call it again with "
                "arguments matching its schema."
            )
        return {name: getattr(parsed, name) for name in parsed.model_fields_set}, None


def _wrap_plain(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A plain callable as an agentic function (made once per function)."""
    if not callable(fn) or not hasattr(fn, "__name__"):
        raise UsageError(
            f"tools=[...] takes functions (agentic or plain), not {fn!r}; wrap it in a `def`"
        )
    try:
        return _wrapped[fn]  # type: ignore[no-any-return]
    except (KeyError, TypeError):
        pass
    try:
        wrapped = agentic_function(fn)
    except (TypeError, ValueError) as exc:  # no signature (a builtin)
        raise UsageError(f"cannot use {fn!r} as a tool ({exc}); wrap it in a `def`") from exc
    with contextlib.suppress(TypeError):  # not weak-referenceable: wrapped again next time
        _wrapped[fn] = wrapped
    return wrapped  # type: ignore[no-any-return]


class Toolbox:
    """The tools of one llm() call, by name, and how their calls run.

    tools: agentic functions (their `.spec` is the schema), plain functions, which
    are wrapped with @agentic_function, or tool objects (`.spec`, `.validate`, recording
    their own calls; an MCP server's tools). callbacks: the runtime's; one with a
    `restore(value)` method (PIIRedactor) puts the originals back into the arguments
    before they are validated. Raises UsageError for duplicate or unusable tools.
    """

    def __init__(self, tools: Sequence[Callable[..., Any]], callbacks: Sequence[Any] = ()) -> None:
        if isinstance(tools, (str, bytes)) or not isinstance(tools, Sequence):
            raise UsageError(f"tools={tools!r} must be a list of functions")
        self._restorers = [
            restore for c in callbacks if callable(restore := getattr(c, "restore", None))
        ]
        self.tools: dict[str, _Tool] = {}
        for fn in tools:
            tool = _Tool(fn)
            if tool.name in self.tools:
                raise UsageError(
                    f"two tools are named {tool.name!r}; tool names must be unique in one call"
                )
            self.tools[tool.name] = tool

    @property
    def specs(self) -> list[dict[str, Any]]:
        """The tools in OpenAI format: `{"type": "function", "function": spec}`."""
        return [{"type": "function", "function": tool.spec} for tool in self.tools.values()]

    def run(self, calls: Sequence[ToolCall], asked_by: Node) -> list[str]:
        """Run the calls in order; the ids of their code nodes. Exceptions of a tool go
        back to the model (recorded as the node's error), except RunStopped, UsageError,
        ResumeDivergence and ReplayMismatch, which propagate."""
        return [drive(self._call(call, asked_by)) for call in calls]

    async def arun(self, calls: Sequence[ToolCall], asked_by: Node) -> list[str]:
        """Run the calls concurrently (sync tools on worker threads); as run()."""
        outcomes = await asyncio.gather(
            *(adrive(self._call(call, asked_by)) for call in calls),
            return_exceptions=True,
        )
        for outcome in outcomes:
            if isinstance(outcome, BaseException):
                raise outcome
        return [str(outcome) for outcome in outcomes]

    def _call(self, call: ToolCall, asked_by: Node) -> Step[str]:
        """The step of one tool call (run by run() or, each in its own task, by arun()):
        its code node's id."""
        tool, arguments, problem = self._resolve(call)
        if tool is None:
            return _refuse(call, asked_by, problem or "")
        slot = _context.ToolCallSlot(call.id, asked_by.id)
        token = _context.enter(tool_call=slot)
        try:
            yield _RunTool(tool, arguments)
        except _PROPAGATE:
            raise
        except Exception as exc:  # the node records it; the model is told
            return _unrecorded(slot, call, asked_by, exc)
        finally:
            _context.leave(token)
        return _unrecorded(slot, call, asked_by, None)

    def _resolve(self, call: ToolCall) -> tuple[_Tool | None, dict[str, Any], str | None]:
        tool = self.tools.get(call.name)
        if tool is None:
            return (
                None,
                {},
                (
                    f"there is no tool {echo(call.name)}; the tools are {sorted(self.tools)!r}. "
                    "Call one of those."
                ),
            )
        given = call.arguments
        for restore in self._restorers:  # the model saw placeholders; the tool gets originals
            given = restore(given)
        arguments, problem = tool.validate(given)
        return (None if problem else tool), arguments, problem


class _RunTool(Effect):
    """A tool's call: under allm() an async tool is awaited, a sync one runs on a worker
    thread (in this context)."""

    __slots__ = ("arguments", "tool")

    def __init__(self, tool: _Tool, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments

    def run(self) -> None:
        self.tool.fn(**self.arguments)

    async def arun(self) -> None:
        if self.tool.is_async:
            await self.tool.afn(**self.arguments)
        else:
            await asyncio.to_thread(self.tool.fn, **self.arguments)


class Records(Protocol):
    """What a tool round writes through (_exchange.py's Exchanges, the layer above)."""

    def mark_error(self, node: Node, error: str) -> None: ...

    def gate_or_stop(self, **context: Any) -> None: ...


class ToolLoop:
    """The tool rounds of one llm() call: its toolbox, the nodes so far, the rounds run."""

    def __init__(
        self,
        tools: Sequence[Callable[..., Any]] | None,
        max_tool_turns: int,
        callbacks: Sequence[Any] = (),
    ) -> None:
        if (
            not isinstance(max_tool_turns, int)
            or isinstance(max_tool_turns, bool)
            or (max_tool_turns < 1)
        ):
            raise UsageError(f"max_tool_turns={max_tool_turns!r} must be an int >= 1")
        self.toolbox = Toolbox(tools, callbacks) if tools else None
        self.max_turns = max_tool_turns
        self.rounds = 0
        self.nodes: list[str] = []

    def asked(self, node: Node) -> None:
        if self.toolbox is not None:
            self.nodes.append(node.id)

    def tool_round(self, node: Node, calls: list[ToolCall], records: Records) -> Step[None]:
        """The step of one round of the tool calls `node` asked for, each recorded as a code
        node. Before it runs: count it (ModelError when none may run) and ask the gates
        (RunStopped when one says stop)."""
        self.next_round(node, calls, records.mark_error)
        assert self.toolbox is not None  # next_round raised ModelError without one
        frame = _context.current_session().dag.get(node.parent) if node.parent else None
        records.gate_or_stop(kind="tool_calls", frame=frame, calls=calls)
        self.nodes.extend((yield RunTools(self.toolbox, calls, node)))

    def next_round(
        self, node: Node, calls: list[ToolCall], mark_error: Callable[[Node, str], None]
    ) -> None:
        """Count a round of tool calls; ModelError (the node marked) when none may run."""
        names = cut(", ".join(call.name for call in calls))
        if self.toolbox is None:
            message = (
                f"the model answered with tool calls ({names}) but this llm() call offered "
                "no tools; pass tools=[...], or ask for a text answer in the prompt"
            )
        elif self.rounds >= self.max_turns:
            message = (
                f"the model still asked for tools ({names}) after max_tool_turns="
                f"{self.max_turns} rounds; raise max_tool_turns, or say in the prompt when "
                "to stop calling tools and answer"
            )
        else:
            self.rounds += 1
            return
        mark_error(node, message)
        raise ModelError(message, node_id=node.id)


def _refuse(call: ToolCall, asked_by: Node, problem: str) -> str:
    """Record a tool call that could not run (unknown tool, invalid arguments) as a code
    node in error, so the model is told and the DAG shows it; its id."""
    session = _context.current_session()
    node = session.enter_call(
        call.name,
        call.arguments if isinstance(call.arguments, dict) else {"arguments": call.arguments},
        asked_by.parent,
        {"meta": {"tool_call_id": call.id, "asked_by": asked_by.id, "refused": True}},
    )
    session.dag.complete(node, None, status="error", error=problem)
    return node.id


def _unrecorded(
    slot: _context.ToolCallSlot, call: ToolCall, asked_by: Node, exc: Exception | None
) -> str:
    """The node of a tool call that ran; one is made when the call was not recorded (a
    call Python refused before the function ran), so the model still gets the error."""
    if slot.node is not None:
        return slot.node.id
    problem = (
        f"{type(exc).__name__}: {cut(str(exc))}" if exc is not None else "the call was not recorded"
    )
    return _refuse(call, asked_by, problem)
