"""llm() and allm(): asking the ambient runtime's model from inside an agentic function.

Owns the two everyday entry points and their types, which follow what is asked:
the reply text, a `response_format` instance, or a stream of text chunks. What one
exchange does is Runtime.llm()'s (runtime.py); which Runtime is ambient is
current_runtime()'s. Start at llm().
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar, overload

from pydantic import BaseModel

from openprogram.models.model import Model
from openprogram.runtime.runtime import current_runtime
from openprogram.runtime.streaming import PendingStream, TextStream, ToolTextStream

__all__ = ["allm", "llm"]

T = TypeVar("T", bound=BaseModel)


@overload
def llm(
    content: object,
    *,
    response_format: None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: Literal[False] = False,
    **kwargs: Any,
) -> str: ...


@overload
def llm(
    content: object,
    *,
    response_format: type[T],
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: Literal[False] = False,
    **kwargs: Any,
) -> T: ...


@overload
def llm(
    content: object,
    *,
    response_format: None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: Literal[True],
    **kwargs: Any,
) -> TextStream | ToolTextStream: ...


@overload
def llm(
    content: object,
    *,
    response_format: type[T] | None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: bool = False,
    **kwargs: Any,
) -> str | T | TextStream | ToolTextStream: ...


def llm(
    content: object,
    *,
    response_format: type[T] | None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: bool = False,
    **kwargs: Any,
) -> str | T | TextStream | ToolTextStream:
    """Ask the ambient runtime's model (see Runtime.llm): the reply text; with
    `response_format=Model`, a validated Model instance; with `stream=True`, the text as
    chunks (a TextStream, or a ToolTextStream with tools). Records one llm node per
    exchange, and one code node per tool call."""
    return current_runtime().llm(
        content,
        response_format=response_format,
        model=model,
        render_range=render_range,
        tools=tools,
        max_tool_turns=max_tool_turns,
        stream=stream,
        _stacklevel=3,
        **kwargs,
    )


@overload
def allm(
    content: object,
    *,
    response_format: None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: Literal[False] = False,
    **kwargs: Any,
) -> Coroutine[Any, Any, str]: ...


@overload
def allm(
    content: object,
    *,
    response_format: type[T],
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: Literal[False] = False,
    **kwargs: Any,
) -> Coroutine[Any, Any, T]: ...


@overload
def allm(
    content: object,
    *,
    response_format: None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: Literal[True],
    **kwargs: Any,
) -> PendingStream: ...


@overload
def allm(
    content: object,
    *,
    response_format: type[T] | None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: bool = False,
    **kwargs: Any,
) -> Coroutine[Any, Any, str | T] | PendingStream: ...


def allm(
    content: object,
    *,
    response_format: type[T] | None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: bool = False,
    **kwargs: Any,
) -> Coroutine[Any, Any, str | T] | PendingStream:
    """Async twin of llm(): `await allm(...)` gives what llm() returns; with stream=True,
    `async for chunk in allm(...)` works with or without `await` (see Runtime.allm)."""
    return current_runtime().allm(
        content,
        response_format=response_format,
        model=model,
        render_range=render_range,
        tools=tools,
        max_tool_turns=max_tool_turns,
        stream=stream,
        **kwargs,
    )
