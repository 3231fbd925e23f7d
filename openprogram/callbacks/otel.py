"""OtelCallback: OpenTelemetry spans for calls and model exchanges, and eval results as
events (extra "otel").

Owns the mapping DAG → spans in OpenTelemetry's GenAI semantic conventions: an agentic
call is `invoke_agent {name}`, a tool call `execute_tool {tool}`, a model exchange
`chat {model}`, nested like the DAG; and an EvalReport's scores → `gen_ai.evaluation.result`
events (log records) parented to the span of the call they judge. Exporting is the
providers' job; nothing leaves the process unless the user configures an exporter.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from typing import Any, Generic, Protocol, TypeVar

try:
    from opentelemetry import _logs, trace
    from opentelemetry.trace import (
        NonRecordingSpan,
        Span,
        SpanContext,
        SpanKind,
        Status,
        StatusCode,
    )
except ImportError as exc:  # pragma: no cover - exercised by hiding the package
    raise ImportError('OtelCallback needs OpenTelemetry: pip install "openprogram[otel]"') from exc

from openprogram.callbacks.base import Callback, scope
from openprogram.core import _context
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.usage import Usage
from openprogram.echo import elide

__all__ = ["EVALUATION_EVENT", "EvaluatedReport", "OtelCallback"]

_NS = 1_000_000_000
_REMEMBERED = 10_000  # runs' span contexts kept for the eval events that judge them
_EXPLANATION = 2_000  # characters of a scorer's reason an event carries
EVALUATION_EVENT = "gen_ai.evaluation.result"
"""The event name of an eval score (OpenTelemetry's GenAI semantic conventions)."""

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


class _Scored(Protocol):
    """One score of a run, as an eval report keeps it (evals' ScoreResult)."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> float | None: ...
    @property
    def binary(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...


class _Run(Protocol):
    """One run of a case (evals' RunResult)."""

    @property
    def case(self) -> str: ...
    @property
    def repeat(self) -> int: ...
    @property
    def session(self) -> str | None: ...
    @property
    def scores(self) -> Sequence[_Scored]: ...


class _Case(Protocol):
    @property
    def name(self) -> str | None: ...


class _Cases(Protocol):
    @property
    def cases(self) -> Sequence[_Case]: ...


R = TypeVar("R", bound=_Run)


class EvaluatedReport(Protocol, Generic[R]):
    """What record_evaluation() reads of an eval report (openprogram.evals' EvalReport,
    a layer above): its id, its dataset's cases, its runs and each run's DAG."""

    @property
    def id(self) -> str: ...
    @property
    def dataset(self) -> _Cases: ...
    @property
    def runs(self) -> Sequence[R]: ...

    def dag(self, run: R, *, store: object = None) -> ContextDAG: ...


class OtelCallback(Callback):
    """Emit an OpenTelemetry span per agentic call, tool call and llm exchange.

    tracer_provider: where spans go; default the global provider, which drops them
    unless the application has installed an SDK provider with an exporter. A run's top
    span becomes a child of whatever span is current when the run starts.
    logger_provider: where record_evaluation() sends its events (OpenTelemetry's Logs
    API); default the global one, which drops them unless one is installed.
    Spans follow the GenAI semantic conventions (docs/callbacks.md lists the attributes):
    `invoke_agent {function}` and `execute_tool {tool}` (INTERNAL), `chat {model}`
    (CLIENT) with `gen_ai.operation.name`, `gen_ai.provider.name`, request and response
    model, finish reasons, token usage and `gen_ai.conversation.id` (the session id);
    `openprogram.*` attributes add the node id, seq, status and cost. A failed exchange
    gets its span with error status when its frame ends. Inputs and outputs are never
    attached (they may hold personal data).
    """

    def __init__(
        self,
        tracer_provider: trace.TracerProvider | None = None,
        logger_provider: _logs.LoggerProvider | None = None,
    ) -> None:
        provider = tracer_provider or trace.get_tracer_provider()
        self.tracer = provider.get_tracer("openprogram")
        self._logger_provider = logger_provider
        self._spans: dict[str, Span] = {}
        self._done: set[str] = set()
        self._runs: OrderedDict[str, SpanContext] = OrderedDict()  # top-level call → span
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
        if node.parent is None:  # a run: an eval event may judge it later
            with self._lock:
                self._runs[node.id] = span.get_span_context()
                while len(self._runs) > _REMEMBERED:
                    self._runs.popitem(last=False)

    # -- evals -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def scope(self) -> Iterator[None]:
        """Add this callback to every runtime used inside the block (in this context and
        the tasks and eval runs it starts): `with otel.scope(): report =
        dataset.evaluate(fn, scorers, model=...)` gives each run its spans, even though
        evaluate() makes a Runtime of its own for each."""
        with scope(self):
            yield

    def record_evaluation(self, report: EvaluatedReport[R], *, store: object = None) -> int:
        """Emit one `gen_ai.evaluation.result` event per score of every run of `report`
        (an openprogram.evals.EvalReport); returns how many. Attributes:
        `gen_ai.evaluation.name` (the score's key: `scorer` or `function/scorer`),
        `gen_ai.evaluation.score.value`, `gen_ai.evaluation.score.label` ("pass" or
        "fail" for a pass/fail scorer), `gen_ai.evaluation.explanation` (the reason, cut
        to 2 000 characters), `error.type` when the scorer failed, and
        `gen_ai.response.id` of the run's last model reply when the record has it. Each
        event is parented to the span of the call it judges when this callback recorded
        that run (`scope()`, or a Runtime with it among its callbacks). `store`: where
        the runs' DAGs are when the report does not keep them (as EvalReport.dag)."""
        provider = self._logger_provider or _logs.get_logger_provider()
        logger = provider.get_logger("openprogram")
        conversations = {case.name for case in report.dataset.cases if getattr(case, "turns", None)}
        sent = 0
        for run in report.runs:
            judged = _judged(report, run, store, conversational=run.case in conversations)
            node, response = judged if judged is not None else (None, None)
            with self._lock:
                span = self._runs.get(node.id) if node is not None else None
            context = trace.set_span_in_context(NonRecordingSpan(span)) if span else None
            common: dict[str, Any] = {
                "openprogram.eval.report": str(report.id),
                "openprogram.eval.case": str(run.case),
                "openprogram.eval.repeat": int(run.repeat),
            }
            if run.session:
                common["gen_ai.conversation.id"] = str(run.session)
            if node is not None:
                common["openprogram.node_id"] = node.id
            if response:
                common["gen_ai.response.id"] = response
            for score in run.scores:
                logger.emit(
                    timestamp=time.time_ns(),
                    context=context,
                    event_name=EVALUATION_EVENT,
                    attributes={**common, **_score_attributes(score)},
                )
                sent += 1
        return sent

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


def _judged(
    report: EvaluatedReport[R], run: R, store: object, *, conversational: bool
) -> tuple[Node | None, str | None] | None:
    """The call a run's scores judge (its session's first top-level call; None for a
    conversation, a call per turn) and the id of the last model reply in it (in the
    whole run for a conversation); None when the report has no DAG for the run."""
    try:
        dag = report.dag(run, store=store)
    except Exception:  # no DAG kept, no store to read it from: the score still goes out
        return None
    node = None
    if not conversational:
        node = next((n for n in dag.nodes if n.parent is None and n.kind == "code"), None)
    inside = dag.nodes if node is None else [node, *_descendants(dag, node)]
    replies = [n for n in inside if n.kind == "llm" and (n.meta.get("response") or {}).get("id")]
    response = str(replies[-1].meta["response"]["id"]) if replies else None
    return node, response


def _descendants(dag: ContextDAG, node: Node) -> list[Node]:
    found, pending = [], [node.id]
    while pending:
        for child in dag.children(pending.pop()):
            found.append(child)
            pending.append(child.id)
    return found


def _score_attributes(score: _Scored) -> dict[str, Any]:
    """A ScoreResult as the event's gen_ai.evaluation.* (and error.type) attributes."""
    attributes: dict[str, Any] = {"gen_ai.evaluation.name": str(score.key)}
    if score.value is not None:
        attributes["gen_ai.evaluation.score.value"] = float(score.value)
        if score.binary:
            attributes["gen_ai.evaluation.score.label"] = "pass" if score.value >= 1 else "fail"
    explanation = score.error if score.error is not None else score.reason
    if explanation:
        attributes["gen_ai.evaluation.explanation"] = elide(str(explanation), _EXPLANATION)
    if score.error is not None:
        attributes["error.type"] = _error_type(score.error)
    return attributes


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
