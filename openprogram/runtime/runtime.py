"""Runtime: how a model is asked from inside an agentic function, one exchange at a time.

Owns one exchange end to end: the llm node, the render of what the model sees, the
callbacks around it, retries with backoff, usage and cost (tallied by _ledger.py, which
also reserves requests on their way), structured output (validated, one repair
re-ask), the tool loop (tools run in tools.py) and opening a stream (streaming.py).
Each is a step written once (_step.py), which llm() drives blocking and allm() awaits;
what one exchange records (its node, request, tally and end) is _exchange.py's.
Provider calls are in _litellm.py; the ambient llm()/allm() in ambient.py. Start at
Runtime.llm().
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, Literal, TypeVar, cast, overload

from pydantic import BaseModel

from openprogram.callbacks.base import scoped
from openprogram.core import _context, _secrets
from openprogram.core.dag import Node
from openprogram.core.usage import Usage
from openprogram.errors import (
    ConfigError,
    UsageError,
)
from openprogram.models._openai import needs_litellm
from openprogram.models.model import Model, ModelReply, ToolCall
from openprogram.render._tokens import preload_litellm
from openprogram.runtime._content import Invalid, parse, repair_prompt
from openprogram.runtime._exchange import Exchanges, name_of, recorded_reply
from openprogram.runtime._guards import (
    BLOCKING,
    blocks_a_loop,
    check_model,
    check_stream,
)
from openprogram.runtime._ledger import estimated_usage
from openprogram.runtime._step import Complete, Step, adrive, drive, retrying
from openprogram.runtime.compaction import compacting
from openprogram.runtime.streaming import (
    AsyncTextStream,
    AsyncToolTextStream,
    PendingStream,
    TextStream,
    ToolTextStream,
    open_stream,
)
from openprogram.runtime.tools import ToolLoop

__all__ = ["Runtime", "current_runtime"]

T = TypeVar("T", bound=BaseModel)


class Runtime:
    """How llm() calls are made: the model, callbacks, retries and limits.

    model: a litellm model string ("openai/gpt-4o", "anthropic/claude-...") or a Model
        object such as ScriptedModel; default: the OPENPROGRAM_MODEL environment variable.
    max_retries: extra attempts after a transient provider error (rate limit, timeout,
        5xx, connection), with exponential backoff and jitter, honouring Retry-After.
    timeout: seconds per provider request. max_images: history images kept per render.
    system: system prompt for every call. ask: who answers ask_user (a function
        Question -> answer, or None for "not now"; e.g. ConsoleAsk()); without one a
        run that asks suspends (RunWaiting). compactor: the agentic function
        `(text) -> str` that summarises history a `{"tokens": N}` render_range no longer
        holds (default openprogram.summarize_history). operations: the manager that runs
        the operations tools return (docs/operations.md; default LocalOperations, and a
        ProcessOperations sandbox for sandbox kinds such as bash). on_code_change: what a
        resumed run does with a completed call recorded by other code of its function
        ("keep" its result, the default; "refuse"; run the "latest" code), unless the
        function says (`@agentic_function(on_code_change=...)`). Other keyword arguments
        go to litellm.
    Use it as a context manager to make it ambient, or pass it as `runtime=`.
    """

    def __init__(
        self,
        model: str | Model | None = None,
        *,
        callbacks: Sequence[Any] = (),
        max_retries: int = 2,
        timeout: float | None = None,
        max_images: int | None = 3,
        system: str | None = None,
        ask: Callable[[Any], Any] | None = None,
        compactor: Callable[[str], Any] | None = None,
        operations: Any = None,
        on_code_change: str | None = None,
        **litellm_kwargs: Any,
    ) -> None:
        if max_retries < 0:
            raise UsageError(f"max_retries={max_retries!r} must be >= 0")
        if max_images is not None and max_images < 0:
            raise UsageError(f"max_images={max_images!r} must be >= 0 or None")
        check_model(model)
        if ask is not None and not callable(ask):
            raise UsageError(f"ask={ask!r} must be a function question -> answer (or None)")
        if on_code_change is not None and on_code_change not in ("keep", "refuse", "latest"):
            raise UsageError(
                f"on_code_change={on_code_change!r} is not one of 'keep', 'refuse', 'latest'"
            )
        self.on_code_change = on_code_change
        self.model = model
        self.ask = ask
        self._callbacks = list(callbacks)
        self.max_retries = max_retries
        self.timeout = timeout
        self.max_images = max_images
        self.system = system
        if compactor is not None and not getattr(compactor, "__agentic__", False):
            raise UsageError(
                f"compactor={compactor!r} must be an @agentic_function (text: str) -> str, so "
                "its summaries are recorded and reused on resume"
            )
        self.compactor = compactor
        if operations is not None and not all(
            callable(getattr(operations, name, None)) for name in ("submit", "cancel", "close")
        ):
            raise UsageError(
                f"operations={operations!r} must be an operation manager (submit, cancel, "
                "close): LocalOperations(), ProcessOperations() or RayOperations()"
            )
        self.operations = operations
        self.litellm_kwargs = litellm_kwargs
        _secrets.register(litellm_kwargs)  # api_key=... is scrubbed wherever it would show
        self.exchanges = Exchanges(self)  # what its exchanges record, and their tally
        self._models: dict[str, Model] = {}
        self._tokens: list[Any] = []
        self._warned_blocking = False
        named = model if model is not None else os.environ.get("OPENPROGRAM_MODEL")
        if isinstance(named, str) and needs_litellm(named, **litellm_kwargs):
            preload_litellm()  # its import (seconds) overlaps the program's set-up

    @property
    def callbacks(self) -> list[Any]:
        """This runtime's callbacks, then those a scope adds for the calls of this context
        (a sub-agent's BudgetManager.scope(): its limits and the runtime's both hold)."""
        added = scoped()
        return [*self._callbacks, *added] if added else self._callbacks

    @callbacks.setter
    def callbacks(self, callbacks: Sequence[Any]) -> None:
        self._callbacks = list(callbacks)

    @property
    def usage(self) -> Usage:
        """The summed usage of every exchange made through this runtime."""
        return self.exchanges.ledger.usage

    @property
    def _sleep(self) -> Callable[[float], None]:
        """How a retry waits (tests replace it; `_asleep` under allm())."""
        return self.exchanges.sleep

    @_sleep.setter
    def _sleep(self, sleep: Callable[[float], None]) -> None:
        self.exchanges.sleep = sleep

    @property
    def _asleep(self) -> Callable[[float], Awaitable[None]]:
        return self.exchanges.asleep

    @_asleep.setter
    def _asleep(self, asleep: Callable[[float], Awaitable[None]]) -> None:
        self.exchanges.asleep = asleep

    def _max_images(self) -> int | None:
        """The tightest image limit of the runtime and its callbacks (ImageRetention)."""
        return self.exchanges.image_limit()

    def __enter__(self) -> Runtime:
        self._tokens.append(_context.enter(runtime=self))
        _context.push_runtime(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _context.pop_runtime(self)
        _context.leave(self._tokens.pop())

    def __repr__(self) -> str:
        return f"Runtime(model={self._model_name(None)!r})"

    # -- models --------------------------------------------------------------------------
    @property
    def model_name(self) -> str | None:
        """The name of the model an llm() call without `model=` uses (this Runtime's,
        else OPENPROGRAM_MODEL's); None when none is configured."""
        return self._model_name(None)

    def _model_name(self, override: str | Model | None) -> str | None:
        spec = override or self.model or os.environ.get("OPENPROGRAM_MODEL")
        if spec is None:
            return None
        return spec if isinstance(spec, str) else getattr(spec, "name", type(spec).__name__)

    def _resolve_model(self, override: str | Model | None) -> Model:
        spec = override or self.model or os.environ.get("OPENPROGRAM_MODEL")
        if spec is None:
            raise ConfigError(
                "no model is configured: pass Runtime(model='provider/model') or "
                "ScriptedModel([...]), or set OPENPROGRAM_MODEL (e.g. 'openai/gpt-4o-mini')"
            )
        if not isinstance(spec, str):
            check_model(spec)
            return spec
        model = self._models.get(spec)
        if model is None:
            from openprogram.models._litellm import LiteLLMModel
            from openprogram.models._openai import direct_model

            model = direct_model(spec, timeout=self.timeout, **self.litellm_kwargs) or LiteLLMModel(
                spec, timeout=self.timeout, **self.litellm_kwargs
            )
            self._models[spec] = model
        return model

    # -- the exchange --------------------------------------------------------------------
    @overload
    def llm(
        self,
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
        self,
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
        self,
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
        self,
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
        self,
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
        """Ask the model; returns the reply text, or a `response_format` instance.

        render_range overrides the calling function's own setting for this call only.
        tools: functions the model may call (agentic functions, or plain ones, which are
        wrapped); each call runs and is recorded as a code node, its result goes back to
        the model, until it answers with content. max_tool_turns caps the rounds.
        stream=True returns the text as chunks instead (no response_format): a
        TextStream, whose llm node completes when the stream ends; with tools, a
        ToolTextStream, which runs the tool turns while the caller iterates and yields
        the text of the turns that have text.

        Records one llm node per exchange (two when a repair re-ask is needed, one more
        per tool round). Raises ModelError subclasses on provider failure (and when the
        model still asks for tools after max_tool_turns rounds), ModelOutputError when
        the reply does not validate after one repair, RunStopped when a gate says stop.
        Warns once (RuntimeWarning) when called while an event loop runs in this thread
        (not a notebook cell's): the loop stands still until the reply is in; use
        `await allm(...)` there.
        """
        self._warn_if_blocking(kwargs.pop("_stacklevel", 2))
        resolved, loop = self._start(model, render_range, tools, max_tool_turns, kwargs)
        if stream:
            check_stream(response_format)
            return drive(self._opening(content, resolved, kwargs, loop, False))
        return drive(self._step(content, resolved, response_format, kwargs, loop))

    @overload
    def allm(
        self,
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
        self,
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
        self,
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
        self,
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
        self,
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
        """Async twin of llm(): `await allm(...)`; tool calls of one reply run
        concurrently. With stream=True it returns a PendingStream, read either way:
        `async for chunk in allm(..., stream=True)` or `async for chunk in await
        allm(..., stream=True)` (tools allowed, as in llm())."""
        resolved, loop = self._start(model, render_range, tools, max_tool_turns, kwargs)
        if not stream:
            return adrive(self._step(content, resolved, response_format, kwargs, loop))
        check_stream(response_format)
        return PendingStream(lambda: adrive(self._opening(content, resolved, kwargs, loop, True)))

    def _start(
        self,
        model: str | Model | None,
        render_range: dict[str, Any] | None,
        tools: Sequence[Callable[..., Any]] | None,
        max_tool_turns: int,
        options: dict[str, Any],
    ) -> tuple[Model, ToolLoop]:
        """What llm() and allm() do first: the model, the tool loop, the render range kept
        with the options."""
        if render_range is not None:
            options["_render_range"] = render_range
        return self._resolve_model(model), ToolLoop(tools, max_tool_turns, self.callbacks)

    def _step(
        self,
        content: object,
        model: Model,
        response_format: type[T] | None,
        options: dict[str, Any],
        loop: ToolLoop,
    ) -> Step[str | T]:
        """One llm() call: compaction, the exchanges and their tool rounds, and one repair
        re-ask when a structured reply does not validate."""
        yield from compacting(self.exchanges, options.get("_render_range"), name_of(model))
        node, reply = yield from self._turns(content, model, response_format, options, loop)
        if response_format is None:
            return reply
        parsed = parse(reply, response_format)
        if not isinstance(parsed, Invalid):
            return parsed
        self.exchanges.mark_invalid(node, parsed.problem)
        node, reply = yield from self._turns(
            repair_prompt(parsed.problem), model, response_format, options, loop
        )
        return self.exchanges.parsed_or_raise(node, reply, response_format)

    @overload
    def _opening(
        self,
        content: object,
        model: Model,
        options: dict[str, Any],
        loop: ToolLoop,
        asynchronous: Literal[False],
    ) -> Step[TextStream | ToolTextStream]: ...

    @overload
    def _opening(
        self,
        content: object,
        model: Model,
        options: dict[str, Any],
        loop: ToolLoop,
        asynchronous: Literal[True],
    ) -> Step[AsyncTextStream | AsyncToolTextStream]: ...

    def _opening(
        self,
        content: object,
        model: Model,
        options: dict[str, Any],
        loop: ToolLoop,
        asynchronous: bool,
    ) -> Step[TextStream | ToolTextStream | AsyncTextStream | AsyncToolTextStream]:
        """llm(..., stream=True): compaction, then the stream opened (streaming.py)."""
        yield from compacting(self.exchanges, options.get("_render_range"), name_of(model))

        def between_turns(node: Node, calls: list[ToolCall]) -> Step[None]:
            return self._between_turns(node, calls, model, options, loop)

        return (
            yield from open_stream(
                self.exchanges, content, model, options, loop, asynchronous, between_turns
            )
        )

    def _warn_if_blocking(self, stacklevel: int) -> None:
        if not self._warned_blocking and blocks_a_loop():
            self._warned_blocking = True
            warnings.warn(BLOCKING, RuntimeWarning, stacklevel=stacklevel + 1)

    def _turns(
        self,
        content: object,
        model: Model,
        response_format: type[BaseModel] | None,
        options: dict[str, Any],
        loop: ToolLoop,
    ) -> Step[tuple[Node, str]]:
        """Exchanges until the model answers with content, running the tools it asks for."""
        node, reply = yield from self._ask(content, model, response_format, options, loop)
        while reply.tool_calls:
            yield from self._between_turns(node, reply.tool_calls, model, options, loop)
            node, reply = yield from self._ask([], model, response_format, options, loop)
        return node, reply.text

    def _between_turns(
        self,
        node: Node,
        calls: list[ToolCall],
        model: Model,
        options: dict[str, Any],
        loop: ToolLoop,
    ) -> Step[None]:
        """After a turn of a tool loop (llm()'s, or a stream's): one round of the tool calls
        `node` asked for (tools.py), then its older rounds summarised when a token budget
        no longer holds them (compaction.py), so the budget holds inside one call."""
        yield from loop.tool_round(node, calls, self.exchanges)
        yield from compacting(
            self.exchanges, options.get("_render_range"), name_of(model), loop.nodes
        )

    def _ask(
        self,
        content: object,
        model: Model,
        response_format: type[BaseModel] | None,
        options: dict[str, Any],
        loop: ToolLoop | None = None,
    ) -> Step[tuple[Node, ModelReply]]:
        """One recorded exchange; a replayed one (resuming) returns its recorded reply."""
        node, request = self.exchanges.prepare(content, model, response_format, options, loop)
        if loop is not None:
            loop.asked(node)
        if request is None:
            return node, recorded_reply(node)
        try:
            reply = yield from retrying(self.exchanges, node, Complete(model, request))
        except Exception:
            raise
        except BaseException:  # cancelled on its way: the request was sent, so it counts
            if self.exchanges.ledger.holds(node):
                self.exchanges.ledger.count(node, estimated_usage(model, request, ""))
            raise
        return node, self.exchanges.finish(node, reply)


def current_runtime() -> Runtime:
    """The ambient Runtime: this context's (innermost `with Runtime()`); else, in a plain
    thread, the one Runtime live in the process; else a process default one. Raises
    UsageError when this context has none and several are live (DESIGN.md §3)."""
    # the ambient runtime is one a `with Runtime()` or a `runtime=` argument made so
    return cast(Runtime, _context.current_runtime())
