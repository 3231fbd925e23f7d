"""How a step is written once for llm() and allm(): effects and their two drivers.

A step (an exchange, its retries, the tool rounds, compaction, opening a stream) is a
generator that yields the I/O it needs as effects — call the model, open its stream,
sleep before a retry, run tool calls, run the compactor — and gets each outcome back
(a value sent, or the exception thrown in). `drive` does the effects blocking in this
thread (llm()), `adrive` awaits them (allm()). Start at drive().
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from typing import Any, NoReturn, Protocol, TypeVar

from openprogram.agentic.function import is_async
from openprogram.core.dag import Node
from openprogram.errors import ModelError
from openprogram.models.model import Model, ModelReply, ModelRequest, ToolCall

R = TypeVar("R")
Step = Generator["Effect", Any, R]
"""A step: yields effects, receives their outcomes, returns its result."""


class Driver(Protocol):
    """What a retried request waits on and records through (retrying(); _exchange.py's
    Exchanges): the clock, the rate limits' waits, the backoff, the failure."""

    @property
    def max_retries(self) -> int: ...

    def sleep(self, seconds: float) -> None: ...

    def asleep(self, seconds: float) -> Awaitable[None]: ...

    def rate_waits(self, node: Node) -> Iterator[float]: ...

    def retry_delay(self, exc: ModelError, attempt: int, node: Node) -> float | None: ...

    def failed(self, node: Node, exc: Exception) -> Exception: ...


class Effect:
    """One piece of I/O a step needs: `run` does it blocking, `arun` awaits it."""

    __slots__ = ()

    def run(self) -> object:  # pragma: no cover - every effect overrides it
        raise NotImplementedError

    async def arun(self) -> object:  # pragma: no cover
        raise NotImplementedError


class Request(Effect):
    """A request to the model (what `retrying` retries)."""

    __slots__ = ("model", "request")

    def __init__(self, model: Model, request: ModelRequest) -> None:
        self.model = model
        self.request = request


class Complete(Request):
    """Ask the model for its whole reply (a ModelReply)."""

    __slots__ = ()

    def run(self) -> ModelReply:
        return self.model.complete(self.request)

    async def arun(self) -> ModelReply:
        return await self.model.acomplete(self.request)


class Open(Request):
    """Open the model's stream and read its first item (errors before the first chunk are
    retried like a whole reply's); the outcome is the source, that item first. A model
    without `stream` gives its whole reply as the one item; under allm() a sync stream
    is read on worker threads."""

    __slots__ = ()

    def run(self) -> Iterator[Any]:
        opener = getattr(self.model, "stream", None)
        source = iter(opener(self.request) if opener else [self.model.complete(self.request)])
        return prepend(next(source, None), source)

    async def arun(self) -> AsyncIterator[Any]:
        opener = getattr(self.model, "stream", None)
        if opener is None:
            source = aiterate([await self.model.acomplete(self.request)])
        else:
            source = threaded(opener(self.request))
        return aprepend(await anext(source, None), source)


class Replayed(Effect):
    """A replayed exchange's recorded text as a stream source, in one piece."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def run(self) -> Iterator[str]:
        return iter([self.text])

    async def arun(self) -> AsyncIterator[str]:
        return aiterate([self.text])


class Sleep(Effect):
    """Wait before the next attempt, on the Driver's clock (`sleep`, or `asleep` under
    allm())."""

    __slots__ = ("driver", "seconds")

    def __init__(self, seconds: float, driver: Driver) -> None:
        self.seconds = seconds
        self.driver = driver

    def run(self) -> None:
        self.driver.sleep(self.seconds)

    async def arun(self) -> None:
        await self.driver.asleep(self.seconds)


class ToolRunner(Protocol):
    """What runs a round of tool calls (tools.py's Toolbox, a layer above): the ids of
    their code nodes."""

    def run(self, calls: Sequence[ToolCall], asked_by: Node) -> list[str]: ...

    async def arun(self, calls: Sequence[ToolCall], asked_by: Node) -> list[str]: ...


class RunTools(Effect):
    """Run one round of tool calls (in order; concurrently under allm()); their node ids."""

    __slots__ = ("asked_by", "calls", "toolbox")

    def __init__(self, toolbox: ToolRunner, calls: list[ToolCall], asked_by: Node) -> None:
        self.toolbox = toolbox
        self.calls = calls
        self.asked_by = asked_by

    def run(self) -> list[str]:
        return self.toolbox.run(self.calls, self.asked_by)

    async def arun(self) -> list[str]:
        return await self.toolbox.arun(self.calls, self.asked_by)


class Call(Effect):
    """Call a function with one argument (the compactor): under allm() an async one is
    awaited and a sync one runs on a worker thread (in this context)."""

    __slots__ = ("argument", "function")

    def __init__(self, function: Callable[[Any], Any], argument: object) -> None:
        self.function = function
        self.argument = argument

    def run(self) -> object:
        return self.function(self.argument)

    async def arun(self) -> object:
        if is_async(self.function):
            return await self.function(self.argument)
        return await asyncio.to_thread(self.function, self.argument)


class _Driving:
    """A step being driven: the outcome of its last effect, and its next effect."""

    __slots__ = ("effect", "error", "result", "step", "value")

    def __init__(self, step: Step[Any]) -> None:
        self.step = step
        self.value: Any = None
        self.error: BaseException | None = None
        self.effect: Effect
        self.result: Any = None

    def advance(self) -> bool:
        """Hand the step the last outcome: True with its next effect in `.effect`, False
        once it returned (its result in `.result`)."""
        value, error = self.value, self.error
        self.value = self.error = None
        try:
            self.effect = self.step.send(value) if error is None else self.step.throw(error)
        except StopIteration as stop:
            self.result = stop.value
            return False
        return True


def drive(step: Step[R]) -> R:
    """Run a step in this thread, each effect blocking (llm())."""
    driving = _Driving(step)
    while driving.advance():
        try:
            driving.value = driving.effect.run()
        except BaseException as exc:
            driving.error = exc
    return driving.result  # type: ignore[no-any-return]


async def adrive(step: Step[R]) -> R:
    """Run a step in this task, awaiting each effect (allm())."""
    driving = _Driving(step)
    while driving.advance():
        try:
            driving.value = await driving.effect.arun()
        except BaseException as exc:
            driving.error = exc
    return driving.result  # type: ignore[no-any-return]


def retrying(driver: Driver, node: Node, effect: Request) -> Step[Any]:
    """Do `effect` (a model request), retrying transient ModelErrors with backoff until
    `driver.max_retries` runs out; any failure is recorded on `node` and raised."""
    for attempt in range(driver.max_retries + 1):
        for wait in driver.rate_waits(node):  # RateLimit callbacks: queue, never fail
            yield Sleep(wait, driver)
        try:
            return (yield effect)
        except ModelError as exc:
            delay = driver.retry_delay(exc, attempt, node)
            if delay is None:
                reraise(driver.failed(node, exc), exc)
            yield Sleep(delay, driver)
        except Exception as exc:
            reraise(driver.failed(node, exc), exc)
    raise AssertionError("unreachable")  # pragma: no cover


def reraise(error: Exception, cause: Exception) -> NoReturn:
    """Raise `error`, chained to `cause` unless it is the cause itself."""
    if error is cause:
        raise cause
    raise error from cause


def prepend(first: object, rest: Iterator[Any]) -> Iterator[Any]:
    """`first` (unless None), then the rest."""
    if first is not None:
        yield first
    yield from rest


async def aprepend(first: object, rest: AsyncIterator[Any]) -> AsyncIterator[Any]:
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
