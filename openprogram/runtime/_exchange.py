"""The record of one model exchange: its llm node, its request, and how it ends.

Owns what llm() writes about one request to the model: the llm node and the rendered
request (gates asked, the reservation taken), the reply's tally and the node completed
(or failed, or marked unusable), the wait before a retry, and the parsing of a
structured reply. runtime.py drives the exchanges through these. Start at
Exchanges.prepare().
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel

from openprogram.callbacks.base import gate, transform
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.echo import echo
from openprogram.errors import ModelError, ModelOutputError, ModelUnavailable, RunError, RunStopped
from openprogram.models.model import Model, ModelReply, ModelRequest, ToolCall
from openprogram.render.render import RenderedContext, render_context
from openprogram.runtime._content import Invalid, content_parts, parse, schema_instruction
from openprogram.runtime._guards import TOP_LEVEL_NAME, note_default_session, note_undecorated
from openprogram.runtime._ledger import Ledger
from openprogram.runtime._step import reraise
from openprogram.runtime.compaction import note_over_budget
from openprogram.runtime.streaming import ToolRounds

T = TypeVar("T", bound=BaseModel)

_BACKOFF_BASE_S = 0.5
_BACKOFF_CAP_S = 30.0


class Settings(Protocol):
    """What an exchange reads of its Runtime (runtime.py, the layer above)."""

    @property
    def callbacks(self) -> Sequence[Any]: ...

    @property
    def system(self) -> str | None: ...

    @property
    def max_images(self) -> int | None: ...

    @property
    def max_retries(self) -> int: ...

    @property
    def compactor(self) -> Callable[[str], Any] | None: ...


class Exchanges:
    """The record of one Runtime's exchanges (`runtime.exchanges`): what llm() and the
    stream it opens (streaming.py) and the retries of a step (_step.py) write about each
    request, the Ledger of what they cost, and the clock retries wait on (`sleep`,
    `asleep`)."""

    def __init__(self, runtime: Settings) -> None:
        self.runtime = runtime
        self.ledger = Ledger(runtime)
        self.warned_over: set[str] = set()  # functions warned about a budget not held
        self.sleep: Callable[[float], None] = time.sleep
        self.asleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    @property
    def max_retries(self) -> int:
        return self.runtime.max_retries

    def prepare(
        self,
        content: object,
        model: Model,
        response_format: type[BaseModel] | None,
        options: dict[str, Any],
        loop: ToolRounds | None = None,
    ) -> tuple[Node, ModelRequest | None]:
        """Create the llm node and the request; no request when the exchange is replayed."""
        options = dict(options)
        session = _context.current_session()
        dag = session.dag
        frame_id = _context.frame_id()
        frame = dag.get(frame_id)
        if frame_id is not None and frame is None:
            frame_id = None
        if _context.is_process_default(session):
            note_default_session(frame)
        elif frame is None:
            note_undecorated()
        self.gate_or_stop(kind="llm", frame=frame)
        parts = content_parts(content, dag)
        if response_format is not None and (loop is None or not loop.nodes):
            parts.append({"type": "text", "text": schema_instruction(response_format)})
        name = frame.name if frame is not None else TOP_LEVEL_NAME
        meta: dict[str, Any] = {"model": name_of(model)}
        earlier = loop.nodes if loop is not None and loop.toolbox is not None else []
        if earlier:
            meta["tool_loop"] = list(earlier)
        # the node keeps the content as given (DESIGN §2): a plain string stays one
        recorded = content if isinstance(content, str) and len(parts) == 1 else parts
        node = session.enter_llm(name, frame_id, recorded, meta)
        if node.status == "completed":  # replayed from a resumed session's record
            return node, None
        try:
            window = options.pop("_render_range", None)
            if window is not None:
                node.meta["render_range"] = window
            limit = self.image_limit()
            if limit != 3:
                node.meta["max_images"] = limit
            rendered = render_context(
                dag,
                frame_id,
                window,
                before=node.seq,
                content=parts,
                system=self.runtime.system,
                max_images=limit,
                include=earlier,
                tokens_model=meta["model"],
            )
            rendered.record_on(node)
            note_over_budget(node, rendered, self.warned_over)
            request = ModelRequest(
                rendered=rendered,
                function=frame.name if frame is not None else None,
                node_id=node.id,
                response_format=response_format,
                options=options,
                tools=loop.toolbox.specs if loop is not None and loop.toolbox else None,
            )
        except Exception as exc:  # the exchange never started: record it, then raise
            reraise(self.failed(node, exc), exc)
        if any(hasattr(callback, "on_llm_start") for callback in self.runtime.callbacks):
            try:  # the messages are built only for a callback that reads them
                request.messages = transform(
                    self.runtime.callbacks, "on_llm_start", request.messages
                )
            except Exception as exc:  # the exchange never started: record it, then raise
                reraise(self.failed(node, exc), exc)
        # reserved once nothing before sending can fail: a shared budget's count is final
        self.ledger.reserve(frame, node, lambda: prompt_tokens(rendered, parts))
        return node, request

    def image_limit(self) -> int | None:
        """The tightest image limit of the runtime and its callbacks (ImageRetention)."""
        limits = [self.runtime.max_images] + [
            getattr(c, "max_images", None) for c in self.runtime.callbacks
        ]
        known = [limit for limit in limits if limit is not None]
        return min(known) if known else None

    def gate_or_stop(self, **context: Any) -> None:
        reason = gate(self.runtime.callbacks, self.runtime, **context)
        if reason is not None:
            frame = context.get("frame")
            if frame is not None:
                frame.meta["stop_reason"] = reason
            raise RunStopped(reason)

    def rate_waits(self, node: Node) -> Iterator[float]:
        """The waits node's request owes the runtime's RateLimits before each attempt."""
        return self.ledger.rate_waits(node)

    def retry_delay(self, exc: ModelError, attempt: int, node: Node) -> float | None:
        """Seconds to wait before the next attempt, or None to give up."""
        node.meta.setdefault("attempts", []).append(f"{type(exc).__name__}: {exc}")
        if not exc.retryable or attempt >= self.runtime.max_retries:
            return None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return min(float(retry_after), _BACKOFF_CAP_S * 4)
        return min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2.0**attempt) * random.uniform(0.5, 1.5)

    def failed(self, node: Node, exc: Exception) -> Exception:
        """Record the failed exchange on its node; the error to raise (with .node_id)."""
        error: Exception = exc
        if isinstance(exc, ModelError) and exc.retryable:
            error = ModelUnavailable(
                f"{exc} (gave up after {self.runtime.max_retries + 1} attempts; try again later "
                "or raise Runtime(max_retries=...))",
                node_id=node.id,
            )
        elif isinstance(exc, RunError) and exc.node_id is None:
            exc.node_id = node.id
        _context.current_session().dag.complete(
            node, None, status="error", error=f"{type(exc).__name__}: {exc}"
        )
        self.ledger.settle(node)
        return error

    def finish(self, node: Node, reply: ModelReply) -> ModelReply:
        text = reply.text
        if reply.tool_calls:
            node.meta["tool_calls"] = [call.to_json() for call in reply.tool_calls]
        response = reply.provider_meta()
        if response:
            node.meta["response"] = response
        if self.runtime.callbacks:  # before completing, so what observers note is stored with it
            node.output = text
        self.ledger.count(node, reply.usage)
        _context.current_session().dag.complete(node, text)
        if self.runtime.callbacks:
            text = transform(self.runtime.callbacks, "on_llm_end", text)
        return ModelReply(text=text, usage=reply.usage, raw=reply.raw, tool_calls=reply.tool_calls)

    def mark_invalid(self, node: Node, problem: str) -> None:
        self.mark_error(node, f"invalid structured output: {problem}")

    def mark_error(self, node: Node, error: str) -> None:
        """A completed exchange whose reply cannot be used: error status, reply kept."""
        node.status = "error"
        node.error = error
        _context.current_session().dag.notify("completed", node)

    def parsed_or_raise(self, node: Node, reply: str, response_format: type[T]) -> T:
        parsed = parse(reply, response_format)
        if not isinstance(parsed, Invalid):
            return parsed
        self.mark_invalid(node, parsed.problem)
        raise ModelOutputError(
            f"the model's reply did not match {response_format.__name__} even after one "
            f"repair: {parsed.problem}. Check the prompt, or use a model that supports "
            f"structured output. The reply was: {echo(reply)}",
            node_id=node.id,
            reply=reply,
        )


def prompt_tokens(rendered: RenderedContext, parts: list[dict[str, Any]]) -> int:
    """A quick estimate of a request's prompt (history, system and content text at four
    characters a token, plus each message's framing): what a reservation counts before
    the reply says."""
    chars = rendered.text_length() + len(rendered.system or "")
    chars += sum(len(str(part.get("text") or "")) for part in parts)
    return chars // 4 + 4 * (len(rendered.reads) + 2)


def name_of(model: Model) -> str:
    return str(getattr(model, "name", type(model).__name__))


def recorded_reply(node: Node) -> ModelReply:
    """A replayed exchange's reply as recorded (text and tool calls)."""
    calls = [ToolCall.from_json(call) for call in node.meta.get("tool_calls") or ()]
    return ModelReply(text=str(node.output or ""), tool_calls=calls or None)
