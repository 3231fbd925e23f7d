"""Eval results as OpenTelemetry events (GenAI semantic conventions): one
`gen_ai.evaluation.result` log record per score, with its name, value, pass/fail label,
explanation, error type and the judged reply's id, parented to the span of the call it
judges; read back from the SDK's in-memory exporters."""

from __future__ import annotations

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from openprogram import Runtime, ScriptedModel, agentic_function, llm
from openprogram.callbacks.otel import EVALUATION_EVENT, OtelCallback
from openprogram.evals import Case, Dataset, Score, equals
from openprogram.testing import OpenAIServer


@pytest.fixture
def telemetry():
    spans, logs = InMemorySpanExporter(), InMemoryLogRecordExporter()
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    yield OtelCallback(tracer_provider, logger_provider), spans, logs
    tracer_provider.shutdown()
    logger_provider.shutdown()


@agentic_function
def tagline(product: str) -> str:
    return llm(f"A tagline for {product}.")


def short(case, output) -> Score:
    return Score(1.0 - len(output) / 100, reason=f"{len(output)} characters")


def broken(case, output) -> float:
    raise ValueError("this scorer is broken")


DATASET = Dataset(cases=[
    Case(inputs={"product": "tea"}, expected="Smart tea.", name="tea"),
    Case(inputs={"product": "coffee"}, expected="Smart coffee.", name="coffee"),
])  # fmt: skip


def events(logs) -> list:
    found = [r.log_record for r in logs.get_finished_logs()]
    assert all(record.event_name == EVALUATION_EVENT for record in found)
    return found


def test_each_score_is_an_event_parented_to_the_span_of_the_call_it_judges(telemetry):
    otel, spans, logs = telemetry
    with otel.scope():  # evaluate() makes a Runtime per run; the scope reaches each
        report = DATASET.evaluate(
            tagline, [equals, short, broken], model=ScriptedModel(["Smart tea.", "Coffee!"])
        )
    assert otel.record_evaluation(report) == 6
    runs = {
        span.attributes["openprogram.node_id"]: span
        for span in spans.get_finished_spans()
        if span.name == "invoke_agent tagline"
    }
    assert len(runs) == 2
    by_case: dict = {}
    for record in events(logs):
        by_case.setdefault(record.attributes["openprogram.eval.case"], {})[
            record.attributes["gen_ai.evaluation.name"]
        ] = record
        judged = runs[record.attributes["openprogram.node_id"]]  # the call it judges
        assert (record.trace_id, record.span_id) == (
            judged.context.trace_id,
            judged.context.span_id,
        )
        assert record.timestamp
    tea, coffee = by_case["tea"], by_case["coffee"]
    assert tea["equals"].attributes["gen_ai.evaluation.score.value"] == 1.0
    assert tea["equals"].attributes["gen_ai.evaluation.score.label"] == "pass"
    assert coffee["equals"].attributes["gen_ai.evaluation.score.label"] == "fail"
    assert "Smart coffee." in coffee["equals"].attributes["gen_ai.evaluation.explanation"]
    assert coffee["short"].attributes["gen_ai.evaluation.score.value"] == pytest.approx(0.93)
    assert coffee["short"].attributes["gen_ai.evaluation.explanation"] == "7 characters"
    assert "gen_ai.evaluation.score.label" not in coffee["short"].attributes  # not pass/fail
    failed = tea["broken"].attributes
    assert failed["error.type"] == "ValueError" and "gen_ai.evaluation.score.value" not in failed
    assert "this scorer is broken" in failed["gen_ai.evaluation.explanation"]


def test_an_event_names_the_reply_it_judges_by_its_response_id_over_http(telemetry):
    """Over real HTTP the reply has an id (the provider's): the event carries it as
    gen_ai.response.id, the same as the chat span's, so a backend can join them even
    when the event's span is not known."""
    otel, spans, logs = telemetry
    with (
        OpenAIServer(["Smart tea.", "Smart coffee."]) as server,
        Runtime("openai/local", api_base=server.url, api_key="test", callbacks=[otel]),
    ):
        report = DATASET.evaluate(tagline, [equals])
    otel.record_evaluation(report)
    replies = {
        span.attributes["gen_ai.response.id"]
        for span in spans.get_finished_spans()
        if span.name == "chat openai/local"
    }
    judged = {record.attributes["gen_ai.response.id"] for record in events(logs)}
    assert judged == replies and len(judged) == 2
    assert all(r.startswith("chatcmpl-") for r in judged)


def test_a_saved_report_whose_runs_no_callback_saw_still_sends_every_score(telemetry, tmp_path):
    otel, _, logs = telemetry
    report = DATASET.evaluate(tagline, [equals], model=ScriptedModel(["Smart tea.", "No."]))
    loaded = type(report).load(report.save(tmp_path / "report.json"))
    assert otel.record_evaluation(loaded) == 2
    for record in events(logs):
        assert not record.span_id  # no span recorded these runs: nothing to parent to
        assert "gen_ai.response.id" not in record.attributes  # a scripted reply has no id
    labels = {r.attributes["gen_ai.evaluation.score.label"] for r in events(logs)}
    assert labels == {"pass", "fail"}
