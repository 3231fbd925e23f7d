"""ReplayModel: re-running a program offline against a recorded session."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from openprogram import (
    Model,
    ModelError,
    ReplayMismatch,
    ReplayModel,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    allm,
    llm,
    render_context,
)
from openprogram.store import MemoryStore


class Verdict(BaseModel):
    ok: bool


@agentic_function
def check(item: str) -> bool:
    return llm(f"is {item} fine?", response_format=Verdict).ok


@agentic_function
def review(items: list[str]) -> dict[str, bool]:
    summary = llm("start the review")
    return {"summary": summary, **{item: check(item) for item in items}}


def _record(store: MemoryStore, replies: list[str], items: list[str]) -> Session:
    with Session(store, id="recorded"), Runtime(ScriptedModel(replies)):
        review(items)
    return Session.open(store, "recorded")


def test_a_program_reruns_offline_with_the_recorded_replies():
    recording = _record(MemoryStore(), ["go", '{"ok": true}', '{"ok": false}'], ["a", "b"])
    replay = ReplayModel(recording)
    assert isinstance(replay, Model) and replay.name == "replay:recorded"
    with Session() as session, Runtime(replay) as runtime:
        assert review(["a", "b"]) == {"summary": "go", "a": True, "b": False}
    assert runtime.usage.cost_usd == 0 and runtime.usage.calls == 3
    assert [n.meta["model"] for n in session.dag.find(kind="llm")] == ["replay:recorded"] * 3


def test_a_structured_reply_that_needed_a_repair_replays_both_exchanges():
    recording = _record(MemoryStore(), ["go", "no json here", '{"ok": true}'], ["a"])
    with Session(), Runtime(ReplayModel(recording)):
        assert review(["a"]) == {"summary": "go", "a": True}


def test_a_changed_request_is_a_mismatch_naming_the_node_and_its_place():
    recording = _record(MemoryStore(), ["go", '{"ok": true}', '{"ok": true}'], ["a", "b"])
    with (
        Session() as session,
        Runtime(ReplayModel(recording)),
        pytest.raises(ReplayMismatch, match=r"review #1 / llm review #1") as caught,
    ):
        review(["a", "c"])  # the review's own call line differs: so does what it sends
    assert caught.value.node_id == session.dag.find(kind="llm")[-1].id
    with (
        Session(),
        Runtime(ReplayModel(recording, strict=False)),
        pytest.raises(ReplayMismatch, match=r"llm\(\) content at review #1 / check #2"),
    ):
        review(["a", "c"])


def test_strict_false_matches_on_the_content_even_when_the_history_differs():
    recording = _record(MemoryStore(), ["go", '{"ok": true}'], ["a"])

    with Session() as session, Runtime(ReplayModel(recording, strict=False)):
        session.submit("an extra input the recording did not have")
        assert review(["a"]) == {"summary": "go", "a": True}
    with Session() as session, Runtime(ReplayModel(recording)):
        session.submit("an extra input the recording did not have")
        with pytest.raises(ReplayMismatch, match="rendered messages"):
            review(["a"])


def test_a_call_the_recording_never_made_is_a_mismatch():
    recording = _record(MemoryStore(), ["go", '{"ok": true}'], ["a"])
    with (
        Session(),
        Runtime(ReplayModel(recording, strict=False)),
        pytest.raises(ReplayMismatch, match=r"no llm exchange at review #1 / check #2"),
    ):
        review(["a", "b"])


def test_a_recorded_provider_failure_fails_again():
    store = MemoryStore()

    @agentic_function
    def ask() -> str:
        return llm("hello")

    with (
        Session(store, id="failed"),
        Runtime(ScriptedModel([ValueError("down")])),
        pytest.raises(ValueError),
    ):
        ask()
    with (
        Session(),
        Runtime(ReplayModel(Session.open(store, "failed"))),
        pytest.raises(ModelError, match="failed: ValueError: down"),
    ):
        ask()


def test_async_exchanges_replay_too():
    store = MemoryStore()

    @agentic_function
    async def ask_twice() -> list[str]:
        return [await allm("one"), await allm("two")]

    with Session(store, id="async"), Runtime(ScriptedModel(["1", "2"])):
        recorded = asyncio.run(ask_twice())
    with Session(), Runtime(ReplayModel(Session.open(store, "async"))):
        assert asyncio.run(ask_twice()) == recorded == ["1", "2"]


# -- concurrent runs ---------------------------------------------------------------------


@agentic_function
async def worker(name: str) -> str:
    first = await allm(f"{name}: first")
    second = await allm(f"{name}: second, after {first}")
    return second


@agentic_function
async def boss(names: list[str]) -> list[str]:
    return list(await asyncio.gather(*(worker(name) for name in names)))


class InOrder:
    """A model whose replies arrive in a chosen order (a provider that is slow for some
    requests), so a recording holds a completion order the replay must not depend on."""

    name = "in-order"

    def __init__(self, order: list[str]) -> None:
        self.order = order
        self.answered: list[str] = []
        self.changed: asyncio.Condition | None = None

    def complete(self, request):
        raise AssertionError("only allm is used here")

    async def acomplete(self, request):
        from openprogram.models.model import ModelReply

        self.changed = self.changed or asyncio.Condition()
        text = request.text
        async with self.changed:
            await self.changed.wait_for(
                lambda: all(t in self.answered for t in self.order[: self.order.index(text)])
            )
            self.answered.append(text)
            self.changed.notify_all()
        return ModelReply(text=text.split(":")[0] + "-reply")


def test_a_gathered_run_sees_siblings_running_as_in_production():
    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        asyncio.run(boss(["a", "b"]))
    firsts = [n for n in session.dag.find(kind="llm") if "first" in n.input]
    assert len(firsts) == 2
    assert all(n.end_seq >= max(f.seq for f in firsts) for n in firsts)  # both asked first


@pytest.mark.parametrize(
    "order",
    [
        ["a: first", "b: first", "a: second, after a-reply", "b: second, after b-reply"],
        ["b: first", "b: second, after b-reply", "a: first", "a: second, after a-reply"],
        ["b: first", "a: first", "b: second, after b-reply", "a: second, after a-reply"],
    ],
)
def test_a_gathered_run_replays_strictly_whatever_order_the_replies_came_in(order):
    store = MemoryStore()
    with Session(store, id="gathered"), Runtime(InOrder(order)):
        recorded = asyncio.run(boss(["a", "b"]))
    recording = Session.open(store, "gathered")
    for _ in range(10):
        with Session() as session, Runtime(ReplayModel(recording)):
            assert asyncio.run(boss(["a", "b"])) == recorded == ["a-reply", "b-reply"]
        assert len(session.dag.find(kind="llm")) == 4


@pytest.mark.slow
def test_a_gathered_run_recorded_over_http_replays_strictly():
    from openprogram.testing import OpenAIServer

    store = MemoryStore()
    with OpenAIServer(default_reply="fine") as server:
        runtime = Runtime("openai/test-model", api_base=server.url, api_key="sk-test-0123456789")
        with Session(store, id="http"), runtime:
            recorded = asyncio.run(boss(["a", "b", "c"]))
    for _ in range(10):
        with Session(), Runtime(ReplayModel(Session.open(store, "http"))):
            assert asyncio.run(boss(["a", "b", "c"])) == recorded


def test_a_changed_call_in_a_gathered_run_is_still_a_mismatch():
    store = MemoryStore()
    order = ["a: first", "b: first", "a: second, after a-reply", "b: second, after b-reply"]
    with Session(store, id="gathered"), Runtime(InOrder(order)):
        asyncio.run(boss(["a", "b"]))
    with (
        Session(),
        Runtime(ReplayModel(Session.open(store, "gathered"))),
        pytest.raises(ReplayMismatch, match=r"first difference: recorded .*\"b\".*now .*\"x\""),
    ):
        asyncio.run(boss(["a", "x"]))


@agentic_function
def ask(i: int) -> str:
    first = llm(f"question {i}")
    return llm(f"follow-up {i} to {first}")


def _threads(count: int) -> None:
    threads = [threading.Thread(target=ask, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@pytest.mark.slow
def test_a_run_with_plain_worker_threads_replays_strictly():
    store = MemoryStore()
    with Session(store, id="threads"), Runtime(ScriptedModel(lambda r: f"re {r.text}")):
        _threads(4)
    recording = Session.open(store, "threads")
    assert len(recording.dag.find(kind="llm")) == 8
    for _ in range(10):
        with Session() as session, Runtime(ReplayModel(recording)):
            _threads(4)
        replies = sorted(n.output for n in session.dag.find(kind="llm"))
        assert replies == sorted(n.output for n in recording.dag.find(kind="llm"))


@pytest.mark.slow
def test_a_run_with_threads_in_copied_contexts_replays_strictly():
    from openprogram import start_thread

    @agentic_function
    def fan_out(count: int) -> list[str]:
        results: dict[int, str] = {}
        threads = [start_thread(lambda i=i: results.__setitem__(i, ask(i))) for i in range(count)]
        for thread in threads:
            thread.join()
        return [results[i] for i in range(count)]

    store = MemoryStore()
    with Session(store, id="fan"), Runtime(ScriptedModel(lambda r: f"re {r.text}")):
        recorded = fan_out(4)
    for _ in range(10):
        with Session(), Runtime(ReplayModel(Session.open(store, "fan"))):
            assert fan_out(4) == recorded


def test_patience_must_not_be_negative():
    with pytest.raises(UsageError, match="patience=-1"):
        ReplayModel(Session(), patience=-1)


def test_a_thread_that_runs_ahead_waits_for_the_work_the_recording_showed_it():
    store = MemoryStore()
    with Session(store, id="serial"), Runtime(ScriptedModel(lambda r: f"re {r.text}")):
        for i in (0, 1):  # recorded one after the other: ask(1) saw ask(0) finished
            thread = threading.Thread(target=ask, args=(i,))
            thread.start()
            thread.join()
    recording = Session.open(store, "serial")
    first_of_1 = recording.dag.find(name="ask", kind="llm")[2]
    assert recording.dag.find(name="ask", kind="code")[0].id in first_of_1.reads

    asked = threading.Event()
    with Session() as session, Runtime(ReplayModel(recording)):
        session.dag.listeners.append(
            lambda event, node: asked.set() if node.kind == "llm" else None
        )
        late = threading.Thread(target=ask, args=(1,))
        late.start()  # now ask(1) asks first, before ask(0) exists
        asked.wait(timeout=30)
        early = threading.Thread(target=ask, args=(0,))
        early.start()
        for thread in (late, early):
            thread.join()
    replies = [n.output for n in session.dag.find(name="ask", kind="code")]
    assert sorted(replies) == sorted(n.output for n in recording.dag.find(name="ask", kind="code"))
    assert all(n.status == "completed" for n in session.dag.nodes)


def test_work_the_recording_shows_that_never_comes_is_a_mismatch_after_patience():
    store = MemoryStore()
    with Session(store, id="serial"), Runtime(ScriptedModel(lambda r: f"re {r.text}")):
        for i in (0, 1):
            thread = threading.Thread(target=ask, args=(i,))
            thread.start()
            thread.join()
    outcome: dict = {}

    def only_the_second():
        try:
            ask(1)
        except ReplayMismatch as exc:
            outcome["error"] = exc

    with Session(), Runtime(ReplayModel(Session.open(store, "serial"), patience=0.2)):
        thread = threading.Thread(target=only_the_second)
        thread.start()
        thread.join()
    message = str(outcome["error"])
    assert "ask #1" in message and "has not started in this run" in message
    assert "patience=0.2s" in message


def test_a_recording_with_a_stopped_run_replays_with_the_stop_in_later_contexts():
    from openprogram import RunStopped

    class StopFirst:
        """Refuses the first model call (stopping that run), allows the rest."""

        def __init__(self) -> None:
            self.stop_reason: str | None = None

        def on_run_continue(self, runtime, *, kind, frame):
            if self.stop_reason is None:
                self.stop_reason = "not yet"
                return False
            return True

    @agentic_function
    def ask(question: str) -> str:
        return llm(question)

    def program() -> str:
        with pytest.raises(RunStopped):
            ask("first")
        return ask("second")  # its context shows the stopped first run

    store = MemoryStore()
    with Session(store, id="recorded"), Runtime(ScriptedModel(["two"]), callbacks=[StopFirst()]):
        assert program() == "two"
    recording = Session.open(store, "recorded")
    exchange = recording.dag.find(kind="llm")[0]
    seen = render_context(recording.dag, exchange.parent, before=exchange.seq).text()
    assert "ask #1" in seen and "RunStopped: not yet" in seen
    with Session() as session, Runtime(ReplayModel(recording), callbacks=[StopFirst()]):
        assert program() == "two"  # the rebuilt context matched the recorded hash
    assert [n.status for n in session.dag.find(name="ask", kind="code")] == ["stopped", "completed"]


# -- recorded answers stand only for the question they answered -----------------------------
paid: list[int] = []


def _pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"


def test_a_recorded_approval_is_not_reused_for_other_arguments():
    from openprogram import ReplayMismatch, needs_approval

    pay = needs_approval(agentic_function(_pay))
    paid.clear()
    with Session() as recorded, Runtime(ScriptedModel([]), ask=lambda q: "yes"):
        pay(10)
    assert paid == [10]
    with Session(), Runtime(ReplayModel(recorded)):  # no asker: a replay never waits
        assert pay(10) == "paid 10"  # the very question: answered as recorded
    with (
        Session(),
        Runtime(ReplayModel(recorded)),
        pytest.raises(ReplayMismatch, match="was given to another question"),
    ):
        pay(10_000)
    assert paid == [10, 10]


def test_a_recorded_answer_to_a_fixed_question_is_not_reused_for_another_call():
    from openprogram import ReplayMismatch, needs_approval

    pay = needs_approval(agentic_function(_pay), question=lambda amount: "Pay?")
    paid.clear()
    with Session() as recorded, Runtime(ScriptedModel([]), ask=lambda q: "yes"):
        pay(10)
    with (
        Session(),
        Runtime(ReplayModel(recorded)),
        pytest.raises(ReplayMismatch, match="was given to another call asking it"),
    ):
        pay(10_000)
    assert paid == [10]


def test_resuming_an_approval_with_another_long_argument_diverges(tmp_path):
    from openprogram import ResumeDivergence, RunWaiting, needs_approval

    pay = needs_approval(agentic_function(_pay))
    store = tmp_path / "s.db"
    with pytest.raises(RunWaiting), Session(store) as session:
        pay("a" * 600 + "10")  # type: ignore[arg-type]
    (question,) = session.pending()
    session.answer(question.id, "yes")
    paid.clear()
    with pytest.raises(ResumeDivergence), Session.open(store, session.id, resume=True):
        pay("a" * 600 + "10000")  # type: ignore[arg-type]
    assert paid == []
