"""litellm, and the openai SDK path, sending real HTTP to a local OpenAI-compatible server
on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from PIL import Image as PILImage

from openprogram import (
    ModelAuthError,
    ModelBadRequest,
    ModelUnavailable,
    Runtime,
    Session,
    agentic_function,
    llm,
)
from openprogram.testing import OpenAIServer

KEY = "sk-test-0123456789abcdefghij"


@pytest.fixture(params=["openai-sdk", "litellm"])
def server(request, monkeypatch):
    """The server, reached by the openai SDK path (the default for `openai/` names at an
    api_base) and by litellm (OPENPROGRAM_LITELLM=always): both must behave alike."""
    if request.param == "litellm":
        monkeypatch.setenv("OPENPROGRAM_LITELLM", "always")
    with OpenAIServer(default_reply=None) as running:
        yield running


def runtime_for(server, model="openai/test-model", **options) -> Runtime:
    runtime = Runtime(model, api_base=server.url, api_key=KEY, **options)
    runtime._sleep = lambda seconds: None  # the delays themselves are tested offline
    return runtime


@agentic_function
def describe(picture) -> str:
    return llm(["What colour is this?", {"type": "image", "image": picture}])


def test_the_request_body_carries_the_rendered_messages_and_image_data_urls(server):
    server.reply("red", prompt_tokens=120, completion_tokens=3)
    with Session() as session, runtime_for(server, system="Be terse."):
        session.submit("Look at my picture.")
        assert describe(PILImage.new("RGB", (4, 4), "red")) == "red"
    (request,) = server.requests
    messages = request.body["messages"]
    assert messages[0] == {"role": "system", "content": "Be terse."}
    parts = messages[1]["content"]
    assert parts[0] == {"type": "text", "text": "user: Look at my picture."}
    assert parts[1]["text"].startswith('[describe #1] input={"picture": "<image sha256:')
    assert parts[2] == {"type": "text", "text": "What colour is this?"}
    assert parts[3]["image_url"]["url"].startswith("data:image/png;base64,")
    node = session.dag.find(kind="llm")[0]
    assert (node.usage.input_tokens, node.usage.output_tokens) == (120, 3)
    assert node.usage.cost_known is False  # test-model is not in litellm's price list


def test_known_models_get_a_usd_cost(server):
    server.reply("ok", prompt_tokens=1000, completion_tokens=500)
    runtime = runtime_for(server, model="openai/gpt-4o-mini")
    with Session(), runtime:
        llm("hello")
    assert runtime.usage.cost_usd > 0 and runtime.usage.cost_known


def test_a_429_and_a_500_are_retried(server):
    server.fail(429, retry_after=0)
    server.fail(500)
    server.reply("third time lucky")
    with Session() as session, runtime_for(server, max_retries=2):
        assert llm("hello") == "third time lucky"
    assert len(server.requests) == 3
    (node,) = session.dag.find(kind="llm")
    assert [a.split(":")[0] for a in node.meta["attempts"]] == ["ModelUnavailable"] * 2


def test_retries_give_up_with_model_unavailable(server):
    for _ in range(3):
        server.fail(503)
    with Session(), runtime_for(server, max_retries=2), pytest.raises(ModelUnavailable):
        llm("hello")
    assert len(server.requests) == 3


def test_a_401_is_not_retried_and_the_key_is_never_recorded(server):
    server.fail(401, message=f"Incorrect API key provided: {KEY}")
    with Session() as session, runtime_for(server), pytest.raises(ModelAuthError) as caught:
        llm("hello")
    assert len(server.requests) == 1
    assert KEY not in str(caught.value)
    assert "OPENAI_API_KEY" in str(caught.value)  # the message says what to do
    assert KEY not in json.dumps(session.dag.to_dict())


def test_a_400_is_a_bad_request(server):
    server.fail(400, message="bad parameter")
    with Session(), runtime_for(server), pytest.raises(ModelBadRequest, match="bad parameter"):
        llm("hello")
    assert len(server.requests) == 1


def test_a_refused_connection_is_retried_then_reported(server):
    url = server.url
    server.stop()
    runtime = Runtime("openai/test-model", api_base=url, api_key=KEY, max_retries=1)
    runtime._sleep = lambda seconds: None
    with Session(), runtime, pytest.raises(ModelUnavailable, match="gave up after 2"):
        llm("hello")


def test_allm_goes_over_http_too(server):
    import asyncio

    server.reply("async hello")

    async def main():
        return await runtime.allm("hi")

    runtime = runtime_for(server)
    with Session():
        loop = asyncio.new_event_loop()
        try:
            assert loop.run_until_complete(main()) == "async hello"
        finally:
            loop.close()
