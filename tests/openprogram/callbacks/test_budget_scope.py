"""BudgetManager.scope(): a sub-agent's own budget, which its parent's budget also counts,
held under asyncio.gather (a peer's users saw a fan-out of 16 pass a limit of 9)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from openprogram import (
    BudgetManager,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    allm,
    llm,
)


class Counting:
    """A reply for every request, counted as it arrives."""

    def __init__(self) -> None:
        self.requests = 0
        self.lock = threading.Lock()

    def __call__(self, request) -> str:
        with self.lock:
            self.requests += 1
        return "ok"


@agentic_function
async def worker(i: int) -> str:
    first = await allm(f"step one of {i}")
    second = await allm(f"step two of {i}")
    return first + second


@agentic_function
async def boss(n: int, each: int) -> list[str]:
    async def one(i: int) -> str:
        with BudgetManager(max_requests=each).scope():
            try:
                return await worker(i)
            except RunStopped:
                return "stopped"

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def test_a_fan_out_of_sixteen_never_passes_the_parents_limit_of_nine():
    replies = Counting()
    parent = BudgetManager(max_requests=9)
    with Session() as session, Runtime(ScriptedModel(replies), callbacks=[parent]):
        results = asyncio.run(boss(16, 5))
    assert replies.requests == 9
    assert results.count("okok") <= 4 and "stopped" in results
    sent = [n for n in session.dag.find(kind="llm") if n.status == "completed"]
    assert len(sent) == 9


def test_each_sub_agent_is_held_to_its_own_budget_and_the_parent_counts_them_all():
    replies = Counting()
    parent = BudgetManager(max_requests=100)
    with Session() as session, Runtime(ScriptedModel(replies), callbacks=[parent]):
        results = asyncio.run(boss(6, 1))
    assert results == ["stopped"] * 6  # each sub-agent's second step is over its budget
    assert replies.requests == 6
    assert parent.calls == 6
    workers = session.dag.find(name="worker", kind="code")
    assert [w.status for w in workers] == ["stopped"] * 6
    assert all("max_requests" in str(w.meta.get("stop_reason")) for w in workers)


def test_a_scope_ends_with_its_block_and_never_reaches_other_threads():
    replies = Counting()

    @agentic_function
    def step() -> str:
        return llm("go")

    @agentic_function
    def run() -> list[str]:
        out = []
        with BudgetManager(max_requests=1).scope():
            out.append(step())
            with pytest.raises(RunStopped):
                step()
        out.append(step())  # the scope is over: only the runtime's own callbacks hold
        other: list[str] = []
        with BudgetManager(max_requests=0).scope():
            thread = threading.Thread(target=lambda: other.append(step()))
            thread.start()
            thread.join()
        return out + other

    with Session(), Runtime(ScriptedModel(replies)):
        assert run() == ["ok", "ok", "ok"]
