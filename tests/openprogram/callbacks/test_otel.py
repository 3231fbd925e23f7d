"""OtelCallback: spans per call, tool call and llm exchange in OpenTelemetry's GenAI
semantic conventions, nested like the DAG, opt-in only."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

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
from openprogram.testing import OpenAIServer
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
        ("chat priced/test", 2),
        ("invoke_agent inner", 2),
        ("invoke_agent outer", 1),
    ]
    (root,) = spans["invoke_agent outer"]
    assert root.parent is None
    for child in spans["invoke_agent inner"]:
        assert child.parent.span_id == root.context.span_id
        assert child.context.trace_id == root.context.trace_id
    inner_ids = {s.context.span_id for s in spans["invoke_agent inner"]}
    llm_span = spans["chat priced/test"][0]
    assert llm_span.parent.span_id in inner_ids
    assert llm_span.attributes["gen_ai.usage.input_tokens"] == 100
    assert llm_span.attributes["gen_ai.usage.output_tokens"] == 10
    assert llm_span.attributes["openprogram.usage.cached_tokens"] == 40
    assert llm_span.attributes["openprogram.usage.reasoning_tokens"] == 3
    assert llm_span.attributes["openprogram.usage.cost_usd"] == pytest.approx(0.003)
    assert llm_span.attributes["openprogram.usage.cost_known"] is True
    assert llm_span.attributes["gen_ai.request.model"] == "priced/test"
    assert llm_span.attributes["gen_ai.operation.name"] == "chat"
    assert llm_span.attributes["gen_ai.provider.name"] == "priced"
    assert llm_span.attributes["gen_ai.agent.name"] == "inner"
    assert llm_span.attributes["gen_ai.conversation.id"] == session.id
    assert root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["gen_ai.agent.name"] == "outer"
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
    assert llm_span.name == "chat scripted" and llm_span.status.status_code is StatusCode.ERROR
    assert llm_span.attributes["error.type"] == "ModelAuthError"
    assert call_span.name == "invoke_agent inner"
    assert call_span.status.status_code is StatusCode.ERROR
    assert call_span.attributes["error.type"] == "ModelAuthError"
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
    assert spans["invoke_agent inner"][0].parent.span_id == spans["request"][0].context.span_id


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


@agentic_function
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@agentic_function
def sums() -> str:
    return llm("What is 2 + 3?", tools=[add])


@pytest.mark.parametrize("path", ["openai", "litellm"])
def test_a_run_over_http_shows_as_an_agent_with_its_model_calls_and_tool_calls(
    exporter, monkeypatch, path
):
    """Over real HTTP (the openai SDK path and litellm's), as Logfire, Langfuse or Phoenix
    read it: invoke_agent, chat {model} with provider, response model and finish reasons,
    execute_tool {tool} with the call id; the agent and tool spans of the old callback were
    named after the function and carried no gen_ai attribute."""
    memory, provider = exporter
    if path == "litellm":
        monkeypatch.setenv("OPENPROGRAM_LITELLM", "always")
    script = [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, "5"]
    with (
        OpenAIServer(script) as server,
        Session() as session,
        Runtime(
            "openai/local-model",
            api_base=server.url,
            api_key="test",
            callbacks=[OtelCallback(provider)],
        ),
    ):
        assert sums() == "5"
    spans = by_name(memory.get_finished_spans())
    assert sorted(spans) == ["chat openai/local-model", "execute_tool add", "invoke_agent sums"]
    (agent,) = spans["invoke_agent sums"]
    (tool,) = spans["execute_tool add"]
    asking, answering = sorted(spans["chat openai/local-model"], key=lambda s: s.start_time)
    assert agent.kind is SpanKind.INTERNAL and tool.kind is SpanKind.INTERNAL
    assert asking.kind is SpanKind.CLIENT
    for chat in (asking, answering):
        assert chat.parent.span_id == agent.context.span_id
        assert chat.attributes["gen_ai.operation.name"] == "chat"
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == "openai/local-model"
        assert chat.attributes["gen_ai.response.model"] == "local-model"
        assert chat.attributes["gen_ai.conversation.id"] == session.id
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
    assert asking.attributes["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert answering.attributes["gen_ai.response.finish_reasons"] == ("stop",)
    recorded = session.dag.find(name="add", kind="code")[0]
    assert tool.parent.span_id == agent.context.span_id
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "add"
    assert tool.attributes["gen_ai.tool.call.id"] == recorded.meta["tool_call_id"]
