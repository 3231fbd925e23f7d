"""OtelCallback: OpenTelemetry spans for calls and model exchanges (extra "otel").

Owns the mapping DAG → spans in OpenTelemetry's GenAI semantic conventions: an agentic
call is `invoke_agent {name}`, a tool call `execute_tool {tool}`, a model exchange
`chat {model}`, nested like the DAG. Exporting is the tracer provider's job; nothing
leaves the process unless the user configures an exporter.
"""

from __future__ import annotations

import threading
from typing import Any

try:
    from opentelemetry import trace
    from opentelemetry.trace import Span, SpanKind, Status, StatusCode
except ImportError as exc:  # pragma: no cover - exercised by hiding the package
    raise ImportError('OtelCallback needs OpenTelemetry: pip install "openprogram[otel]"') from exc

from openprogram.callbacks.base import Callback
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.core.usage import Usage

__all__ = ["OtelCallback"]

_NS = 1_000_000_000

# litellm's provider prefixes whose gen_ai.provider.name the conventions spell otherwise
_PROVIDERS = {
    "azure": "azure.ai.openai",
    "azure_ai": "azure.ai.inference",
    "bedrock": "aws.bedrock",
    "gemini": "gcp.gemini",
    "vertex_ai": "gcp.vertex_ai",
    "mistral": "mistral_ai",
    "xai": "x_ai",
    "watsonx": "ibm.watsonx.ai",
}


class OtelCallback(Callback):
    """Emit an OpenTelemetry span per agentic call, tool call and llm exchange.

    tracer_provider: where spans go; default the global provider, which drops them
    unless the application has installed an SDK provider with an exporter. A run's top
    span becomes a child of whatever span is current when the run starts.
    Spans follow the GenAI semantic conventions (docs/callbacks.md lists the attributes):
    `invoke_agent {function}` and `execute_tool {tool}` (INTERNAL), `chat {model}`
    (CLIENT) with `gen_ai.operation.name`, `gen_ai.provider.name`, request and response
    model, finish reasons, token usage and `gen_ai.conversation.id` (the session id);
    `openprogram.*` attributes add the node id, seq, status and cost. A failed exchange
    gets its span with error status when its frame ends. Inputs and outputs are never
    attached (they may hold personal data).
    """

    def __init__(self, tracer_provider: Any = None) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer("openprogram")
        self._spans: dict[str, Span] = {}
        self._done: set[str] = set()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OtelCallback(open_spans={len(self._spans)})"

    def _parent_context(self, node: Node) -> Any:
        with self._lock:
            parent = self._spans.get(node.parent) if node.parent else None
        return trace.set_span_in_context(parent) if parent is not None else None

    def on_call_start(self, node: Node) -> None:
        tool_call = node.meta.get("tool_call_id")
        attributes: dict[str, Any] = {
            "openprogram.kind": "code",
            "openprogram.node_id": node.id,
            "openprogram.seq": node.seq,
            "openprogram.expose": node.expose,
            "gen_ai.conversation.id": _session_id(),
        }
        if tool_call is not None:
            name = f"execute_tool {node.name}"
            attributes.update(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": node.name,
                    "gen_ai.tool.call.id": str(tool_call),
                    "gen_ai.tool.type": "function",
                }
            )
        else:
            name = f"invoke_agent {node.name}"
            attributes.update(
                {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": node.name}
            )
        span = self.tracer.start_span(
            name,
            context=self._parent_context(node),
            kind=SpanKind.INTERNAL,
            start_time=int(node.started_at * _NS),
            attributes=attributes,
        )
        with self._lock:
            self._spans[node.id] = span

    def on_call_end(self, node: Node) -> None:
        self._failed_exchanges(node)
        with self._lock:
            span = self._spans.pop(node.id, None)
        if span is None:
            return
        span.set_attribute("openprogram.status", node.status)
        stop_reason = node.meta.get("stop_reason")
        if stop_reason:
            span.set_attribute("openprogram.stop_reason", str(stop_reason))
        elif node.status == "error":
            span.set_status(Status(StatusCode.ERROR, node.error or "error"))
            span.set_attribute("error.type", _error_type(node.error))
        if node.meta.get("callback_errors"):
            span.set_attribute("openprogram.callback_errors", len(node.meta["callback_errors"]))
        span.end(end_time=_time(node.ended_at))

    def on_usage(self, node: Node, usage: Usage) -> None:
        self._llm_span(node, usage)

    def _llm_span(self, node: Node, usage: Usage | None) -> None:
        with self._lock:
            if node.id in self._done:
                return
            if node.parent is not None:
                self._done.add(node.id)
        model = str(node.meta.get("model", ""))
        response = node.meta.get("response") or {}
        attributes: dict[str, Any] = {
            "openprogram.kind": "llm",
            "openprogram.node_id": node.id,
            "openprogram.seq": node.seq,
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": _provider(model),
            "gen_ai.request.model": model,
            "gen_ai.agent.name": node.name,
            "gen_ai.conversation.id": _session_id(),
        }
        if response.get("model"):
            attributes["gen_ai.response.model"] = str(response["model"])
        if response.get("id"):
            attributes["gen_ai.response.id"] = str(response["id"])
        if response.get("finish_reasons"):
            attributes["gen_ai.response.finish_reasons"] = [
                str(reason) for reason in response["finish_reasons"]
            ]
        if usage is not None:
            attributes.update(
                {
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "openprogram.usage.cached_tokens": usage.cached_tokens,
                    "openprogram.usage.reasoning_tokens": usage.reasoning_tokens,
                    "openprogram.usage.cost_usd": usage.cost_usd,
                    "openprogram.usage.cost_known": usage.cost_known,
                    "openprogram.usage.latency_s": usage.latency_s,
                }
            )
        span = self.tracer.start_span(
            f"chat {model}" if model else "chat",
            context=self._parent_context(node),
            kind=SpanKind.CLIENT,
            start_time=int(node.started_at * _NS),
            attributes=attributes,
        )
        if node.status == "error":
            span.set_status(Status(StatusCode.ERROR, node.error or "error"))
            span.set_attribute("error.type", _error_type(node.error))
        span.end(end_time=_time(node.ended_at))

    def _failed_exchanges(self, frame: Node) -> None:
        """Spans for the frame's llm exchanges that failed (on_usage never saw them)."""
        dag = _context.current_session().dag
        if frame.id not in dag:
            return
        children = [c for c in dag.children(frame.id) if c.kind == "llm"]
        for child in children:
            if child.status == "error":
                self._llm_span(child, child.usage)
        with self._lock:
            self._done.difference_update(c.id for c in children)


def _provider(model: str) -> str:
    """gen_ai.provider.name of a litellm model string (its provider prefix); a model
    object's own name without one is reported as openprogram's (an offline model)."""
    prefix = model.split("/", 1)[0] if "/" in model else ""
    return _PROVIDERS.get(prefix, prefix) or "openprogram"


def _error_type(error: str | None) -> str:
    """The `error.type` of a node's "TypeName: message" error."""
    head = (error or "").split(":", 1)[0].strip()
    return head if head.isidentifier() else "_OTHER"


def _session_id() -> str:
    session = _context.current_session()
    return str(getattr(session, "id", "") or "")


def _time(timestamp: float | None) -> int | None:
    return None if timestamp is None else int(timestamp * _NS)
