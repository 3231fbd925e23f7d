"""SharedBudget counts a request the same way however it is made: llm, allm (gathered
too), streams read whole or abandoned, sync and async, tool loops; in one process and in
several at once; and a call answered in the next period settles in its request's."""

from __future__ import annotations

import asyncio
import calendar
import json
from pathlib import Path
from typing import Any

import pytest

from openprogram import (
    BudgetManager,
    ModelRequest,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    SharedBudget,
    agentic_function,
    allm,
    llm,
)
from openprogram.callbacks import BudgetTally, budget_shared
from openprogram.testing import OpenAIServer
from tests.support.children import finish, start_together

MIDNIGHT = float(calendar.timegm((2026, 12, 4, 0, 0, 0)))
"""The end of 2026-12-03 (UTC): the calls below are asked before it, answered after."""
WAYS = ("llm", "allm", "gather", "stream", "astream", "astream-abandoned", "tools", "tools-stream",
        "atools-stream")  # fmt: skip


def look(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@agentic_function
def ask(way: str) -> None:
    """One request in `way` (two gathered for "gather"; a tool loop of two turns)."""
    if way == "llm":
        llm("go")
    elif way == "stream":
        "".join(llm("go", stream=True))
    elif way == "tools":
        llm("look it up", tools=[look])
    elif way == "tools-stream":
        "".join(llm("look it up", tools=[look], stream=True))
    else:
        asyncio.run(_ask(way))


async def _ask(way: str) -> None:
    if way == "allm":
        await allm("go")
    elif way == "gather":
        await asyncio.gather(allm("go"), allm("go"))
    elif way == "atools-stream":
        async for _chunk in allm("look it up", tools=[look], stream=True):
            pass
    else:
        stream = await allm("go", stream=True)
        async for _chunk in stream:
            if way == "astream-abandoned":
                break
        await stream.aclose()


@pytest.mark.parametrize("way", WAYS)
def test_a_call_answered_after_midnight_settles_in_the_day_it_was_asked(
    way: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = [MIDNIGHT - 1.0]
    monkeypatch.setattr(budget_shared, "_clock", lambda: now[0])

    asked_at_once = 2 if way == "gather" else 1
    model = ScriptedModel(lambda request: answer(request))

    def answer(request: ModelRequest) -> Any:  # the model answers once the day is over
        if len(model.requests) >= asked_at_once:
            now[0] = MIDNIGHT + 1.0
        if "tools" in way and request.messages[-1]["role"] != "tool":
            return {"tool_calls": [{"name": "look", "arguments": {"query": "a"}}]}
        return "one two three four five six seven eight"

    day = SharedBudget("daily", max_requests=100, period="day", store=str(tmp_path / "b.db"))
    budget = BudgetManager(shared=day)
    with Session() as session, Runtime(model, callbacks=[budget]):
        ask(way)
        calls = session.dag.find(kind="llm")
    now[0] = MIDNIGHT - 1.0
    asked = day.tally()
    now[0] = MIDNIGHT + 1.0
    answered = day.tally()
    assert budget.tokens > 0 and all(call.status in ("completed", "error") for call in calls)
    if "tools" in way:  # its second turn was asked after midnight
        first, second = (call.usage for call in calls)
        assert asked == BudgetTally(tokens=first.input_tokens + first.output_tokens, requests=1,
                                    tool_calls=1)  # fmt: skip
        assert answered == BudgetTally(
            tokens=second.input_tokens + second.output_tokens, requests=1
        )
    else:
        assert asked == BudgetTally(
            tokens=budget.tokens, requests=budget.calls, unpriced_calls=budget.unpriced_calls
        )
        assert answered == BudgetTally()
    assert budget.calls == len(calls) == (2 if way == "gather" or "tools" in way else 1)


CHILD_WAYS = ("llm", "gather", "stream", "astream-abandoned", "tools")


def _reply(body: dict[str, Any]) -> Any:
    if body.get("tools"):  # the tool loop asks for a tool round after round
        return {"tool_calls": [{"name": "look", "arguments": {"query": "more"}}]}
    return "one two three four five six seven eight nine ten"


@pytest.mark.slow
def test_processes_asking_in_every_way_are_counted_alike_and_never_pass_the_limit(
    durable_store: str,
) -> None:
    with Session(durable_store):  # the store exists before the children race to open it
        pass
    limit = 12
    with OpenAIServer(_reply) as server:
        module = ["-m", "tests.openprogram.callbacks.shared_child", durable_store, "shared"]
        children = start_together([[*module, str(limit), way, server.url] for way in CHILD_WAYS])
        runs = {
            way: json.loads(finish(child)) for way, child in zip(CHILD_WAYS, children, strict=True)
        }
        sent = len(server.requests)
    tally = SharedBudget("shared", max_requests=limit, store=durable_store).tally()
    assert sent == tally.requests == sum(run["calls"] for run in runs.values()) == limit
    assert tally.tokens == sum(run["tokens"] for run in runs.values())
    assert tally.cost_usd == pytest.approx(sum(run["cost_usd"] for run in runs.values()))
    assert tally.cost_usd > 0 and tally.unpriced_calls == 0
    assert tally.tool_calls == runs["tools"]["tool_calls"]
    for way, run in runs.items():
        assert f"shared budget 'shared' max_requests={limit}" in run["reason"], (way, run)


def test_gathered_calls_never_pass_a_shared_max_requests_together(tmp_path: Path) -> None:
    @agentic_function
    async def fan_out() -> list[Any]:
        return await asyncio.gather(*(allm(f"q{i}") for i in range(20)), return_exceptions=True)

    shared = SharedBudget("fan", max_requests=3, store=str(tmp_path / "b.db"))
    model = ScriptedModel(["ok"] * 20)
    with Session(), Runtime(model, callbacks=[BudgetManager(shared=shared)]):
        answers = asyncio.run(fan_out())
    assert len(model.requests) == shared.tally().requests == 3
    assert answers.count("ok") == 3
    assert all(isinstance(a, RunStopped) for a in answers if a != "ok")
