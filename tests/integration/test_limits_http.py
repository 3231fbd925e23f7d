"""BudgetManager's limits over real HTTP: litellm to the shipped local server, whose
model litellm has no price for."""

from __future__ import annotations

import pytest

from openprogram import (
    BudgetExceeded,
    BudgetManager,
    RunStopped,
    Runtime,
    Session,
    agentic_function,
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
