"""OtelCallback: spans per call and llm exchange, nested like the DAG, opt-in only."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from openprogram import (
    ModelAuthError,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    llm,
)
from openprogram.callbacks import BudgetManager
from openprogram.callbacks.otel import OtelCallback
from tests.support.priced import PricedModel


@pytest.fixture
def exporter():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter, provider
    provider.shutdown()


@agentic_function
def outer() -> str:
    return inner() + inner()


@agentic_function
def inner() -> str:
    return llm("hi")


def by_name(spans):
    result: dict = {}
    for span in spans:
        result.setdefault(span.name, []).append(span)
    return result


def test_spans_nest_like_the_dag_and_llm_spans_carry_tokens_and_cost(exporter):
    memory, provider = exporter
    with Session() as session, Runtime(PricedModel(cost=0.003), callbacks=[OtelCallback(provider)]):
        outer()
    spans = by_name(memory.get_finished_spans())
    assert sorted((name, len(items)) for name, items in spans.items()) == [
        ("inner", 2),
        ("llm inner", 2),
        ("outer", 1),
    ]
    (root,) = spans["outer"]
    assert root.parent is None
    for child in spans["inner"]:
        assert child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id
    inner_ids = {s.context.span_id for s in spans["inner"]}
    llm_span = spans["llm inner"][0]
    assert llm_span.parent.span_id in inner_ids
    assert llm_span.attributes["gen_ai.usage.input_tokens"] == 100
    assert llm_span.attributes["gen_ai.usage.output_tokens"] == 10
    assert llm_span.attributes["openprogram.core.usage.cached_tokens"] == 40
    assert llm_span.attributes["openprogram.core.usage.reasoning_tokens"] == 3
    assert llm_span.attributes["openprogram.core.usage.cost_usd"] == pytest.approx(0.003)
    assert llm_span.attributes["openprogram.core.usage.cost_known"] is True
    assert llm_span.attributes["gen_ai.request.model"] == "priced/test"
    assert root.attributes["openprogram.node_id"] == session.dag.find(name="outer")[0].id
    assert root.attributes["openprogram.status"] == "completed"
    assert root.start_time <= llm_span.start_time <= llm_span.end_time <= root.end_time


def test_failed_calls_and_exchanges_get_error_spans_and_stops_are_not_errors(exporter):
    memory, provider = exporter
    otel = OtelCallback(provider)
    refusing = Runtime(ScriptedModel([ModelAuthError("bad key")]), callbacks=[otel])
    capped = Runtime(PricedModel(), callbacks=[BudgetManager(0.0), otel])
    with Session():
        with refusing, pytest.raises(ModelAuthError):
            inner()
        with capped, pytest.raises(RunStopped):
            inner()
    failed, stopped = memory.get_finished_spans()[:2], memory.get_finished_spans()[2:]
    llm_span, call_span = failed
    assert llm_span.name == "llm inner" and llm_span.status.status_code is StatusCode.ERROR
    assert call_span.name == "inner" and call_span.status.status_code is StatusCode.ERROR
    assert llm_span.parent.span_id == call_span.context.span_id
    (stop_span,) = stopped
    assert stop_span.status.status_code is StatusCode.UNSET
    assert "budget reached" in stop_span.attributes["openprogram.stop_reason"]


def test_a_run_nests_under_the_callers_current_span(exporter):
    memory, provider = exporter
    tracer = provider.get_tracer("app")
    with (
        Session(),
        Runtime(ScriptedModel(["a"]), callbacks=[OtelCallback(provider)]),
        tracer.start_as_current_span("request"),
    ):
        inner()
    spans = by_name(memory.get_finished_spans())
    assert spans["inner"][0].parent.span_id == spans["request"][0].context.span_id


def test_without_a_configured_provider_nothing_is_recorded_or_sent():
    with Session(), Runtime(ScriptedModel(["a"]), callbacks=[OtelCallback()]):
        assert inner() == "a"


@pytest.mark.slow
def test_the_core_imports_without_opentelemetry_and_otel_says_how_to_install_it(monkeypatch):
    code = (
        "import sys, openprogram, openprogram.callbacks; "
        "assert not [m for m in sys.modules if m.startswith('opentelemetry')]"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    monkeypatch.delitem(sys.modules, "openprogram.callbacks.otel")
    with pytest.raises(ImportError, match=r'pip install "openprogram\[otel\]"'):
        importlib.import_module("openprogram.callbacks.otel")
    import openprogram.callbacks

    with pytest.raises(ImportError, match="openprogram"):
        openprogram.callbacks.OtelCallback  # noqa: B018
