"""litellm over real HTTP to a fault-injecting server: every reply shape ends as a typed
ModelError, missing keys fail at once, and a key echoed by the provider is stored,
logged, exported and raised nowhere."""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram import (
    LoggingCallback,
    ModelAuthError,
    ModelError,
    ModelOutputError,
    ModelUnavailable,
    Runtime,
    Session,
    TrajectorySaver,
    agentic_function,
    llm,
)
from openprogram.display import write_export, write_report
from tests.support.fault_server import REPLY_SHAPES, FaultServer, RawReply, completion

KEY = "sk-fault-0123456789abcdefghij"
HEX_KEY = "9f86d081884c7d659a2feaa0c55ad015"  # 32 hex characters, no known prefix


@pytest.fixture
def fault() -> Iterator[FaultServer]:
    with FaultServer() as server:
        yield server


def runtime_for(fault: FaultServer, **options: Any) -> Runtime:
    options.setdefault("api_key", KEY)
    runtime = Runtime("openai/test-model", api_base=fault.url, timeout=10, **options)
    runtime._sleep = lambda seconds: None  # the waits are tested offline
    return runtime


def ask(runtime: Runtime, *, use_async: bool = False) -> Any:
    with Session() as session, runtime:
        try:
            if use_async:
                return asyncio.run(runtime.allm("hello")), session
            return llm("hello"), session
        except ModelError as exc:
            return exc, session


@pytest.mark.parametrize("use_async", [False, True], ids=["llm", "allm"])
@pytest.mark.parametrize("shape", list(REPLY_SHAPES))
def test_every_reply_shape_ends_as_a_typed_model_error(fault, shape, use_async):
    fault.add(REPLY_SHAPES[shape], REPLY_SHAPES[shape])
    outcome, session = ask(runtime_for(fault, max_retries=1), use_async=use_async)
    assert isinstance(outcome, ModelError), f"{shape}: {outcome!r}"  # nothing raw escapes
    assert KEY not in str(outcome)
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and node.error.startswith(type(outcome).__name__)
    retried = isinstance(outcome, ModelUnavailable)
    assert len(fault.requests) == (2 if retried else 1), shape


def test_no_choices_is_transient_and_retried(fault):
    fault.add(REPLY_SHAPES["no choices"], RawReply.json(200, completion()))
    outcome, _ = ask(runtime_for(fault))
    assert outcome == "fine"


def test_no_content_and_no_tool_calls_is_an_output_error(fault):
    fault.add(REPLY_SHAPES["content null, no tool calls"])
    outcome, _ = ask(runtime_for(fault))
    assert isinstance(outcome, ModelOutputError)
    assert "no content and no tool calls" in str(outcome)
    assert len(fault.requests) == 1


@pytest.mark.parametrize("header", ["retry-after-ms", "Retry-After"])
@pytest.mark.parametrize("value", ["abc", "nan", "1e309", "-5", ""])
def test_unreadable_retry_headers_fall_back_to_the_backoff(fault, header, value):
    fault.add(
        RawReply.json(429, {"error": {"message": "slow down"}}, **{header: value}),
        RawReply.json(200, completion()),
    )
    waits: list[float] = []
    runtime = runtime_for(fault)
    runtime._sleep = waits.append
    outcome, _ = ask(runtime)
    assert outcome == "fine"
    assert len(waits) == 1 and 0 <= waits[0] <= 1.0  # not 120 s for "1e309"


def test_a_readable_retry_after_ms_is_honoured(fault):
    fault.add(
        RawReply.json(429, {"error": {"message": "slow"}}, **{"retry-after-ms": "250"}),
        RawReply.json(200, completion()),
    )
    waits: list[float] = []
    runtime = runtime_for(fault)
    runtime._sleep = waits.append
    assert ask(runtime)[0] == "fine"
    assert waits == [0.25]


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
bodies = st.one_of(
    json_values,
    st.builds(completion, json_values),  # a completion whose message is anything
    st.builds(lambda c: completion(choices=c), json_values),
    st.builds(lambda u: completion(usage=u), json_values),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(status=st.sampled_from([200, 200, 200, 400, 429, 500, 503]), body=bodies)
def test_fuzzed_replies_give_text_or_a_typed_error(fault, status, body):
    fault.add(RawReply.json(status, body))
    outcome, _ = ask(runtime_for(fault, max_retries=0))
    assert isinstance(outcome, (str, ModelError)), repr(outcome)


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai/gpt-4o-mini", "OPENAI_API_KEY"),
        ("gpt-4o-mini", "OPENAI_API_KEY"),
        ("anthropic/claude-3-5-haiku-20241022", "ANTHROPIC_API_KEY"),
        ("groq/llama3-8b-8192", "GROQ_API_KEY"),
        ("mistral/mistral-small", "MISTRAL_API_KEY"),
    ],
)
def test_a_missing_key_is_an_auth_error_at_once(fault, monkeypatch, model, variable):
    monkeypatch.delenv(variable, raising=False)
    runtime = Runtime(model, api_base=fault.url, max_retries=5)
    runtime._sleep = lambda seconds: pytest.fail("a missing key must not be retried")
    with Session() as session, runtime, pytest.raises(ModelAuthError) as caught:
        llm("hello")
    assert variable in str(caught.value) and "api_key=" in str(caught.value)
    assert fault.requests == []  # nothing was sent
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and node.error.startswith("ModelAuthError")


def test_a_key_passed_in_code_needs_no_variable(fault, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fault.add(RawReply.json(200, completion()))
    assert ask(runtime_for(fault))[0] == "fine"


@agentic_function
def summarise(topic: str) -> str:
    return llm(f"Summarise {topic}.")


@pytest.mark.parametrize("source", ["environment", "runtime"])
def test_a_key_echoed_by_the_provider_is_kept_nowhere(fault, monkeypatch, tmp_path, source):
    options: dict[str, Any] = {"api_key": HEX_KEY}
    if source == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", HEX_KEY)
        options = {"api_key": None}
    echo = {"error": {"message": f"Incorrect API key provided: {HEX_KEY}.", "type": "x"}}
    fault.add(RawReply.json(401, echo), RawReply.json(500, echo))
    log_file = tmp_path / "run.log"
    handler = logging.FileHandler(log_file)
    logger = logging.getLogger(f"test.secrets.{source}")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    callbacks = [LoggingCallback(logger), TrajectorySaver(tmp_path / "trajectories")]
    runtime = runtime_for(fault, callbacks=callbacks, **options)
    try:
        with Session(tmp_path / "runs.db") as session, runtime:
            with pytest.raises(ModelAuthError) as caught:
                summarise("the meeting")
            session.submit(f"the user pasted {HEX_KEY} by mistake")
    finally:
        logger.removeHandler(handler)
        handler.close()
    printed = "".join(traceback.format_exception(caught.value))
    assert HEX_KEY not in printed and "Incorrect API key provided: ***" in printed
    write_report(session, tmp_path / "report.html")
    write_export(session.dag, tmp_path / "export.json")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    names = {p.name for p in files}
    assert {"runs.db", "report.html", "export.json", "run.log", "metadata.json"} <= names
    assert any(p.parent.name == "llm" for p in files)  # the trajectory's exchanges
    for path in files:
        assert HEX_KEY.encode() not in path.read_bytes(), path
    assert "***" in (tmp_path / "run.log").read_text()
    assert "***" in Path(tmp_path / "export.json").read_text()
