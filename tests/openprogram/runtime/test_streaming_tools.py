"""Streaming through tools: llm(..., tools=[...], stream=True) and allm's two forms."""

from __future__ import annotations

import asyncio

import pytest

from openprogram import RunStopped, Runtime, ScriptedModel, Session, agentic_function, allm, llm

ran: list[tuple[int, int]] = []


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append((a, b))
    return a + b


def script() -> list:
    call = {"name": "add", "arguments": {"a": 2, "b": 3}}
    return [{"tool_calls": [call], "content": "Let me add."}, {"tool_calls": [call]}, "It is 5."]


def shape(session: Session) -> list[tuple]:
    """The DAG without ids and times: kind, name, parent's name, status, output, meta keys."""
    dag = session.dag
    return [
        (
            n.kind,
            n.name,
            dag.get(n.parent).name if n.parent else None,
            n.status,
            n.output,
            sorted(k for k in n.meta if k not in ("tool_loop", "asked_by")),
        )
        for n in dag.nodes
    ]


@agentic_function
def solve(stream: bool) -> str:
    if stream:
        return "".join(llm("What is 2 + 3?", tools=[add], stream=True))
    return llm("What is 2 + 3?", tools=[add])


def test_the_tool_turns_run_while_iterating_and_the_text_turns_stream():
    ran.clear()
    with Session(), Runtime(ScriptedModel(script())):
        stream = llm("What is 2 + 3?", tools=[add], stream=True)
        first = next(stream)
        assert (first, ran) == ("Let", [])  # the first turn streams before any tool runs
        rest = list(stream)
    assert first + "".join(rest) == "Let me add.It is 5."
    assert stream.text == "Let me add.It is 5." and stream.done
    assert ran == [(2, 3), (2, 3)]
    assert stream.node.output == "It is 5."


def test_a_streamed_tool_loop_records_the_dag_a_plain_one_does():
    with Session() as streamed, Runtime(ScriptedModel(script())):
        streamed_answer = solve(True)
    with Session() as plain, Runtime(ScriptedModel(script())):
        plain_answer = solve(False)
    assert (streamed_answer, plain_answer) == ("Let me add.It is 5.", "It is 5.")
    assert shape(streamed)[1:] == shape(plain)[1:]
    assert shape(streamed)[0][:4] == shape(plain)[0][:4]
    tools = streamed.dag.find(name="add", kind="code")
    assert [t.meta["tool_call_id"] for t in tools] == ["call_1", "call_2"]


def test_allm_streams_through_tools_with_and_without_await():
    async def both() -> tuple[list[str], list[str]]:
        direct = [c async for c in allm("2 + 3?", tools=[add], stream=True)]
        awaited = [c async for c in await allm("2 + 3?", tools=[add], stream=True)]
        return direct, awaited

    with Session() as session, Runtime(ScriptedModel(script() + script())):
        direct, awaited = asyncio.run(both())
    assert "".join(direct) == "".join(awaited) == "Let me add.It is 5."
    assert len(session.dag.find(name="add", kind="code")) == 4


def test_allm_without_tools_streams_with_and_without_await():
    async def both() -> tuple[str, str]:
        direct = "".join([c async for c in allm("hi", stream=True)])
        stream = await allm("hi", stream=True)
        return direct, "".join([c async for c in stream])

    with Session(), Runtime(ScriptedModel(["one two", "three four"])):
        assert asyncio.run(both()) == ("one two", "three four")


def test_stopping_early_marks_the_turn_and_asks_no_further_turn():
    model = ScriptedModel(script())
    with Session() as session, Runtime(model), llm("2 + 3?", tools=[add], stream=True) as stream:
        assert next(stream) == "Let"
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and "stopped reading" in (node.error or "")
    assert len(model.requests) == 1


def test_a_resumed_streamed_tool_loop_runs_nothing_again(tmp_path):
    crash = {"on": True}

    @agentic_function
    def job() -> str:
        text = "".join(llm("2 + 3?", tools=[add], stream=True))
        if crash["on"]:
            raise RunStopped("process died")
        return text

    store = str(tmp_path / "s.db")
    with Session(store) as first, Runtime(ScriptedModel(script())), pytest.raises(RunStopped):
        job()
    crash["on"] = False
    ran.clear()
    model = ScriptedModel([])
    with Session.open(store, first.id, resume=True), Runtime(model):
        assert job() == "Let me add.It is 5."
    assert (model.requests, ran) == ([], [])


@pytest.mark.slow
def test_an_allm_stream_never_read_warns_like_an_unawaited_coroutine():
    import gc

    with (
        Session() as session,
        Runtime(ScriptedModel(["unused"])),
        pytest.warns(RuntimeWarning, match="was never read"),
    ):
        allm("hi", stream=True)
        gc.collect()
    assert len(session.dag) == 0
