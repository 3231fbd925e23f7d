"""Streamed replies: what `llm(..., stream=True)` and `allm(..., stream=True)` return.

Owns reading a model's chunks: the llm node completes with the whole text when the
stream ends; when it breaks off or the consumer stops early (or closes or drops it) the
node is marked error with the partial text kept, and the exchange is tallied at its
estimated usage. With tools, the tool turns run between the streamed turns
(ToolTextStream). Callbacks watch chunks through `on_llm_chunk`. runtime.py drives
open_stream, a step (_step.py: retries before the first chunk), passing its Exchanges
(the `Exchange` a stream records through) and the step run between tool turns. Start
at open_stream().
"""

from __future__ import annotations

import contextlib
import contextvars
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from typing import Any, Literal, NoReturn, Protocol, Self, TypeVar, overload

from pydantic import BaseModel

from openprogram.callbacks.base import notify
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.core.usage import Usage
from openprogram.errors import ModelError, ModelUnavailable, RunError
from openprogram.models.model import Model, ModelReply, ModelRequest, ToolCall
from openprogram.runtime._ledger import Ledger, estimated_usage
from openprogram.runtime._step import Driver, Open, Replayed, Step, adrive, drive, retrying

__all__ = [
    "AsyncTextStream",
    "AsyncToolTextStream",
    "PendingStream",
    "TextStream",
    "ToolRounds",
    "ToolTextStream",
    "open_stream",
]


class _Settings(Protocol):
    @property
    def callbacks(self) -> Sequence[Any]: ...


class _Toolbox(Protocol):
    @property
    def specs(self) -> list[dict[str, Any]]: ...


class ToolRounds(Protocol):
    """What a stream and its exchange use of their llm() call's tool loop (tools.py's
    ToolLoop, beside this module): its tools (None: none offered), the llm nodes of its
    turns so far, and noting a new turn's node."""

    @property
    def toolbox(self) -> _Toolbox | None: ...

    @property
    def nodes(self) -> list[str]: ...

    def asked(self, node: Node) -> None: ...


class Exchange(Driver, Protocol):
    """What a stream writes through (_exchange.py's Exchanges, the layer above): the
    node and request of a turn, retries (the Driver's), how the node is finished, and
    the tally."""

    @property
    def runtime(self) -> _Settings: ...

    @property
    def ledger(self) -> Ledger: ...

    def prepare(
        self,
        content: object,
        model: Model,
        response_format: type[BaseModel] | None,
        options: dict[str, Any],
        loop: ToolRounds | None = None,
    ) -> tuple[Node, ModelRequest | None]: ...

    def finish(self, node: Node, reply: ModelReply) -> ModelReply: ...

    def mark_error(self, node: Node, error: str) -> None: ...


BetweenTurns = Callable[[Node, list[ToolCall]], Step[None]]
"""After a streamed turn that asked for tools: the step running them (and compacting the
loop's history), given by runtime.py."""


class _Stream:
    """What both streams share: the source of chunks (an iterator, or an async one), the
    chunks so far and how the node is finished."""

    def __init__(
        self,
        source: Any,
        node: Node,
        runtime: Exchange,
        *,
        finished: bool = False,
        tools: bool = False,
        estimate: Callable[[str], Usage] | None = None,
    ) -> None:
        self._source = source
        self._estimate = estimate
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
        if self._runtime.runtime.callbacks:
            self._context.run(
                notify, self._runtime.runtime.callbacks, "on_llm_chunk", self.node, chunk,
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
        return self._context.run(
            _broken, self._runtime, self.node, "".join(self._parts), exc, self._estimate
        )

    def _source_raised(self, exc: BaseException, end: type[BaseException]) -> NoReturn:
        """Reading the source raised `exc`: the stream ended (`end`: StopIteration or
        StopAsyncIteration) or broke off (the node marked; the error to raise)."""
        if isinstance(exc, end):
            self._end()
            raise exc
        error = self._break(exc)
        if error is None or error is exc:
            raise exc
        raise error from exc

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

    _source: Iterator[str | ModelReply]

    def __iter__(self) -> TextStream:
        return self

    def __next__(self) -> str:
        chunk = None
        while chunk is None:
            try:
                item = next(self._source)
            except BaseException as exc:
                self._source_raised(exc, StopIteration)
            chunk = self._take(item)
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

    _source: AsyncIterator[str | ModelReply]

    def __aiter__(self) -> AsyncTextStream:
        return self

    async def __anext__(self) -> str:
        chunk = None
        while chunk is None:
            try:
                item = await anext(self._source)
            except BaseException as exc:
                self._source_raised(exc, StopAsyncIteration)
            chunk = self._take(item)
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


@overload
def open_stream(
    runtime: Exchange,
    content: object,
    model: Model,
    options: dict[str, Any],
    loop: ToolRounds | None = None,
    asynchronous: Literal[False] = False,
    between_turns: BetweenTurns | None = None,
) -> Step[TextStream | ToolTextStream]: ...


@overload
def open_stream(
    runtime: Exchange,
    content: object,
    model: Model,
    options: dict[str, Any],
    loop: ToolRounds | None,
    asynchronous: Literal[True],
    between_turns: BetweenTurns | None = None,
) -> Step[AsyncTextStream | AsyncToolTextStream]: ...


@overload
def open_stream(
    runtime: Exchange,
    content: object,
    model: Model,
    options: dict[str, Any],
    loop: ToolRounds | None,
    asynchronous: bool,
    between_turns: BetweenTurns | None = None,
) -> Step[TextStream | ToolTextStream | AsyncTextStream | AsyncToolTextStream]: ...


def open_stream(
    runtime: Exchange,
    content: object,
    model: Model,
    options: dict[str, Any],
    loop: ToolRounds | None = None,
    asynchronous: bool = False,
    between_turns: BetweenTurns | None = None,
) -> Step[TextStream | ToolTextStream | AsyncTextStream | AsyncToolTextStream]:
    """The step opening `llm(..., stream=True)`'s stream (TextStream; with tools
    ToolTextStream; the Async ones for allm()): its first turn's llm node and the model's
    stream, retrying transient errors until the first chunk arrives. `loop` (a ToolLoop)
    offers its tools: a reply may then ask for them."""
    if loop is not None and loop.toolbox is not None:
        assert between_turns is not None  # a tool loop's streams run tools between turns
        if asynchronous:
            return AsyncToolTextStream(runtime, model, options, loop, between_turns).open(content)
        return ToolTextStream(runtime, model, options, loop, between_turns).open(content)
    if asynchronous:
        return _turn(AsyncTextStream, runtime, content, model, options, loop)
    return _turn(TextStream, runtime, content, model, options, loop)


S = TypeVar("S", bound=_Stream)


def _turn(
    kind: type[S],
    runtime: Exchange,
    content: object,
    model: Model,
    options: dict[str, Any],
    loop: ToolRounds | None,
) -> Step[S]:
    """Create the llm node and open the model's stream as a `kind` stream; a replayed
    exchange streams its recorded text."""
    node, request = runtime.prepare(content, model, None, options, loop)
    tools = loop is not None and loop.toolbox is not None
    if loop is not None and tools:
        loop.asked(node)
    if request is None:  # replayed: the recorded text, in one piece
        source = yield Replayed(str(node.output or ""))
        return kind(source, node, runtime, finished=True)
    source = yield from retrying(runtime, node, Open(model, request))
    return kind(
        source,
        node,
        runtime,
        tools=tools,
        estimate=lambda text: estimated_usage(model, request, text),
    )


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
    finished = runtime.finish(node, final)
    if calls and not tools:
        names = ", ".join(call.name for call in calls)
        message = (
            f"the model answered a streamed llm() call with tool calls ({names}); "
            "this call offers no tools: pass llm(..., tools=[...], stream=True) to run "
            "them, or ask for a text answer in the prompt"
        )
        runtime.mark_error(node, message)
        raise ModelError(message, node_id=node.id)
    return finished.text


class _Turns:
    """What both tool streams share: the turns so far, and their text."""

    _turn: _Stream
    _kind: type[_Stream]
    """The stream class of one turn."""

    def __init__(
        self,
        runtime: Exchange,
        model: Model,
        options: dict[str, Any],
        loop: ToolRounds,
        between_turns: BetweenTurns,
    ) -> None:
        self._runtime = runtime
        self._between_turns = between_turns
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

    def open(self, content: object) -> Step[Self]:
        """The step opening a turn (the first with `content`); itself."""
        self._turn = yield from _turn(
            self._kind, self._runtime, content, self._model, self._options, self._loop
        )
        return self

    def _next_turn(self) -> Step[None]:
        """The step after a turn ended: the tool calls it asked for (live or replayed)
        run and the next turn opens; when it asked for none, the stream is done."""
        calls = [ToolCall.from_json(c) for c in self._turn.node.meta.get("tool_calls") or ()]
        if not calls:
            self._done = True
            return
        yield from self._between_turns(self._turn.node, calls)
        self._texts.append(self._turn.text)
        yield from self.open([])

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

    _kind = TextStream
    _turn: TextStream

    def __iter__(self) -> ToolTextStream:
        return self

    def __next__(self) -> str:
        while not self._done:
            try:
                return next(self._turn)
            except StopIteration:
                drive(self._next_turn())
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

    _kind = AsyncTextStream
    _turn: AsyncTextStream

    def __aiter__(self) -> AsyncToolTextStream:
        return self

    async def __anext__(self) -> str:
        while not self._done:
            try:
                return await anext(self._turn)
            except StopAsyncIteration:
                await adrive(self._next_turn())
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

    def __init__(
        self, opener: Callable[[], Awaitable[AsyncTextStream | AsyncToolTextStream]]
    ) -> None:
        self._opener = opener
        self._stream: AsyncTextStream | AsyncToolTextStream | None = None
        self._asked = False

    async def _opened(self) -> AsyncTextStream | AsyncToolTextStream:
        if self._stream is None:
            self._asked = True
            self._stream = await self._opener()
        return self._stream

    def __await__(self) -> Generator[Any, None, AsyncTextStream | AsyncToolTextStream]:
        return self._opened().__await__()

    def __aiter__(self) -> PendingStream:
        return self

    async def __anext__(self) -> str:
        stream = await self._opened()
        return await anext(stream)

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
        if not self._asked:  # what an un-awaited coroutine would have said (not a refusal)
            with contextlib.suppress(Exception):
                warnings.warn(
                    "allm(..., stream=True) was never read, so nothing was asked: "
                    "`async for chunk in allm(...)`, or `stream = await allm(...)`",
                    RuntimeWarning,
                    stacklevel=2,
                )


def _broken(
    runtime: Exchange,
    node: Node,
    text: str,
    exc: BaseException | None,
    estimate: Callable[[str], Usage] | None = None,
) -> Exception | None:
    """Tally a stream that did not end (its request was sent: `estimate` says what it is
    counted as) and mark its node as failed, keeping the partial text; the error to
    raise (None when the consumer stopped reading)."""
    dag = _context.current_session().dag
    if exc is None:
        reason = f"the consumer stopped reading after {len(text)} characters"
    else:
        reason = f"{type(exc).__name__}: {exc} (the stream broke off after {len(text)} characters)"
    try:
        if estimate is not None:
            runtime.ledger.count(node, estimate(text))
    finally:  # a strict observer's error still leaves the node marked
        dag.complete(node, text, status="error", error=reason)
    if exc is None or not isinstance(exc, Exception):
        return None
    if isinstance(exc, RunError) and exc.node_id is None:
        exc.node_id = node.id
    if isinstance(exc, ModelError):
        return exc
    return ModelUnavailable(
        f"the stream broke off after {len(text)} characters: {type(exc).__name__}: {exc}",
        node_id=node.id,
    )
