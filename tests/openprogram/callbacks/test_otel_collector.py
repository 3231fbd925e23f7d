"""OtelCallback's spans and eval events through OTLP/HTTP into a real OpenTelemetry
collector: Rotel (from PyPI, its binary in the wheel), run as a child process that
prints every span and log record it receives, which the test reads back."""

from __future__ import annotations

import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from rotel.agent import Agent

from openprogram import ScriptedModel
from openprogram.callbacks.otel import OtelCallback
from openprogram.evals import equals
from tests.openprogram.callbacks.test_otel_evals import DATASET, tagline

pytestmark = pytest.mark.slow


class Collector:
    """A Rotel collector on 127.0.0.1 that prints what it receives; `seen(pattern)`
    waits until its output matches."""

    def __init__(self) -> None:
        self.port = _free_port()
        argv = [str(Agent().agent_path), "start", "--exporter", "blackhole",
                "--debug-log", "traces", "--debug-log", "logs", "--debug-log-verbosity",
                "detailed", "--otlp-http-endpoint", f"127.0.0.1:{self.port}",
                "--otlp-grpc-endpoint", f"127.0.0.1:{_free_port()}"]  # fmt: skip
        self.process = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.output = ""
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.seen(r"Starting Rotel")

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.output += line
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def seen(self, pattern: str, times: int = 1, timeout: float = 120.0) -> list[Any]:
        """The matches of `pattern` in what the collector printed, once there are `times`
        of them (fails when it exits first, or after `timeout` seconds without them)."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while len(found := re.findall(pattern, self.output)) < times:
                left = deadline - time.monotonic()
                assert self.process.poll() is None and left > 0, self.output[-3000:]
                self._changed.wait(left)
        return found

    def url(self, signal: str) -> str:
        return f"http://127.0.0.1:{self.port}/v1/{signal}"

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._reader.join()  # it read to the end: the pipe is closed
        assert self.process.stdout is not None
        self.process.stdout.close()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def collector() -> Iterator[Collector]:
    started = Collector()
    yield started
    started.close()


def test_spans_and_eval_events_reach_a_real_collector_joined_by_their_ids(collector):
    tracer_provider, logger_provider = TracerProvider(), LoggerProvider()
    spans = OTLPSpanExporter(endpoint=collector.url("traces"))
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    events = OTLPLogExporter(endpoint=collector.url("logs"))
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(events))
    otel = OtelCallback(tracer_provider, logger_provider)
    try:
        with otel.scope():
            report = DATASET.evaluate(tagline, [equals], model=ScriptedModel(["Smart tea.", "No."]))
        assert otel.record_evaluation(report) == 2
    finally:
        tracer_provider.shutdown()
        logger_provider.shutdown()
    # what the collector decoded: two runs' spans, then two events, each on a run's span
    for label in ("pass", "fail"):
        collector.seen(rf"-> gen_ai.evaluation.score.label: Str\({label}\)")
    collector.seen(r"-> gen_ai.operation.name: Str\(invoke_agent\)", times=2)
    collector.seen(r"-> gen_ai.evaluation.name: Str\(equals\)", times=2)
    runs = set(collector.seen(RUN_SPAN, times=2))
    judged = collector.seen(EVENT, times=2)
    assert len(runs) == 2 and len(judged) == 2, collector.output[-3000:]
    assert set(judged) == runs  # each event hangs on the span of the run it judges


RUN_SPAN = (
    r"Trace ID\s+: (\w+)\n\s+Parent ID\s+: \n\s+ID\s+: (\w+)\n\s+Name\s+: invoke_agent tagline"
)
EVENT = (
    r"EventName: gen_ai.evaluation.result\n(?:.*\n)*?\s+Trace ID\s+: (\w+)\n\s+Span ID\s+: (\w+)"
)
