"""BudgetManager's limits over real HTTP: litellm to the shipped local server, whose
model litellm has no price for."""

from __future__ import annotations

import asyncio

import pytest

from openprogram import (
    BudgetExceeded,
    BudgetManager,
    RunStopped,
    Runtime,
    Session,
    agentic_function,
    allm,
    count_tokens,
    llm,
)
from openprogram.testing import OpenAIServer


@agentic_function
def chat(turns: int) -> int:
    for turn in range(turns):
        llm(f"turn {turn}: say something short")
    return turns


def runtime_for(server: OpenAIServer, budget: BudgetManager) -> Runtime:
    return Runtime("openai/local", api_base=server.url, api_key="test", callbacks=[budget])


def test_a_token_limit_stops_an_unpriced_model_with_the_count_in_the_reason():
    with OpenAIServer(["one two three four five"] * 10) as server:
        budget = BudgetManager(max_tokens=40)
        with Session() as session, runtime_for(server, budget), pytest.raises(RunStopped) as stop:
            chat(10)
    used = sum(n.usage.input_tokens + n.usage.output_tokens for n in session.dag.find(kind="llm"))
    assert used >= 40 and budget.tokens == used
    assert f"max_tokens=40; used {used} tokens over {budget.calls} model call(s)" in str(stop.value)
    assert len(server.requests) == budget.calls < 10


def test_a_cost_limit_on_a_model_without_a_price_warns_once_and_requests_still_stop():
    with OpenAIServer(["fine"] * 10) as server:
        budget = BudgetManager(0.5, max_requests=3, raise_error=True)
        with (
            Session(),
            runtime_for(server, budget),
            pytest.warns(UserWarning, match="cannot be enforced for 'openai/local'") as caught,
            pytest.raises(BudgetExceeded, match="max_requests=3; made 3 model call"),
        ):
            chat(10)
    assert len([w for w in caught if "cannot be enforced" in str(w.message)]) == 1
    assert len(server.requests) == 3


@agentic_function
def skim(times: int) -> int:
    for _ in range(times):
        with llm("tell me a long story", stream=True) as stream:
            next(iter(stream))  # one chunk, then the caller stops reading
    return times


def test_streams_the_caller_stops_reading_count_against_max_requests():
    with OpenAIServer(["one two three four five six seven eight"] * 10) as server:
        budget = BudgetManager(max_requests=2)
        with (
            Session() as session,
            runtime_for(server, budget),
            pytest.raises(RunStopped, match="max_requests=2; made 2 model call"),
        ):
            skim(10)
    assert len(server.requests) == 2
    nodes = session.dag.find(kind="llm")
    assert all(n.usage is not None and n.usage.input_tokens > 0 for n in nodes)
    assert budget.tokens == sum(n.usage.total_tokens for n in nodes)


def test_gathered_allm_calls_never_pass_max_requests():
    @agentic_function
    async def fan_out(n: int) -> list:
        return await asyncio.gather(*(allm(f"question {i}") for i in range(n)))

    with OpenAIServer(["fine"] * 20) as server:
        budget = BudgetManager(max_requests=2)
        with Session(), runtime_for(server, budget), pytest.raises(RunStopped):
            asyncio.run(fan_out(20))
    assert len(server.requests) == 2
    assert budget.calls == 2


def lookup(key: int) -> str:
    """Look a key up."""
    return f"value of {key}: " + "data " * 10


def test_a_tool_loop_holds_its_token_budget_over_http():
    loop_turns = []

    def respond(body):
        if not body.get("tools"):  # the compactor's request
            return "SUMMARY: keys looked up so far"
        loop_turns.append(body)
        if len(loop_turns) <= 40:
            return {"tool_calls": [{"name": "lookup", "arguments": {"key": len(loop_turns)}}]}
        return "done"

    @agentic_function(render_range={"tokens": 600})
    def look_up_all() -> str:
        return llm("look up keys until told to stop", tools=[lookup], max_tool_turns=100)

    with OpenAIServer(respond) as server:
        budget = BudgetManager(max_requests=100)
        with Session() as session, runtime_for(server, budget):
            assert look_up_all() == "done"
    assert len(loop_turns) == 41
    sent = [count_tokens(body["messages"], model="openai/local") for body in loop_turns]
    assert max(sent) <= 600 + 30, sent
    assert session.dag.find(name="summarize_history", kind="code")
