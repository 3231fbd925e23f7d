"""ReplayModel: re-running a program offline against a recorded session."""

from __future__ import annotations

import asyncio

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
    agentic_function,
    allm,
    llm,
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
