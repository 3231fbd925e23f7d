"""BudgetManager's limits under attack (issue 32.7): abandoned streams are tallied,
concurrent calls reserve their request before it is sent, resume continues the tally."""

from __future__ import annotations

import asyncio
import contextvars
import gc
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

LONG = "one two three four five six seven eight nine ten"


@agentic_function
def skim(times: int) -> int:
    """Opens a stream, reads one chunk, stops reading."""
    for _ in range(times):
        for _chunk in llm("tell me a long story", stream=True):
            break
    return times


@agentic_function
def hoard(times: int) -> list:
    """Opens streams and keeps them, reading nothing."""
    return [llm("tell me a long story", stream=True) for _ in range(times)]


@agentic_function
def drop(times: int) -> int:
    """Opens streams, reads one chunk of each and lets it go without closing it."""
    for _ in range(times):
        stream = llm("tell me a long story", stream=True)
        next(iter(stream))
        del stream
        gc.collect()
    return times


@pytest.mark.parametrize("program", [skim, hoard, drop])
@pytest.mark.slow
def test_streams_the_caller_stops_reading_count_against_max_requests(program):
    model = ScriptedModel([LONG] * 10)
    budget = BudgetManager(max_requests=2)
    with (
        Session(),
        Runtime(model, callbacks=[budget]),
        pytest.raises(RunStopped, match="max_requests=2"),
    ):
        program(10)
    assert len(model.requests) == 2


def test_an_abandoned_stream_is_tallied_with_its_tokens_and_recorded_on_its_node():
    model = ScriptedModel([LONG] * 3)
    budget = BudgetManager(max_tokens=10**6)
    with Session() as session, Runtime(model, callbacks=[budget]) as runtime:
        skim(3)
    nodes = session.dag.find(kind="llm")
    assert [n.status for n in nodes] == ["error"] * 3
    assert all(n.usage is not None and n.usage.calls == 1 for n in nodes)
    assert all(n.usage.input_tokens > 0 and n.usage.output_tokens > 0 for n in nodes)
    assert budget.calls == 3 and budget.tokens == sum(n.usage.total_tokens for n in nodes)
    assert runtime.usage.calls == 3


def test_gathered_allm_calls_reserve_their_request_before_it_is_sent():
    model = ScriptedModel(["fine"] * 20)
    budget = BudgetManager(max_requests=2)

    @agentic_function
    async def fan_out(n: int) -> list:
        return await asyncio.gather(*(allm(f"question {i}") for i in range(n)))

    with Session(), Runtime(model, callbacks=[budget]), pytest.raises(RunStopped):
        asyncio.run(fan_out(20))
    assert len(model.requests) == 2
    assert budget.calls == 2


def test_a_request_that_fails_gives_its_reservation_back():
    model = ScriptedModel([ValueError("bad request"), "fine", "fine"])
    budget = BudgetManager(max_requests=2)

    @agentic_function
    def twice() -> str:
        with pytest.raises(ValueError):
            llm("first")
        return llm("second") + llm("third")

    with Session(), Runtime(model, callbacks=[budget]):
        assert twice() == "finefine"
    assert budget.calls == 2


def test_threads_sharing_a_run_do_not_pass_max_requests_together():
    refused = threading.Event()
    stops: list[int] = []

    def slow(request):  # answers once every other thread was refused (or 1 s passed)
        refused.wait(1)
        return "fine"

    model = ScriptedModel(slow)
    budget = BudgetManager(max_requests=5)

    @agentic_function
    def crowd() -> None:
        def ask() -> None:
            try:
                llm("hi")
            except RunStopped:
                stops.append(1)
                if len(stops) == 35:
                    refused.set()

        threads = [
            threading.Thread(target=contextvars.copy_context().run, args=(ask,)) for _ in range(40)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    with Session(), Runtime(model, callbacks=[budget]):
        crowd()
    assert len(model.requests) == 5 and len(stops) == 35


CRASH = {"at": None}


@agentic_function
def chat(turns: int) -> int:
    for turn in range(turns):
        if turn == CRASH["at"]:
            raise RuntimeError("crashed")
        llm(f"turn {turn}")
    return turns


def test_resume_continues_the_runs_tally(tmp_path, monkeypatch):
    store = tmp_path / "run.db"
    monkeypatch.setitem(CRASH, "at", 3)
    with (
        Session(store) as first,
        Runtime(ScriptedModel(["fine"] * 3)),
        pytest.raises(RuntimeError, match="crashed"),
    ):
        chat(10)
    monkeypatch.setitem(CRASH, "at", None)
    model = ScriptedModel(["fine"] * 10)
    budget = BudgetManager(max_requests=5)
    with (
        Session.open(store, first.id, resume=True),
        Runtime(model, callbacks=[budget]),
        pytest.raises(RunStopped, match="max_requests=5; made 5 model call"),
    ):
        chat(10)
    assert len(model.requests) == 2  # 3 recorded, 2 new: 5 in the run
    assert budget.calls == 5


def test_a_request_cancelled_on_its_way_counts_and_gives_its_reservation_back():
    started = asyncio.Event()

    async def never(request):
        started.set()
        await asyncio.Event().wait()

    class Hanging(ScriptedModel):
        async def acomplete(self, request):
            self.requests.append(request)
            await never(request)

    model = Hanging([])
    budget = BudgetManager(max_requests=5)

    @agentic_function
    async def cancelled() -> int:
        task = asyncio.ensure_future(allm("slow question"))
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return budget.calls

    with Session(), Runtime(model, callbacks=[budget]):
        assert asyncio.run(cancelled()) == 1
    assert budget._held == {}


@agentic_function
async def askim(times: int) -> int:
    """Reads one chunk of each stream and leaves it (no aclose)."""
    for _ in range(times):
        async for _chunk in allm("tell me a long story", stream=True):
            break
        gc.collect()
    return times


@agentic_function
async def ahoard(times: int) -> list:
    """Opens streams and keeps them, reading nothing."""
    return [await allm("tell me a long story", stream=True) for _ in range(times)]


@pytest.mark.parametrize("program", [askim, ahoard])
@pytest.mark.slow
def test_async_streams_the_caller_stops_reading_count_against_max_requests(program, recwarn):
    model = ScriptedModel([LONG] * 10)
    budget = BudgetManager(max_requests=2)
    with (
        Session(),
        Runtime(model, callbacks=[budget]),
        pytest.raises(RunStopped, match="max_requests=2"),
    ):
        asyncio.run(program(10))
    gc.collect()
    assert len(model.requests) == 2
    assert not [w for w in recwarn if "was never read" in str(w.message)]


def test_gathered_allm_calls_count_their_prompts_against_max_tokens():
    model = ScriptedModel(["fine"] * 20)
    budget = BudgetManager(max_tokens=100)

    @agentic_function
    async def fan_out(n: int) -> list:
        questions = (allm(f"question {i}: " + "word " * 20) for i in range(n))
        return await asyncio.gather(*questions, return_exceptions=True)

    with Session() as session, Runtime(model, callbacks=[budget]):
        asyncio.run(fan_out(20))
    one_call = max(n.usage.total_tokens for n in session.dag.find(kind="llm") if n.usage)
    assert len(model.requests) < 5
    assert budget.tokens < 100 + one_call  # at most one call over, as when they run in turn
