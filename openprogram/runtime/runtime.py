"""Runtime and llm(): asking a model from inside an agentic function.

Owns one exchange end to end: the llm node, the render of what the model sees, the
callbacks around it, retries with backoff, usage and cost (tallied by _ledger.py, which
also reserves requests on their way), structured output (validated, one repair
re-ask), the tool loop (tools run in tools.py) and opening a stream (streaming.py).
Each is a step written once (_step.py), which llm() drives blocking and allm() awaits.
Provider calls are in _litellm.py. Start at Runtime.llm().
"""

from __future__ import annotations

import asyncio
import os
import random
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar, cast

from pydantic import BaseModel

from openprogram.callbacks.base import gate, scoped, transform
from openprogram.core import _context, _secrets
from openprogram.core.dag import Node
from openprogram.core.usage import Usage
from openprogram.echo import echo
from openprogram.errors import (
    ConfigError,
    ModelError,
    ModelOutputError,
    ModelUnavailable,
    RunError,
    RunStopped,
    UsageError,
)
from openprogram.models._openai import needs_litellm
from openprogram.models.model import Model, ModelReply, ModelRequest, ToolCall
from openprogram.render._tokens import preload_litellm
from openprogram.render.render import render_context
from openprogram.runtime._content import content_parts, parse, repair_prompt, schema_instruction
from openprogram.runtime._guards import (
    BLOCKING,
    TOP_LEVEL_NAME,
    blocks_a_loop,
    check_model,
    check_stream,
    note_default_session,
    note_undecorated,
)
from openprogram.runtime._ledger import Ledger, estimated_usage
from openprogram.runtime._step import Complete, RunTools, Step, adrive, drive, reraise, retrying
from openprogram.runtime.compaction import compacting, note_over_budget
from openprogram.runtime.streaming import PendingStream, open_stream
from openprogram.runtime.tools import ToolLoop

__all__ = ["Runtime", "allm", "current_runtime", "llm"]

T = TypeVar("T", bound=BaseModel)

_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 30.0


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
        self._ledger = Ledger(self)
        self._models: dict[str, Model] = {}
        self._tokens: list[Any] = []
        self._sleep: Callable[[float], None] = time.sleep
        self._asleep: Callable[[float], Any] = asyncio.sleep
        self._warned_blocking = False
        self._warned_over: set[str] = set()  # functions warned about a budget not held
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
        return self._ledger.usage

    def __enter__(self) -> Runtime:
        self._tokens.append(_context.runtime_var.set(self))
        _context.push_runtime(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _context.pop_runtime(self)
        _context.runtime_var.reset(self._tokens.pop())

    def __repr__(self) -> str:
        return f"Runtime(model={self._model_name(None)!r})"

    # -- models --------------------------------------------------------------------------
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
    def llm(
        self,
        content: Any,
        *,
        response_format: type[T] | None = None,
        model: str | Model | None = None,
        render_range: dict[str, Any] | None = None,
        tools: Sequence[Callable[..., Any]] | None = None,
        max_tool_turns: int = 8,
        stream: bool = False,
        **kwargs: Any,
    ) -> Any:
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
            return drive(self, self._opening(content, resolved, kwargs, loop, False))
        return drive(self, self._step(content, resolved, response_format, kwargs, loop))

    def allm(
        self,
        content: Any,
        *,
        response_format: type[T] | None = None,
        model: str | Model | None = None,
        render_range: dict[str, Any] | None = None,
        tools: Sequence[Callable[..., Any]] | None = None,
        max_tool_turns: int = 8,
        stream: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Async twin of llm(): `await allm(...)`; tool calls of one reply run
        concurrently. With stream=True it returns a PendingStream, read either way:
        `async for chunk in allm(..., stream=True)` or `async for chunk in await
        allm(..., stream=True)` (tools allowed, as in llm())."""
        resolved, loop = self._start(model, render_range, tools, max_tool_turns, kwargs)
        if not stream:
            return adrive(self, self._step(content, resolved, response_format, kwargs, loop))
        check_stream(response_format)
        return PendingStream(
            lambda: adrive(self, self._opening(content, resolved, kwargs, loop, True))
        )

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
        content: Any,
        model: Model,
        response_format: type[T] | None,
        options: dict[str, Any],
        loop: ToolLoop,
    ) -> Step[Any]:
        """One llm() call: compaction, the exchanges and their tool rounds, and one repair
        re-ask when a structured reply does not validate."""
        yield from compacting(self, options.get("_render_range"), _name_of(model))
        node, reply = yield from self._turns(content, model, response_format, options, loop)
        result, problem = self._check(node, reply, response_format)
        if problem is None:
            return result
        assert response_format is not None  # only structured replies need repairing
        node, reply = yield from self._turns(
            repair_prompt(problem), model, response_format, options, loop
        )
        return self._parsed_or_raise(node, reply, response_format)

    def _opening(
        self,
        content: Any,
        model: Model,
        options: dict[str, Any],
        loop: ToolLoop,
        asynchronous: bool,
    ) -> Step[Any]:
        """llm(..., stream=True): compaction, then the stream opened (streaming.py)."""
        yield from compacting(self, options.get("_render_range"), _name_of(model))
        return (yield from open_stream(self, content, model, options, loop, asynchronous))

    def _warn_if_blocking(self, stacklevel: int) -> None:
        if not self._warned_blocking and blocks_a_loop():
            self._warned_blocking = True
            warnings.warn(BLOCKING, RuntimeWarning, stacklevel=stacklevel + 1)

    def _turns(
        self,
        content: Any,
        model: Model,
        response_format: Any,
        options: dict[str, Any],
        loop: ToolLoop,
    ) -> Step[tuple[Node, str]]:
        """Exchanges until the model answers with content, running the tools it asks for."""
        node, reply = yield from self._ask(content, model, response_format, options, loop)
        while reply.tool_calls:
            yield from self._run_tools(node, reply.tool_calls, loop)
            yield from self._compact_turns(model, options, loop)
            node, reply = yield from self._ask([], model, response_format, options, loop)
        return node, reply.text

    def _compact_turns(self, model: Model, options: dict[str, Any], loop: ToolLoop) -> Step[None]:
        """Before the next turn of a tool loop: its older rounds are history a token budget
        summarises like any other (compaction.py), so the budget holds inside one call."""
        yield from compacting(self, options.get("_render_range"), _name_of(model), loop.nodes)

    def _run_tools(self, node: Node, calls: list[ToolCall], loop: ToolLoop) -> Step[None]:
        """One round of the tool calls `node` asked for, each recorded as a code node. Before
        it runs: count it (ModelError when none may run) and ask the gates (RunStopped when
        one says stop)."""
        loop.next_round(node, calls, self._mark_error)
        frame = _context.current_session().dag.get(node.parent) if node.parent else None
        self._gate(kind="tool_calls", frame=frame, calls=calls)
        loop.nodes.extend((yield RunTools(loop.toolbox, calls, node)))

    def _ask(
        self,
        content: Any,
        model: Model,
        response_format: Any,
        options: dict[str, Any],
        loop: ToolLoop | None = None,
    ) -> Step[tuple[Node, ModelReply]]:
        """One recorded exchange; a replayed one (resuming) returns its recorded reply."""
        node, request = self._prepare(content, model, response_format, options, loop)
        if loop is not None:
            loop.asked(node)
        if request is None:
            return node, _recorded_reply(node)
        try:
            reply = yield from retrying(self, node, Complete(model, request))
        except Exception:
            raise
        except BaseException:  # cancelled on its way: the request was sent, so it counts
            if self._ledger.holds(node):
                self._ledger.count(node, estimated_usage(model, request, ""))
            raise
        return node, self._finish(node, reply)

    def _check(
        self, node: Node, reply: str, response_format: type[BaseModel] | None
    ) -> tuple[Any, str | None]:
        """(the value to return, None), or (None, what to repair) after marking the node."""
        if response_format is None:
            return reply, None
        parsed, problem = parse(reply, response_format)
        if problem is not None:
            self._mark_invalid(node, problem)
        return parsed, problem

    def _prepare(
        self,
        content: Any,
        model: Model,
        response_format: type[BaseModel] | None,
        options: dict[str, Any],
        loop: ToolLoop | None = None,
    ) -> tuple[Node, ModelRequest | None]:
        """Create the llm node and the request; no request when the exchange is replayed."""
        options = dict(options)
        session = _context.current_session()
        dag = session.dag
        frame_id = _context.frame_var.get()
        frame = dag.get(frame_id)
        if frame_id is not None and frame is None:
            frame_id = None
        if _context.is_process_default(session):
            note_default_session(frame)
        elif frame is None:
            note_undecorated()
        self._gate(kind="llm", frame=frame)
        parts = content_parts(content, dag)
        if response_format is not None and (loop is None or not loop.nodes):
            parts.append({"type": "text", "text": schema_instruction(response_format)})
        name = frame.name if frame is not None else TOP_LEVEL_NAME
        meta: dict[str, Any] = {"model": _name_of(model)}
        earlier = loop.nodes if loop is not None and loop.toolbox is not None else []
        if earlier:
            meta["tool_loop"] = list(earlier)
        # the node keeps the content as given (DESIGN §2): a plain string stays one
        recorded = content if isinstance(content, str) and len(parts) == 1 else parts
        node = session._enter_llm(name, frame_id, recorded, meta)
        if node.status == "completed":  # replayed from a resumed session's record
            return node, None
        try:
            window = options.pop("_render_range", None)
            if window is not None:
                node.meta["render_range"] = window
            limit = self._max_images()
            if limit != 3:
                node.meta["max_images"] = limit
            rendered = render_context(
                dag,
                frame_id,
                window,
                before=node.seq,
                content=parts,
                system=self.system,
                max_images=limit,
                include=earlier,
                tokens_model=meta["model"],
            )
            rendered._record(node)
            note_over_budget(node, rendered, self._warned_over)
            request = ModelRequest(
                rendered=rendered,
                function=frame.name if frame is not None else None,
                node_id=node.id,
                response_format=response_format,
                options=options,
                tools=loop.toolbox.specs if loop is not None and loop.toolbox else None,
            )
        except Exception as exc:  # the exchange never started: record it, then raise
            reraise(self._failed(node, exc), exc)
        if any(hasattr(callback, "on_llm_start") for callback in self.callbacks):
            try:  # the messages are built only for a callback that reads them
                request.messages = transform(self.callbacks, "on_llm_start", request.messages)
            except Exception as exc:  # the exchange never started: record it, then raise
                reraise(self._failed(node, exc), exc)
        # reserved once nothing before sending can fail: a shared budget's count is final
        self._ledger.reserve(frame, node, lambda: _prompt_tokens(rendered, parts))
        return node, request

    def _max_images(self) -> int | None:
        """The tightest image limit of the runtime and its callbacks (ImageRetention)."""
        limits = [self.max_images] + [getattr(c, "max_images", None) for c in self.callbacks]
        known = [limit for limit in limits if limit is not None]
        return min(known) if known else None

    def _gate(self, **context: Any) -> None:
        reason = gate(self.callbacks, self, **context)
        if reason is not None:
            frame = context.get("frame")
            if frame is not None:
                frame.meta["stop_reason"] = reason
            raise RunStopped(reason)

    def _rate_waits(self, node: Node) -> Iterator[float]:
        """The waits node's request owes the runtime's RateLimits before each attempt."""
        return self._ledger.rate_waits(node)

    def _retry_delay(self, exc: ModelError, attempt: int, node: Node) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        node.meta.setdefault("attempts", []).append(f"{type(exc).__name__}: {exc}")
        if not exc.retryable or attempt >= self.max_retries:
            return None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), _BACKOFF_CAP_S * 4)
        return min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt) * random.uniform(0.5, 1.5)

    def _failed(self, node: Node, exc: Exception) -> Exception:
        """Record the failed exchange on its node; the error to raise (with .node_id)."""
        error: Exception = exc
        if isinstance(exc, ModelError) and exc.retryable:
            error = ModelUnavailable(
                f"{exc} (gave up after {self.max_retries + 1} attempts; try again later "
                "or raise Runtime(max_retries=...))",
                node_id=node.id,
            )
        elif isinstance(exc, RunError) and exc.node_id is None:
            exc.node_id = node.id
        _context.current_session().dag.complete(
            node, None, status="error", error=f"{type(exc).__name__}: {exc}"
        )
        self._ledger.settle(node)
        return error

    def _finish(self, node: Node, reply: ModelReply) -> ModelReply:
        text = reply.text
        if reply.tool_calls:
            node.meta["tool_calls"] = [call.to_json() for call in reply.tool_calls]
        response = reply.provider_meta()
        if response:
            node.meta["response"] = response
        if self.callbacks:  # before completing, so what observers note is stored with it
            node.output = text
        self._ledger.count(node, reply.usage)
        _context.current_session().dag.complete(node, text)
        if self.callbacks:
            text = transform(self.callbacks, "on_llm_end", text)
        return ModelReply(text=text, usage=reply.usage, raw=reply.raw, tool_calls=reply.tool_calls)

    def _mark_invalid(self, node: Node, problem: str) -> None:
        self._mark_error(node, f"invalid structured output: {problem}")

    def _mark_error(self, node: Node, error: str) -> None:
        """A completed exchange whose reply cannot be used: error status, reply kept."""
        node.status = "error"
        node.error = error
        _context.current_session().dag._notify("completed", node)

    def _parsed_or_raise(self, node: Node, reply: str, response_format: type[T]) -> T:
        parsed, problem = parse(reply, response_format)
        if problem is None:
            return parsed  # type: ignore[return-value]
        self._mark_invalid(node, problem)
        raise ModelOutputError(
            f"the model's reply did not match {response_format.__name__} even after one "
            f"repair: {problem}. Check the prompt, or use a model that supports "
            f"structured output. The reply was: {echo(reply)}",
            node_id=node.id,
            reply=reply,
        )


def _prompt_tokens(rendered: Any, parts: list[dict[str, Any]]) -> int:
    """A quick estimate of a request's prompt (history, system and content text at four
    characters a token, plus each message's framing): what a reservation counts before
    the reply says."""
    chars = rendered.text_length() + len(rendered.system or "")
    chars += sum(len(str(part.get("text") or "")) for part in parts)
    return chars // 4 + 4 * (len(rendered.reads) + 2)


def _name_of(model: Model) -> str:
    return str(getattr(model, "name", type(model).__name__))


def _recorded_reply(node: Node) -> ModelReply:
    """A replayed exchange's reply as recorded (text and tool calls)."""
    calls = [ToolCall.from_json(call) for call in node.meta.get("tool_calls") or ()]
    return ModelReply(text=str(node.output or ""), tool_calls=calls or None)


def current_runtime() -> Runtime:
    """The ambient Runtime: this context's (innermost `with Runtime()`); else, in a plain
    thread, the one Runtime live in the process; else a process default one. Raises
    UsageError when this context has none and several are live (DESIGN.md §3)."""
    # the ambient runtime is one a `with Runtime()` or a `runtime=` argument made so
    return cast(Runtime, _context.current_runtime())


_context.set_runtime_factory(Runtime)


def llm(
    content: Any,
    *,
    response_format: type[T] | None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: bool = False,
    **kwargs: Any,
) -> Any:
    """Ask the ambient runtime's model (see Runtime.llm); records one llm node per
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


def allm(
    content: Any,
    *,
    response_format: type[T] | None = None,
    model: str | Model | None = None,
    render_range: dict[str, Any] | None = None,
    tools: Sequence[Callable[..., Any]] | None = None,
    max_tool_turns: int = 8,
    stream: bool = False,
    **kwargs: Any,
) -> Any:
    """Async twin of llm(): `await allm(...)`; with stream=True, `async for chunk in
    allm(...)` works with or without `await` (see Runtime.allm)."""
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
