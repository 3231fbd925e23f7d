"""Tool calls and streaming through litellm over real HTTP to the local server."""

from __future__ import annotations

import asyncio
import json

import pytest

from openprogram import (
    Callback,
    ModelError,
    ModelUnavailable,
    Runtime,
    Session,
    agentic_function,
    allm,
    llm,
)
from openprogram.render.render import seen_by
from openprogram.testing import OpenAIServer

KEY = "sk-test-0123456789abcdefghij"


@pytest.fixture
def server():
    with OpenAIServer(default_reply=None) as running:
        yield running


def runtime_for(server, **options) -> Runtime:
    runtime = Runtime("openai/test-model", api_base=server.url, api_key=KEY, **options)
    runtime._sleep = lambda seconds: None
    return runtime


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@agentic_function
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


@agentic_function
def solve(question: str) -> str:
    return llm(question, tools=[add, divide], max_tool_turns=3)


def test_parallel_tool_calls_run_and_the_second_request_carries_them(server):
    server.reply(
        tool_calls=[
            {"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_a"},
            {"name": "divide", "arguments": {"a": 1, "b": 0}, "id": "call_b"},
        ]
    )
    server.reply("5, and 1/0 is undefined")
    with Session() as session, runtime_for(server):
        assert solve("2+3 and 1/0") == "5, and 1/0 is undefined"
    first, second = server.requests
    assert [t["function"]["name"] for t in first.body["tools"]] == ["add", "divide"]
    assert first.body["tools"][0]["function"]["parameters"]["required"] == ["a", "b"]
    assistant, ok, failed = second.body["messages"][-3:]
    assert assistant["role"] == "assistant"
    assert [c["id"] for c in assistant["tool_calls"]] == ["call_a", "call_b"]
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {"a": 2, "b": 3}
    assert ok == {"role": "tool", "tool_call_id": "call_a", "content": "5"}
    assert failed["role"] == "tool" and failed["tool_call_id"] == "call_b"
    assert failed["content"] == "error: ZeroDivisionError: float division by zero"
    llm_nodes = session.dag.find(kind="llm")
    rebuilt = seen_by(session.dag, llm_nodes[1]).messages
    sent = [{k: v for k, v in m.items() if v is not None} for m in rebuilt]  # litellm drops nulls
    assert sent == second.body["messages"]
    assert [n.meta["tool_call_id"] for n in session.dag.find(kind="code")[1:]] == [
        "call_a",
        "call_b",
    ]


def test_unknown_tools_and_invalid_arguments_go_back_over_http(server):
    server.reply(
        tool_calls=[
            {"name": "sqrt", "arguments": {"x": 4}},
            {"name": "add", "arguments": '{"a": 1, "b": '},
        ]
    )
    server.reply("sorry")
    with Session(), runtime_for(server):
        assert solve("sqrt 4") == "sorry"
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_messages[0]["content"].startswith("error: there is no tool 'sqrt'")
    assert tool_messages[1]["content"].startswith("error: the arguments of add are not a JSON")


def test_max_tool_turns_over_http(server):
    for _ in range(4):
        server.reply(tool_calls=[{"name": "add", "arguments": {"a": 1, "b": 1}}])
    with (
        Session() as session,
        runtime_for(server),
        pytest.raises(ModelError, match="max_tool_turns=3"),
    ):
        solve("loop forever")
    assert len(server.requests) == 4
    assert len(session.dag.find(name="add", kind="code")) == 3


def test_allm_tool_loop_over_http(server):
    server.reply(tool_calls=[{"name": "add", "arguments": {"a": 20, "b": 22}}])
    server.reply("42")

    @agentic_function
    async def agent() -> str:
        return await allm("sum", tools=[add])

    async def main():
        with Session(), runtime_for(server):
            return await agent()

    assert asyncio.run(main()) == "42"


class Chunks(Callback):
    def __init__(self):
        self.seen: list[str] = []

    def on_llm_chunk(self, node, chunk):
        self.seen.append(chunk)


def test_a_stream_runs_to_the_end_and_completes_the_node(server):
    server.reply("streamed over real HTTP", prompt_tokens=9, completion_tokens=4)
    watcher = Chunks()
    with Session() as session, runtime_for(server, callbacks=[watcher]):
        stream = llm("talk", stream=True)
        chunks = list(stream)
    assert "".join(chunks) == "streamed over real HTTP" and len(chunks) == 4
    assert watcher.seen == chunks
    (node,) = session.dag.find(kind="llm")
    assert node.status == "completed" and node.output == "streamed over real HTTP"
    assert (node.usage.input_tokens, node.usage.output_tokens) == (9, 4)
    assert server.requests[0].body["stream"] is True


def test_a_stream_that_breaks_off_marks_the_node_and_keeps_the_partial_text(server):
    server.reply("one two three four five", break_after=3)
    received: list[str] = []
    with Session() as session, runtime_for(server), pytest.raises(ModelUnavailable) as caught:
        for chunk in llm("talk", stream=True):
            received.append(chunk)
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and "broke off" in node.error
    assert node.output == "".join(received) and node.output.startswith("one")
    assert "five" not in node.output
    assert caught.value.node_id == node.id


def test_a_consumer_that_stops_early_leaves_the_partial_text(server):
    server.reply("one two three four five")
    with Session() as session, runtime_for(server), llm("talk", stream=True) as stream:
        for chunk in stream:
            if "two" in chunk:
                break
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and node.output == "one two"
    assert node.error == "the consumer stopped reading after 7 characters"


def test_allm_streams_over_http(server):
    server.reply("async words here")

    async def main():
        with Session() as session, runtime_for(server):
            stream = await allm("talk", stream=True)
            return [chunk async for chunk in stream], session

    chunks, session = asyncio.run(main())
    assert "".join(chunks) == "async words here"
    assert session.dag.find(kind="llm")[0].output == "async words here"


def test_a_stream_is_retried_until_its_first_chunk_and_refused_keys_fail_at_once(server):
    from openprogram import ModelAuthError

    server.fail(503)
    server.reply("after a retry")
    with Session() as session, runtime_for(server):
        assert "".join(llm("talk", stream=True)) == "after a retry"
        server.fail(401)
        with pytest.raises(ModelAuthError):
            llm("again", stream=True)
    first, failed = session.dag.find(kind="llm")
    assert first.status == "completed" and len(first.meta["attempts"]) == 1
    assert failed.status == "error"


def test_a_streamed_reply_that_asks_for_tools_is_an_error_not_an_empty_text(server):
    server.reply(tool_calls=[{"name": "add", "arguments": {"a": 20, "b": 22}, "id": "call_s"}])
    received: list[str] = []
    with Session() as session, runtime_for(server), pytest.raises(ModelError) as caught:
        for chunk in llm("talk", stream=True):
            received.append(chunk)
    assert received == []
    assert "tool calls (add)" in str(caught.value) and "this call offers no tools" in str(
        caught.value
    )
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and caught.value.node_id == node.id
    # the arguments' pieces were put back together
    assert node.meta["tool_calls"] == [
        {"id": "call_s", "name": "add", "arguments": {"a": 20, "b": 22}}
    ]


def test_a_refused_huge_tool_argument_is_not_echoed_back_whole(server):
    big = "x" * 10_000_000
    calls = [
        {"name": "add", "arguments": {"a": big, "b": 1}, "id": "call_type"},
        {"name": "add", "arguments": '{"a": "' + "y" * 1_000_000, "id": "call_json"},
        {"name": "add", "arguments": {"k" * 100_000: 1}, "id": "call_key"},
        {"name": "n" * 100_000, "arguments": {}, "id": "call_name"},
    ]
    server.reply(tool_calls=calls)
    server.reply("sorry")
    with Session(), runtime_for(server):
        assert solve("add") == "sorry"
    second = server.requests[1].body
    assistant = next(m for m in second["messages"] if m.get("tool_calls"))
    own = len(json.dumps(assistant))  # the model's own calls, sent back as they were
    tools = [m for m in second["messages"] if m["role"] == "tool"]
    assert [len(m["content"]) < 2_000 for m in tools] == [True] * 4
    assert "…[cut 9 999 700 of 10 000 000 characters]" in tools[0]["content"]
    assert "characters]" in tools[1]["content"] and "characters]" in tools[3]["content"]
    assert len(json.dumps(second)) < own + 20_000


def test_a_streamed_tool_loop_runs_the_tools_between_streamed_turns(server):
    server.reply("Adding.", tool_calls=[{"name": "add", "arguments": {"a": 20, "b": 22}}])
    server.reply("The answer is 42.")
    with Session() as session, runtime_for(server):
        chunks = list(llm("20 + 22?", tools=[add], stream=True))
    assert "".join(chunks) == "Adding.The answer is 42."
    [tool] = session.dag.find(name="add", kind="code")
    assert (tool.output, tool.status) == (42, "completed")
    first, second = session.dag.find(kind="llm")
    assert first.meta["tool_calls"][0]["arguments"] == {"a": 20, "b": 22}
    assert second.output == "The answer is 42."
    assert all(r.body["stream"] is True and r.body["tools"] for r in server.requests)
    assert server.requests[1].body["messages"][-1]["role"] == "tool"


def test_allm_streams_a_tool_loop_without_await_over_http(server):
    server.reply(tool_calls=[{"name": "add", "arguments": {"a": 1, "b": 2}}])
    server.reply("3")

    async def main():
        with Session() as session, runtime_for(server):
            return [c async for c in allm("1 + 2?", tools=[add], stream=True)], session

    chunks, session = asyncio.run(main())
    assert chunks == ["3"]
    assert session.dag.find(name="add", kind="code")[0].output == 3
