"""llm(..., stream=True) offline: chunks, the node when the stream ends or stops early."""

from __future__ import annotations

import asyncio
import gc

import pytest

from openprogram import (
    Callback,
    ModelError,
    ModelReply,
    ModelUnavailable,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    allm,
    llm,
)


class Watcher(Callback):
    def __init__(self):
        self.chunks: list[tuple[str, str]] = []

    def on_llm_chunk(self, node, chunk):
        self.chunks.append((node.name, chunk))


@agentic_function
def tell() -> str:
    return "".join(llm("tell me", stream=True))


def test_a_scripted_reply_streams_in_word_chunks_and_the_node_completes():
    watcher = Watcher()
    with Session() as session, Runtime(ScriptedModel(["a short story"]), callbacks=[watcher]):
        assert tell() == "a short story"
    assert watcher.chunks == [("tell", "a"), ("tell", " short"), ("tell", " story")]
    (node,) = session.dag.find(kind="llm")
    assert node.status == "completed" and node.output == "a short story"
    assert node.usage.output_tokens > 0


def test_the_node_is_created_when_llm_is_called_and_completed_at_the_end():
    with Session() as session, Runtime(ScriptedModel(["one two"])):
        stream = llm("go", stream=True)
        (node,) = session.dag.find(kind="llm")
        assert node.status == "running" and stream.text == ""
        assert next(stream) == "one" and stream.text == "one"
        assert list(stream) == [" two"]
    assert node.status == "completed" and stream.text == "one two" and stream.done


@pytest.mark.slow
def test_breaking_out_of_the_loop_marks_the_node_with_the_partial_text():
    with Session() as session, Runtime(ScriptedModel(["one two three"])):
        for chunk in llm("go", stream=True):
            if chunk == "one":
                break
        gc.collect()  # the dropped stream is closed; CPython does it at once anyway
    (node,) = session.dag.find(kind="llm")
    assert (node.status, node.output) == ("error", "one")
    assert node.error == "the consumer stopped reading after 3 characters"


class Breaking:
    """A model whose stream fails after two chunks (a provider dropping the stream)."""

    name = "breaking"

    def complete(self, request):
        raise AssertionError("streams only")

    async def acomplete(self, request):
        raise AssertionError("streams only")

    def stream(self, request):
        yield "half "
        yield "a reply"
        raise ModelUnavailable("connection reset")


def test_a_stream_breaking_off_raises_and_keeps_the_partial_text():
    received = []
    with Session() as session, Runtime(Breaking()), pytest.raises(ModelUnavailable) as caught:
        for chunk in llm("go", stream=True):
            received.append(chunk)
    (node,) = session.dag.find(kind="llm")
    assert received == ["half ", "a reply"]
    assert node.status == "error" and node.output == "half a reply"
    assert "broke off after 12 characters" in node.error
    assert caught.value.node_id == node.id


class Whole:
    """A model without a stream method: its reply arrives as one chunk."""

    name = "whole"

    def complete(self, request):
        return ModelReply(text="all at once")

    async def acomplete(self, request):
        return ModelReply(text="all at once")


def test_a_model_that_cannot_stream_gives_one_chunk():
    with Session(), Runtime(Whole()):
        assert list(llm("go", stream=True)) == ["all at once"]

    async def main():
        with Session(), Runtime(Whole()):
            return [c async for c in await allm("go", stream=True)]

    assert asyncio.run(main()) == ["all at once"]


def test_allm_streams_and_stopping_early_marks_the_node():
    async def main():
        with Session() as session, Runtime(ScriptedModel(["one two three", "x y"])):
            whole = [c async for c in await allm("go", stream=True)]
            async with await allm("again", stream=True) as stream:
                async for chunk in stream:
                    assert chunk == "x"
                    break
        return whole, session

    whole, session = asyncio.run(main())
    assert whole == ["one", " two", " three"]
    done, stopped = session.dag.find(kind="llm")
    assert done.status == "completed" and done.output == "one two three"
    assert (stopped.status, stopped.output) == ("error", "x")


def test_stream_refuses_response_format():
    from pydantic import BaseModel

    class Out(BaseModel):
        x: int

    with (
        Session(),
        Runtime(ScriptedModel(["x"])),
        pytest.raises(UsageError, match="response_format"),
    ):
        llm("go", stream=True, response_format=Out)


def test_a_resumed_run_replays_a_recorded_stream_without_asking_again(tmp_path):
    from openprogram import RunStopped

    crash = {"on": True}

    @agentic_function
    def story() -> str:
        text = "".join(llm("tell me", stream=True))
        if crash["on"]:
            raise RunStopped("process died")
        return text

    store = str(tmp_path / "s.db")
    recording = ScriptedModel(["recorded words"])
    with Session(store) as first, Runtime(recording), pytest.raises(RunStopped):
        story()
    crash["on"] = False
    model = ScriptedModel([])
    with Session.open(store, first.id, resume=True), Runtime(model):
        assert story() == "recorded words"
    assert model.requests == []


def test_a_reply_that_asks_for_tools_raises_instead_of_streaming_nothing():
    script = [{"tool_calls": [{"name": "lookup", "arguments": {"q": "x"}}]}]
    with (
        Session() as session,
        Runtime(ScriptedModel(script)),
        pytest.raises(ModelError, match=r"tool calls \(lookup\).*offers no tools"),
    ):
        "".join(llm("go", stream=True))
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and node.meta["tool_calls"][0]["name"] == "lookup"


def test_allm_streaming_a_tool_call_reply_raises_too():
    script = [{"tool_calls": [{"name": "lookup", "arguments": {}}]}]

    async def main() -> None:
        with Session(), Runtime(ScriptedModel(script)):
            stream = await allm("go", stream=True)
            [chunk async for chunk in stream]

    with pytest.raises(ModelError, match="offers no tools"):
        asyncio.run(main())
