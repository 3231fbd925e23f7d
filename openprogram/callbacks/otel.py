"""OtelCallback: OpenTelemetry spans for calls and model exchanges (extra "otel").

Owns the mapping DAG → spans: one span per code node, nested like the DAG, and one per
llm exchange with token and cost attributes. Exporting is the tracer provider's job;
nothing leaves the process unless the user configures an exporter.
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


class OtelCallback(Callback):
    """Emit an OpenTelemetry span per agentic call and per llm exchange.

    tracer_provider: where spans go; default the global provider, which drops them
    unless the application has installed an SDK provider with an exporter. A run's top
    span becomes a child of whatever span is current when the run starts.
    Call spans carry `openprogram.node_id`, `.seq`, `.status` (and `.stop_reason`); llm
    spans carry `gen_ai.request.model`, `gen_ai.usage.input_tokens`/`output_tokens` and
    `openprogram.core.usage.cached_tokens`, `.reasoning_tokens`, `.cost_usd`, `.cost_known`,
    `.latency_s`. A failed exchange gets an llm span with error status when its frame
    ends. Inputs and outputs are never attached (they may hold personal data).
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
        span = self.tracer.start_span(
            node.name,
            context=self._parent_context(node),
            kind=SpanKind.INTERNAL,
            start_time=int(node.started_at * _NS),
            attributes={
                "openprogram.kind": "code",
                "openprogram.node_id": node.id,
                "openprogram.seq": node.seq,
                "openprogram.expose": node.expose,
            },
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
        attributes: dict[str, Any] = {
            "openprogram.kind": "llm",
            "openprogram.node_id": node.id,
            "openprogram.seq": node.seq,
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": model,
        }
        if usage is not None:
            attributes.update(
                {
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "openprogram.core.usage.cached_tokens": usage.cached_tokens,
                    "openprogram.core.usage.reasoning_tokens": usage.reasoning_tokens,
                    "openprogram.core.usage.cost_usd": usage.cost_usd,
                    "openprogram.core.usage.cost_known": usage.cost_known,
                    "openprogram.core.usage.latency_s": usage.latency_s,
                }
            )
        span = self.tracer.start_span(
            f"llm {node.name}",
            context=self._parent_context(node),
            kind=SpanKind.CLIENT,
            start_time=int(node.started_at * _NS),
            attributes=attributes,
        )
        if node.status == "error":
            span.set_status(Status(StatusCode.ERROR, node.error or "error"))
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


def _time(timestamp: float | None) -> int | None:
    return None if timestamp is None else int(timestamp * _NS)
