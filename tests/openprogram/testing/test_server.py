"""OpenAIServer behind real litellm over HTTP, plus its own routes and shutdown."""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import threading
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

# litellm fetches its cost map from the network at import unless told otherwise.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import litellm

from openprogram.testing import OpenAIServer, RecordedRequest

T = TypeVar("T")
MESSAGES = [{"role": "user", "content": "hello"}]
PNG = (
    "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4"
    "DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)

# litellm imports its GitHub Copilot provider lazily on the first call, and pydantic warns
# about the ReadOnly TypedDicts there (_DeviceCode, _AccessTokenPoll); third-party.
pytestmark = pytest.mark.filterwarnings(
    "ignore:Items? .* on TypedDict class .* the `ReadOnly` qualifier:UserWarning"
)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(default_reply=None) as server:
        yield server


def complete(server: OpenAIServer, **options: Any) -> Any:
    """litellm.completion against `server` with litellm's and openai's retries off."""
    options.setdefault("messages", MESSAGES)
    options.setdefault("model", "openai/test-model")
    return litellm.completion(
        api_base=server.url,
        api_key="sk-test",
        num_retries=0,
        max_retries=0,
        **options,
    )


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on a private event loop, leaving the thread's current loop alone.

    litellm's sync calls create the thread's loop via asyncio.get_event_loop() and never
    close it; asyncio.run() would unset it, so it leaks as an "unclosed event loop"
    ResourceWarning in whichever later test the garbage collector happens to run.
    """
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def get(url: str, path: str) -> tuple[int, dict[str, str], Any]:
    host_port = url.removeprefix("http://").split("/", 1)[0]
    connection = http.client.HTTPConnection(host_port, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read())
    finally:
        connection.close()


def post(url: str, path: str, body: Any) -> tuple[int, dict[str, str], Any]:
    """POST JSON with the standard library; returns status, headers and parsed body."""
    host_port = url.removeprefix("http://").split("/", 1)[0]
    connection = http.client.HTTPConnection(host_port, timeout=5)
    try:
        connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), json.loads(response.read())
    finally:
        connection.close()


def test_scripted_reply_round_trips_through_litellm(server: OpenAIServer) -> None:
    server.reply("hi there", prompt_tokens=12, completion_tokens=3)

    response = complete(server)

    assert response.choices[0].message.content == "hi there"
    assert response.choices[0].finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (12, 3)
    assert response.usage.total_tokens == 15
    assert server.pending == 0


def test_request_body_and_headers_are_recorded_with_image_parts_unchanged(
    server: OpenAIServer,
) -> None:
    image_part = {"type": "image_url", "image_url": {"url": PNG}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "what?"}, image_part]}]
    server.reply("a pixel")

    complete(server, messages=messages, temperature=0)

    [request] = server.requests
    assert isinstance(request, RecordedRequest)
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body["model"] == "test-model"
    assert request.body["temperature"] == 0
    assert request.body["messages"][0]["content"][1] == image_part


def test_429_with_retry_after_raises_rate_limit_error_with_header_readable(
    server: OpenAIServer,
) -> None:
    server.fail(429, retry_after=7, message="slow down")

    with pytest.raises(litellm.RateLimitError, match="slow down") as caught:
        complete(server)

    assert caught.value.status_code == 429
    assert caught.value.response.headers["retry-after"] == "7"
    assert caught.value.litellm_response_headers["Retry-After"] == "7"
    assert len(server.requests) == 1, "litellm or the openai client retried on its own"


@pytest.mark.parametrize(
    ("status", "error"),
    [
        (400, litellm.BadRequestError),
        (401, litellm.AuthenticationError),
        (404, litellm.NotFoundError),
        (500, litellm.InternalServerError),
        (503, litellm.ServiceUnavailableError),
    ],
)
def test_scripted_failure_maps_to_litellm_error(
    server: OpenAIServer, status: int, error: type[Exception]
) -> None:
    server.fail(status, message=f"scripted {status}")

    with pytest.raises(error, match=f"scripted {status}"):
        complete(server)

    assert len(server.requests) == 1


def test_empty_script_answers_500_when_default_reply_is_none(server: OpenAIServer) -> None:
    status, _, body = post(server.url, "/v1/chat/completions", {"model": "m", "messages": []})

    assert status == 500
    assert "script ran out" in body["error"]["message"]
    assert body["error"]["type"] == "server_error"


def test_a_list_responder_is_a_scripted_model_script_served_in_order() -> None:
    script = [
        "plain",
        {"answer": 42},
        {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}], "content": "adding"},
        ValueError("scripted outage"),
    ]
    with OpenAIServer(script) as server:
        plain, as_json, calls = complete(server), complete(server), complete(server)
        assert server.pending == 1
        outage, _, outage_body = post(server.url, "/v1/chat/completions", {"model": "m"})
        ran_out, _, ran_out_body = post(server.url, "/v1/chat/completions", {"model": "m"})

    assert plain.choices[0].message.content == "plain"
    assert json.loads(as_json.choices[0].message.content) == {"answer": 42}
    call = calls.choices[0].message.tool_calls[0]
    assert (call.function.name, json.loads(call.function.arguments)) == ("add", {"a": 2, "b": 3})
    assert calls.choices[0].message.content == "adding"
    assert (outage, ran_out) == (500, 500)
    assert "scripted outage" in outage_body["error"]["message"]
    assert "ran out" in ran_out_body["error"]["message"]


def test_a_dict_responder_answers_per_model_name_and_lists_them() -> None:
    with OpenAIServer({"planner": ["plan A"], "*": ["anyone"]}) as server:
        planned = complete(server, model="openai/planner")
        other = complete(server, model="openai/writer")
        status, _, models = get(server.url, "/v1/models")

    assert planned.choices[0].message.content == "plan A"
    assert other.choices[0].message.content == "anyone"
    assert (status, [m["id"] for m in models["data"]]) == (200, ["planner"])


def test_a_responder_that_is_not_a_list_or_callable_is_refused() -> None:
    from openprogram import UsageError

    with pytest.raises(UsageError, match="must be a list of replies"):
        OpenAIServer("just one string")


def test_empty_script_uses_responder_then_default_reply() -> None:
    with OpenAIServer(responder=lambda body: body["messages"][-1]["content"].upper()) as server:
        response = complete(server)
    with OpenAIServer() as server:
        default = complete(server)

    assert response.choices[0].message.content == "HELLO"
    assert default.choices[0].message.content == "ok"


def test_completion_is_openai_shaped_and_echoes_model(server: OpenAIServer) -> None:
    server.reply("x")

    status, headers, body = post(server.url, "/chat/completions", {"model": "gpt-test"})

    assert status == 200
    assert headers["Content-Type"] == "application/json"
    assert body["object"] == "chat.completion"
    assert body["model"] == "gpt-test"
    assert body["choices"] == [
        {"index": 0, "message": {"role": "assistant", "content": "x"}, "finish_reason": "stop"}
    ]
    assert body["usage"] == {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def test_usage_is_counted_from_the_words_of_the_request_and_the_reply() -> None:
    with OpenAIServer(["Hello, world", "one two three four five"]) as server:
        short = complete(server, messages=[{"role": "user", "content": "hi"}])
        long = complete(server, messages=[{"role": "user", "content": "a b c d e f g h"}])

    # words and punctuation marks: "Hello" "," "world"
    assert (short.usage.prompt_tokens, short.usage.completion_tokens) == (1, 3)
    assert (long.usage.prompt_tokens, long.usage.completion_tokens) == (8, 5)


def stream_events(url: str, body: Any) -> list[Any]:
    """POST a streaming request; the parsed `data:` events, [DONE] as the string."""
    host_port = url.removeprefix("http://").split("/", 1)[0]
    connection = http.client.HTTPConnection(host_port, timeout=5)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps(body))
        response = connection.getresponse()
        assert response.getheader("Content-Type") == "text/event-stream"
        text = response.read().decode()
    finally:
        connection.close()
    events = [line.removeprefix("data: ") for line in text.split("\n\n") if line]
    return [event if event == "[DONE]" else json.loads(event) for event in events]


def test_stream_requests_get_server_sent_events_word_by_word(server: OpenAIServer) -> None:
    server.reply("two words", prompt_tokens=7, completion_tokens=2)

    events = stream_events(
        server.url,
        {"model": "m", "stream": True, "stream_options": {"include_usage": True}},
    )

    assert events[-1] == "[DONE]"
    deltas = [e["choices"][0]["delta"].get("content") for e in events[:-1] if e["choices"]]
    assert "".join(d for d in deltas if d) == "two words"
    assert [d for d in deltas if d] == ["two", " words"]
    assert events[-2]["usage"]["prompt_tokens"] == 7
    assert server.pending == 0


def test_a_stream_can_break_off_mid_response(server: OpenAIServer) -> None:
    server.reply("one two three four", break_after=2)
    host_port = server.url.removeprefix("http://").split("/", 1)[0]
    connection = http.client.HTTPConnection(host_port, timeout=5)
    try:
        connection.request("POST", "/v1/chat/completions", json.dumps({"stream": True}))
        response = connection.getresponse()
        with pytest.raises(http.client.IncompleteRead) as caught:
            response.read()
    finally:
        connection.close()
    assert b"one" in caught.value.partial and b"three" not in caught.value.partial


def test_tool_call_replies_carry_the_calls_with_json_arguments(server: OpenAIServer) -> None:
    server.reply(tool_calls=[{"name": "add", "arguments": {"a": 1}}])

    status, _, body = post(server.url, "/v1/chat/completions", {"model": "m"})

    assert status == 200
    (choice,) = body["choices"]
    assert choice["finish_reason"] == "tool_calls"
    (call,) = choice["message"]["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "add", "arguments": '{"a": 1}'}


def test_models_route_lists_a_model(server: OpenAIServer) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        connection.request("GET", "/v1/models")
        response = connection.getresponse()
        body = json.loads(response.read())
    finally:
        connection.close()

    assert response.status == 200
    assert body["object"] == "list"
    assert body["data"][0]["id"] == "test-model"


def test_fail_rejects_a_non_error_status(server: OpenAIServer) -> None:
    with pytest.raises(ValueError, match="status=200"):
        server.fail(200)


def test_stop_joins_every_thread_and_closes_the_port() -> None:
    before = set(threading.enumerate())
    server = OpenAIServer()
    post(server.url, "/v1/chat/completions", {"model": "m"})

    server.stop()
    server.stop()

    assert set(threading.enumerate()) - before == set()
    with pytest.raises(ConnectionRefusedError):
        post(server.url, "/v1/chat/completions", {"model": "m"})
