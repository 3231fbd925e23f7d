"""Streamed replies: TextStream and AsyncTextStream, what `llm(..., stream=True)` returns.

Owns reading a model's chunks: the llm node completes with the whole text when the
stream ends, and is marked error with the partial text kept when the stream breaks off
or the consumer stops early. Callbacks watch chunks through `on_llm_chunk`. runtime.py
opens the stream (with retries before the first chunk). Start at TextStream.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from openprogram import _context
from openprogram.callbacks.base import notify
from openprogram.dag import Node
from openprogram.models import ModelReply

if TYPE_CHECKING:
    from openprogram.runtime import Runtime

__all__ = ["AsyncTextStream", "TextStream"]


class _Stream:
    """What both streams share: the chunks so far and how the node is finished."""

    def __init__(self, node: Node, runtime: Runtime, *, finished: bool = False) -> None:
        self.node = node
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
            self._runtime._stream_ended, self.node, "".join(self._parts), self._reply
        )

    def _break(self, exc: BaseException | None) -> Exception | None:
        if self._done:
            return None
        self._done = True
        return self._context.run(  # type: ignore[no-any-return]
            self._runtime._stream_broken, self.node, "".join(self._parts), exc
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
        runtime: Runtime,
        *,
        finished: bool = False,
    ) -> None:
        super().__init__(node, runtime, finished=finished)
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
        runtime: Runtime,
        *,
        finished: bool = False,
    ) -> None:
        super().__init__(node, runtime, finished=finished)
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
