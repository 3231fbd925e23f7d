"""RateLimit: gathered calls queue behind a provider's per-minute limits instead of failing,
in virtual time (the limit's clock and the runtime's sleep move together, so nothing
waits a real minute)."""

from __future__ import annotations

import asyncio

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, allm, llm
from openprogram.callbacks import RateLimit, rate
from openprogram.errors import UsageError
from openprogram.testing import OpenAIServer


class VirtualTime:
    """A clock that a sleeper moves to the moment it was told to wait for."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now = max(self.now, self.now + seconds)

    async def asleep(self, seconds: float) -> None:
        target = self.now + seconds
        await asyncio.sleep(0)
        self.now = max(self.now, target)


@pytest.fixture
def clock(monkeypatch):
    rate._forget_all()
    virtual = VirtualTime()
    monkeypatch.setattr(rate, "_clock", virtual)
    yield virtual
    rate._forget_all()


@agentic_function
async def ask(i: int) -> str:
    return await allm(f"question {i}")


@agentic_function
async def fan_out(n: int) -> list[str]:
    return list(await asyncio.gather(*(ask(i) for i in range(n))))


def _runtime(model, clock, limit):
    runtime = Runtime(model, callbacks=[limit])
    runtime._sleep, runtime._asleep = clock.sleep, clock.asleep
    return runtime


def test_fifty_gathered_calls_queue_behind_ten_requests_a_minute(clock):
    sent: list[float] = []

    def answer(request):
        sent.append(clock.now)
        return "ok"

    runtime = _runtime(ScriptedModel(answer), clock, RateLimit("p", requests_per_minute=10))
    with Session() as session, runtime:
        assert asyncio.run(fan_out(50)) == ["ok"] * 50
    assert len(sent) == 50
    assert all(later - earlier >= 60 for earlier, later in zip(sent, sent[10:], strict=False))
    assert sent[-1] - sent[0] >= 4 * 60  # five minutes' worth of requests, none refused
    exchanges = session.dag.find(kind="llm")
    assert all(node.status == "completed" for node in exchanges)
    assert sum(bool(node.meta.get("rate_waits")) for node in exchanges) == 40


def test_a_name_is_one_window_for_every_runtime_and_thread_of_the_process(clock):
    sent: list[float] = []

    @agentic_function
    def one(i: int) -> str:
        return llm(f"q{i}")

    def answer(request):
        sent.append(clock.now)
        return "ok"

    first = _runtime(ScriptedModel(answer), clock, RateLimit("shared", requests_per_minute=3))
    second = _runtime(ScriptedModel(answer), clock, RateLimit("shared", requests_per_minute=3))
    with Session():
        for i in range(6):
            with first if i % 2 else second:
                one(i)
    assert all(later - earlier >= 60 for earlier, later in zip(sent, sent[3:], strict=False))
    with pytest.raises(UsageError, match="exists in this process with requests_per_minute=3"):
        RateLimit("shared", requests_per_minute=4)


@agentic_function
async def long_ask(i: int) -> str:
    return await allm(f"question {i}: " + "word " * 1600)  # about 400 prompt tokens


@agentic_function
async def long_fan_out(n: int) -> list[str]:
    return list(await asyncio.gather(*(long_ask(i) for i in range(n))))


def test_tokens_per_minute_hold_gathered_prompts_and_count_the_replies(clock):
    sent: list[float] = []

    def answer(request):
        sent.append(clock.now)
        return "ok"

    limit = RateLimit("t", tokens_per_minute=1000)
    runtime = _runtime(ScriptedModel(answer), clock, limit)
    with Session(), runtime:
        asyncio.run(long_fan_out(6))
    assert len(sent) == 6
    # two prompts of about 400 tokens fit in a minute, a third does not
    assert all(later - earlier >= 60 for earlier, later in zip(sent, sent[2:], strict=False))


def test_a_long_reply_counts_against_the_next_minute(clock):
    sent: list[float] = []

    @agentic_function
    def chat(i: int) -> str:
        return llm(f"q{i}")

    def answer(request):
        sent.append(clock.now)
        return "word " * 3000  # about 750 output tokens

    runtime = _runtime(ScriptedModel(answer), clock, RateLimit("out", tokens_per_minute=1000))
    with Session(), runtime:
        for i in range(3):
            chat(i)
    # each short prompt fits, but the reply before it filled the minute
    assert sent[1] - sent[0] >= 60 and sent[2] - sent[1] >= 60


def test_over_http_a_gather_queues_instead_of_failing(clock):
    with OpenAIServer(["fine"] * 8) as server:
        runtime = Runtime(
            "openai/local",
            api_base=server.url,
            api_key="test",
            callbacks=[RateLimit("http", requests_per_minute=3)],
        )
        runtime._sleep, runtime._asleep = clock.sleep, clock.asleep
        with Session() as session, runtime:
            assert asyncio.run(fan_out(8)) == ["fine"] * 8
    waited = [node.meta.get("rate_waits") for node in session.dag.find(kind="llm")]
    assert sum(bool(w) for w in waited) == 5


@pytest.mark.parametrize(
    "kwargs",
    [{}, {"requests_per_minute": 0}, {"tokens_per_minute": 1.5}, {"requests_per_minute": True}],
)
def test_a_limit_that_cannot_hold_is_refused_with_what_to_write(kwargs):
    with pytest.raises(UsageError, match=r"requests_per_minute|tokens_per_minute"):
        RateLimit("bad", **kwargs)


def test_a_huge_or_odd_name_is_refused_with_a_bounded_message():
    with pytest.raises(UsageError) as refused:
        RateLimit("x" * 1_000_000, requests_per_minute=1)
    assert len(str(refused.value)) < 1000
    with pytest.raises(UsageError):
        RateLimit(b"bytes", requests_per_minute=1)  # type: ignore[arg-type]
