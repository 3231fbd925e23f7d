"""Streamed replies: what `llm(..., stream=True)` and `allm(..., stream=True)` return.

Owns reading a model's chunks: the llm node completes with the whole text when the
stream ends, and is marked error with the partial text kept when the stream breaks off
or the consumer stops early; with tools, the tool turns run between the streamed turns
(ToolTextStream). Callbacks watch chunks through `on_llm_chunk`. runtime.py calls
open_stream (retries before the first chunk), passing itself as the `Exchange` a
stream finishes through and runs tools through. Start at open_stream().
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, NoReturn, Protocol

from openprogram import _context
from openprogram.callbacks.base import notify
from openprogram.dag import Node
from openprogram.errors import ModelError, ModelUnavailable, RunError
from openprogram.models import Model, ModelReply, ModelRequest, ToolCall
from openprogram.usage import Usage

__all__ = [
    "AsyncTextStream",
    "AsyncToolTextStream",
    "PendingStream",
    "TextStream",
    "ToolTextStream",
    "aopen_stream",
    "open_stream",
]


class Exchange(Protocol):
    """What a stream uses of the Runtime that opened it (runtime.py, the layer above):
    the node and request of the exchange, retries, and how the node is finished."""

    @property
    def callbacks(self) -> Sequence[Any]: ...

    @property
    def max_retries(self) -> int: ...

    @property
    def _sleep(self) -> Callable[[float], None]: ...

    @property
    def _asleep(self) -> Callable[[float], Awaitable[Any]]: ...

    def _prepare(
        self,
        content: Any,
        model: Model,
        response_format: Any,
        options: dict[str, Any],
        loop: Any = None,
    ) -> tuple[Node, ModelRequest | None]: ...

    def _run_tools(self, node: Node, calls: list[ToolCall], loop: Any) -> None: ...

    async def _arun_tools(self, node: Node, calls: list[ToolCall], loop: Any) -> None: ...

    def _retry_delay(self, exc: ModelError, attempt: int, node: Node) -> float | None: ...

    def _failed(self, node: Node, exc: Exception) -> Exception: ...

    def _finish(self, node: Node, reply: ModelReply) -> ModelReply: ...

    def _mark_error(self, node: Node, error: str) -> None: ...


class _Stream:
    """What both streams share: the chunks so far and how the node is finished."""

    def __init__(
        self, node: Node, runtime: Exchange, *, finished: bool = False, tools: bool = False
    ) -> None:
        self.node = node
        self._tools = tools
        self._runtime = runtime
        self._parts: list[str] = []
        self._reply: ModelReply | None = None
        self._done = finished
        self._final: str | None = str(node.output or "") if finished else None
        self._context = contextvars.copy_context()
        self._run = _context.current_session().dag.top_level_ancestor(node)

    @property
    def text(self) -> str:
        """The text so far; once the stream ended, the whole reply (after on_llm_end)."""
        if self._final is not None:
            return self._final
        return "".join(self._parts)

    @property
    def done(self) -> bool:
        """Whether the stream ended, broke off or was closed."""
        return self._done

    def _take(self, item: str | ModelReply) -> str | None:
        """The chunk to hand out for one item of the source (None: nothing to hand out)."""
        if isinstance(item, ModelReply):
            self._reply = item
            if self._parts or not item.text:
                return None
            chunk = item.text  # a model that does not stream: its reply is one chunk
        else:
            chunk = str(item)
        if not chunk:
            return None
        self._parts.append(chunk)
        if self._runtime.callbacks:
            self._context.run(
                notify, self._runtime.callbacks, "on_llm_chunk", self.node, chunk,
                record_on=self._run,
            )  # fmt: skip
        return chunk

    def _end(self) -> None:
        if self._done:
            return
        self._done = True
        self._final = self._context.run(
            _ended, self._runtime, self.node, "".join(self._parts), self._reply, self._tools
        )

    def _break(self, exc: BaseException | None) -> Exception | None:
        if self._done:
            return None
        self._done = True
        return self._context.run(  # type: ignore[no-any-return]
            _broken, self._runtime, self.node, "".join(self._parts), exc
        )

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        return f"{type(self).__name__}({state}, {len(self.text)} characters, node={self.node.id})"


class TextStream(_Stream):
    """The reply of `llm(..., stream=True)` as text chunks: iterate it once.

    `.text` is the text so far (the whole reply once it ended), `.node` the llm node.
    Stopping early (`break`, `close()`, leaving a `with` block, or dropping the stream)
    marks the node as error with the partial text kept. A provider failure mid-stream
    raises a ModelError after marking the node the same way.
    """

    def __init__(
        self,
        source: Iterator[str | ModelReply],
        node: Node,
        runtime: Exchange,
        *,
        finished: bool = False,
        tools: bool = False,
    ) -> None:
        super().__init__(node, runtime, finished=finished, tools=tools)
        self._source = source

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        while True:
            try:
                item = next(self._source)
            except StopIteration:
                self._end()
                raise
            except BaseException as exc:
                error = self._break(exc)
                if error is None or error is exc:
                    raise
                raise error from exc
            chunk = self._take(item)
            if chunk is not None:
                return chunk

    def close(self) -> None:
        """Stop reading; the node is marked as stopped early unless the stream ended."""
        self._break(None)
        close = getattr(self._source, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> TextStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        if not self._done:
            with contextlib.suppress(Exception):  # at interpreter exit the DAG may be gone
                self.close()


class AsyncTextStream(_Stream):
    """The reply of `await allm(..., stream=True)` as text chunks: `async for` it once.

    As TextStream; `aclose()` and `async with` stop early.
    """

    def __init__(
        self,
        source: AsyncIterator[str | ModelReply],
        node: Node,
        runtime: Exchange,
        *,
        finished: bool = False,
        tools: bool = False,
    ) -> None:
        super().__init__(node, runtime, finished=finished, tools=tools)
        self._source = source

    def __aiter__(self) -> AsyncTextStream:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                item = await anext(self._source)
            except StopAsyncIteration:
                self._end()
                raise
            except BaseException as exc:
                error = self._break(exc)
                if error is None or error is exc:
                    raise
                raise error from exc
            chunk = self._take(item)
            if chunk is not None:
                return chunk

    async def aclose(self) -> None:
        """Stop reading; the node is marked as stopped early unless the stream ended."""
        self._break(None)
        close = getattr(self._source, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> AsyncTextStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # at interpreter exit the DAG may be gone
            self._break(None)


def open_stream(
    runtime: Exchange, content: Any, model: Model, options: dict[str, Any], loop: Any = None
) -> TextStream:
    """Create the llm node and open the model's stream, retrying transient errors until
    the first chunk arrives; a replayed exchange streams its recorded text. `loop` (a
    ToolLoop) offers its tools: a reply may then ask for them."""
    node, request = runtime._prepare(content, model, None, options, loop)
    tools = loop is not None and loop.toolbox is not None
    if tools:
        loop.asked(node)
    if request is None:  # replayed: the recorded text, in one piece
        return TextStream(iter([str(node.output or "")]), node, runtime, finished=True)
    opener = getattr(model, "stream", None)
    for attempt in range(runtime.max_retries + 1):
        try:
            source = iter(opener(request) if opener else [model.complete(request)])
            first = next(source, None)
            break
        except ModelError as exc:
            delay = runtime._retry_delay(exc, attempt, node)
            if delay is None:
                _reraise(runtime._failed(node, exc), exc)
            runtime._sleep(delay)
        except Exception as exc:
            _reraise(runtime._failed(node, exc), exc)
    return TextStream(prepend(first, source), node, runtime, tools=tools)


async def aopen_stream(
    runtime: Exchange, content: Any, model: Model, options: dict[str, Any], loop: Any = None
) -> AsyncTextStream:
    """Async twin of open_stream; a sync model stream is read on worker threads."""
    node, request = runtime._prepare(content, model, None, options, loop)
    tools = loop is not None and loop.toolbox is not None
    if tools:
        loop.asked(node)
    if request is None:
        return AsyncTextStream(aiterate([str(node.output or "")]), node, runtime, finished=True)
    opener = getattr(model, "stream", None)
    for attempt in range(runtime.max_retries + 1):
        try:
            if opener is None:
                source = aiterate([await model.acomplete(request)])
            else:
                source = threaded(opener(request))
            first = await anext(source, None)
            break
        except ModelError as exc:
            delay = runtime._retry_delay(exc, attempt, node)
            if delay is None:
                _reraise(runtime._failed(node, exc), exc)
            await runtime._asleep(delay)
        except Exception as exc:
            _reraise(runtime._failed(node, exc), exc)
    return AsyncTextStream(aprepend(first, source), node, runtime, tools=tools)


def _ended(
    runtime: Exchange, node: Node, text: str, reply: ModelReply | None, tools: bool = False
) -> str:
    """Complete a stream's node with the whole text; the text after on_llm_end. A reply
    that asks for tools when none were offered is recorded, marked as an error and
    raised as ModelError: never handed out as an empty or partial text."""
    calls = reply.tool_calls if reply is not None else None
    final = ModelReply(
        text=text, usage=reply.usage if reply is not None else Usage(), tool_calls=calls
    )
    finished = runtime._finish(node, final)
    if calls and not tools:
        names = ", ".join(call.name for call in calls)
        message = (
            f"the model answered a streamed llm() call with tool calls ({names}); "
            "this call offers no tools: pass llm(..., tools=[...], stream=True) to run "
            "them, or ask for a text answer in the prompt"
        )
        runtime._mark_error(node, message)
        raise ModelError(message, node_id=node.id)
    return finished.text


class _Turns:
    """What both tool streams share: the turns so far, and their text."""

    _turn: _Stream

    def __init__(self, runtime: Exchange, model: Model, options: dict[str, Any], loop: Any):
        self._runtime = runtime
        self._model = model
        self._options = options
        self._loop = loop
        self._texts: list[str] = []
        self._done = False

    @property
    def text(self) -> str:
        """The text streamed so far, of every turn (the whole of it once done)."""
        return "".join(self._texts) + self._turn.text

    @property
    def node(self) -> Node:
        """The llm node of the current (finally: the last) turn."""
        return self._turn.node

    @property
    def done(self) -> bool:
        return self._done

    def _calls(self) -> list[ToolCall]:
        """The tool calls the turn that just ended asked for (live or replayed)."""
        return [ToolCall.from_json(c) for c in self._turn.node.meta.get("tool_calls") or ()]

    def __repr__(self) -> str:
        state = "done" if self._done else "open"
        turns = len(self._texts) + 1
        return f"{type(self).__name__}({state}, {turns} turn(s), node={self.node.id})"


class ToolTextStream(_Turns):
    """The reply of `llm(..., tools=[...], stream=True)`: the text of every turn that has
    text, as chunks; the tool calls a turn asks for run (recorded as usual) before the
    next turn streams. Iterate it once.

    `.text` is the text so far of all turns, `.node` the current turn's llm node.
    Stopping early (`break`, `close()`, leaving a `with` block) marks the current turn's
    node as TextStream does, and no further turn is asked.
    """

    def __init__(
        self, runtime: Exchange, content: Any, model: Model, options: dict[str, Any], loop: Any
    ) -> None:
        super().__init__(runtime, model, options, loop)
        self._turn: TextStream = open_stream(  # type: ignore[assignment]  # narrower
            runtime, content, model, options, loop
        )

    def __iter__(self) -> ToolTextStream:
        return self

    def __next__(self) -> str:
        while not self._done:
            try:
                return next(self._turn)
            except StopIteration:
                calls = self._calls()
                if not calls:
                    self._done = True
                    break
                self._runtime._run_tools(self._turn.node, calls, self._loop)
                self._texts.append(self._turn.text)
                self._turn = open_stream(self._runtime, [], self._model, self._options, self._loop)
            except BaseException:
                self._done = True
                raise
        raise StopIteration

    def close(self) -> None:
        """Stop reading: the current turn's node is marked as stopped early (unless it
        ended) and no further turn is asked."""
        self._done = True
        self._turn.close()

    def __enter__(self) -> ToolTextStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncToolTextStream(_Turns):
    """The async twin of ToolTextStream (`allm(..., tools=[...], stream=True)`); the tool
    calls of one turn run concurrently."""

    _turn: AsyncTextStream  # type: ignore[assignment]  # narrower than _Turns' _Stream

    def __aiter__(self) -> AsyncToolTextStream:
        return self

    async def _open(self, content: Any) -> AsyncToolTextStream:
        self._turn = await aopen_stream(
            self._runtime, content, self._model, self._options, self._loop
        )
        return self

    async def __anext__(self) -> str:
        while not self._done:
            try:
                return await anext(self._turn)
            except StopAsyncIteration:
                calls = self._calls()
                if not calls:
                    self._done = True
                    break
                await self._runtime._arun_tools(self._turn.node, calls, self._loop)
                self._texts.append(self._turn.text)
                await self._open([])
            except BaseException:
                self._done = True
                raise
        raise StopAsyncIteration

    async def aclose(self) -> None:
        """As ToolTextStream.close()."""
        self._done = True
        await self._turn.aclose()

    async def __aenter__(self) -> AsyncToolTextStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class PendingStream:
    """What `allm(..., stream=True)` returns: `async for chunk in allm(...)` reads it
    directly, and `await allm(...)` gives the opened stream (AsyncTextStream, or
    AsyncToolTextStream with tools). The llm node is created when it is first awaited
    or iterated, in that task's context."""

    def __init__(self, opener: Callable[[], Awaitable[Any]]) -> None:
        self._opener = opener
        self._stream: Any = None

    async def _opened(self) -> Any:
        if self._stream is None:
            self._stream = await self._opener()
        return self._stream

    def __await__(self) -> Any:
        return self._opened().__await__()

    def __aiter__(self) -> PendingStream:
        return self

    async def __anext__(self) -> str:
        stream = await self._opened()
        return await anext(stream)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        """Stop reading (see AsyncTextStream.aclose); nothing happens if never opened."""
        if self._stream is not None:
            await self._stream.aclose()

    async def __aenter__(self) -> PendingStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"PendingStream({self._stream!r})" if self._stream else "PendingStream(not opened)"

    def __del__(self) -> None:
        if self._stream is None:  # what an un-awaited coroutine would have said
            with contextlib.suppress(Exception):
                warnings.warn(
                    "allm(..., stream=True) was never read, so nothing was asked: "
                    "`async for chunk in allm(...)`, or `stream = await allm(...)`",
                    RuntimeWarning,
                    stacklevel=2,
                )


async def aopen_tool_stream(
    runtime: Exchange, content: Any, model: Model, options: dict[str, Any], loop: Any
) -> AsyncToolTextStream:
    """Open the first turn of `allm(..., tools=[...], stream=True)`."""
    return await AsyncToolTextStream(runtime, model, options, loop)._open(content)


def _broken(
    runtime: Exchange, node: Node, text: str, exc: BaseException | None
) -> Exception | None:
    """Mark a stream's node as failed, keeping the partial text; the error to raise
    (None when the consumer stopped reading)."""
    dag = _context.current_session().dag
    if exc is None:
        reason = f"the consumer stopped reading after {len(text)} characters"
        dag.complete(node, text, status="error", error=reason)
        return None
    dag.complete(
        node,
        text,
        status="error",
        error=f"{type(exc).__name__}: {exc} (the stream broke off after {len(text)} characters)",
    )
    if not isinstance(exc, Exception):
        return None
    if isinstance(exc, RunError) and exc.node_id is None:
        exc.node_id = node.id
    if isinstance(exc, ModelError):
        return exc
    return ModelUnavailable(
        f"the stream broke off after {len(text)} characters: {type(exc).__name__}: {exc}",
        node_id=node.id,
    )


def _reraise(error: Exception, cause: Exception) -> NoReturn:
    if error is cause:
        raise cause
    raise error from cause


def prepend(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    """`first` (unless None), then the rest."""
    if first is not None:
        yield first
    yield from rest


async def aprepend(first: Any, rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
    if first is not None:
        yield first
    async for item in rest:
        yield item


async def aiterate(items: Iterable[Any]) -> AsyncIterator[Any]:
    for item in items:
        yield item


_END = object()


async def threaded(source: Iterable[Any]) -> AsyncIterator[Any]:
    """A blocking iterator (a model's sync stream) read on worker threads."""
    iterator = iter(source)
    try:
        while True:
            item = await asyncio.to_thread(next, iterator, _END)
            if item is _END:
                return
            yield item
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            await asyncio.to_thread(close)
