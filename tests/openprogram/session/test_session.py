"""Session: store spellings, the storeless hot path, forks, inputs and resume details.

The per-backend behaviour (reopen, kill, resume, fork in a store) is in tests/openprogram/store/.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sys
from typing import Any

import pytest
from PIL import Image as PILImage
from pydantic import BaseModel

from openprogram import (
    ResumeDivergence,
    Runtime,
    ScriptedModel,
    Session,
    Store,
    UsageError,
    agentic_function,
    allm,
    current_frame,
    current_runtime,
    llm,
    render_context,
)
from openprogram.store import FORMAT_VERSION, MemoryStore, PostgresStore, SQLiteStore, open_store


def test_no_store_or_memory_records_nothing_and_listens_to_nothing():
    for spec in (None, "memory"):
        session = Session(spec)
        assert session.store is None and session.dag.listeners == []
    with pytest.raises(UsageError, match="needs a store"):
        Session.open("memory", "x")


def test_stores_are_spelled_as_paths_urls_or_objects(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    store, owned = open_store(tmp_path / "a.db")
    assert isinstance(store, SQLiteStore) and owned and store.path == tmp_path / "a.db"
    relative, _ = open_store("sqlite:///b.db")
    assert relative.path == tmp_path / "b.db"
    absolute, _ = open_store(f"sqlite:///{tmp_path}/c.db?synchronous=full")
    assert absolute.path == tmp_path / "c.db" and absolute.synchronous == "FULL"
    memory = MemoryStore()
    assert open_store(memory) == (memory, False) and isinstance(memory, Store)
    for bad, message in (
        ("mysql://host/db", "scheme"),
        ("sqlite:///x.db?mode=ro", "'mode'"),
        ("sqlite://", "sqlite:////absolute"),
        (42, "is not a store"),
    ):
        with pytest.raises(UsageError, match=message):
            open_store(bad)
    with pytest.raises(UsageError, match="synchronous='SOMETIMES'"):
        open_store("sqlite:///d.db?synchronous=sometimes")
    for opened in (store, relative, absolute):
        opened.close()


def test_postgres_without_psycopg_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(ImportError, match=r'pip install "openprogram\[postgres\]"'):
        PostgresStore("postgresql://nobody@127.0.0.1:1/none")
    with pytest.raises(ImportError, match="openprogram"):
        Session("postgresql://nobody@127.0.0.1:1/none")


def test_submit_records_an_input_id_once():
    session = Session()
    first = session.submit("go", input_id="a")
    assert session.submit("go again", input_id="a") is first
    assert session.submit("no id") is not session.submit("no id")
    assert [n.input for n in session.dag.nodes] == ["go", "no id", "no id"]


@agentic_function
def noted(text: str) -> str:
    return text.upper()


def test_a_fork_without_a_store_is_isolated_both_ways():
    with Session() as original:
        original.submit("first")
        noted("a")
        original.submit("second")
        noted("b")
    fork = original.fork(at=original.dag.nodes[1].id)
    with fork:
        noted("c")
    assert [n.input for n in original.dag.nodes] == [
        "first",
        {"text": "a"},
        "second",
        {"text": "b"},
    ]
    assert [n.input for n in fork.dag.nodes] == ["first", {"text": "a"}, {"text": "c"}]
    assert fork.dag.nodes[-1].branch == f"fork-{fork.id}"
    seen = render_context(fork.dag).text()
    assert "second" not in seen and '[noted #2] input={"text": "c"}' in seen
    assert "c" not in render_context(original.dag).text().split("noted #2")[-1]


def test_a_fork_of_a_fork_keeps_the_whole_lineage(tmp_path):
    path = tmp_path / "lineage.db"
    with Session(path, id="root") as root:
        noted("a")
        noted("b")
    child = root.fork(at=root.dag.nodes[0].id, id="child")
    with child:
        noted("c")
    grandchild = child.fork(at=child.dag.nodes[-1].id, id="grandchild")
    with grandchild:
        noted("d")
    reopened = Session.open(path, "grandchild")
    assert [n.input["text"] for n in reopened.dag.nodes] == ["a", "c", "d"]
    assert "[noted #3]" in render_context(reopened.dag).text()
    reopened.close()


# -- resume details (on a MemoryStore) -------------------------------------------------------


class Killed(BaseException):
    pass


def _go_on() -> None:
    return None


checkpoint = _go_on
"""The programs below call this where a test may stop them dead."""


def _killed_session(store: Store, program: Any) -> str:
    """Record `program()` up to its checkpoint; from there on nothing more is recorded."""
    global checkpoint
    with Session(store) as session:

        def stop() -> None:
            session.dag.listeners.clear()
            raise Killed

        checkpoint = stop
        try:
            with pytest.raises(Killed):
                program()
        finally:
            checkpoint = _go_on
    return session.id


def test_async_calls_resume_like_sync_ones():
    store, runs = MemoryStore(), []

    @agentic_function
    async def fetch(i: int) -> int:
        runs.append(i)
        await asyncio.sleep(0)
        return i * 10

    @agentic_function
    async def gather(n: int) -> list[int]:
        values = await asyncio.gather(*(fetch(i) for i in range(n)))
        checkpoint()
        return [*values, await fetch(99)]

    session_id = _killed_session(store, lambda: asyncio.run(gather(3)))
    runs.clear()
    with Session.open(store, session_id, resume=True):
        assert asyncio.run(gather(3)) == [0, 10, 20, 990]
    assert runs == [99]


def test_threads_that_start_in_another_order_still_match_by_input():
    import threading

    store, runs, order = MemoryStore(), [], [0, 1, 2]

    @agentic_function
    def work(i: int) -> int:
        runs.append(i)
        return -i

    @agentic_function
    def fan_out() -> list[int]:
        results: dict[int, int] = {}
        for i in list(order):  # one at a time, so each run's order is known
            thread = threading.Thread(
                target=contextvars.copy_context().run,
                args=(lambda i=i: results.__setitem__(i, work(i)),),
            )
            thread.start()
            thread.join()
        checkpoint()
        return [results[i] for i in sorted(results)]

    session_id = _killed_session(store, fan_out)
    runs.clear()
    order.reverse()
    with Session.open(store, session_id, resume=True):
        assert fan_out() == [0, -1, -2]
    assert runs == []


def test_an_llm_exchange_with_different_content_is_a_divergence():
    store = MemoryStore()

    suffix = ["as recorded"]

    @agentic_function
    def ask(question: str) -> str:
        answer = llm(question)
        llm(f"second, {suffix[0]}")
        checkpoint()
        return answer

    with Runtime(ScriptedModel(["yes", "and"])):
        session_id = _killed_session(store, lambda: ask("why?"))
    suffix[0] = "changed"
    with (
        Session.open(store, session_id, resume=True),
        Runtime(ScriptedModel([])),
        pytest.raises(ResumeDivergence, match=r"ask #1 / llm ask #2"),
    ):
        ask("why?")


def test_an_invalid_structured_reply_and_its_repair_are_replayed():
    class Answer(BaseModel):
        value: int

    store = MemoryStore()

    @agentic_function
    def decide() -> int:
        value = llm("decide", response_format=Answer).value
        checkpoint()
        return value

    with Runtime(ScriptedModel(["not json", '{"value": 7}'])):
        session_id = _killed_session(store, decide)
    with Session.open(store, session_id, resume=True) as session, Runtime(ScriptedModel([])):
        assert decide() == 7
    first, repair = session.dag.find(kind="llm")
    assert first.status == "error" and "invalid structured output" in first.error
    assert repair.status == "completed" and len(session.dag.find(kind="llm")) == 2


def test_a_repeated_model_failure_is_kept_as_a_previous_error():
    store = MemoryStore()

    @agentic_function
    def ask() -> str:
        return llm("hello")

    with (
        Session(store, id="flaky"),
        Runtime(ScriptedModel([ValueError("boom")])),
        pytest.raises(ValueError, match="boom"),
    ):
        ask()
    with Session.open(store, "flaky", resume=True) as session, Runtime(ScriptedModel(["hi"])):
        assert ask() == "hi"
    (exchange,) = session.dag.find(kind="llm")
    assert exchange.status == "completed" and "boom" in exchange.meta["previous_errors"][0]


def test_resumed_outputs_get_back_their_types_and_images():
    class Point(BaseModel):
        x: int
        y: int

    store, runs = MemoryStore(), []

    @agentic_function
    def locate() -> Point:
        runs.append("locate")
        return Point(x=1, y=2)

    @agentic_function
    def pair() -> tuple[int, str]:
        runs.append("pair")
        return (1, "a")

    @agentic_function
    def screenshot():
        runs.append("screenshot")
        return PILImage.new("RGB", (3, 3), "green")

    @agentic_function
    def untyped(values: list[int]):
        runs.append("untyped")
        return {"sum": sum(values)}

    with Session(store, id="typed"):
        originals = (locate(), pair(), screenshot(), untyped([1, 2]))
    runs.clear()
    with Session.open(store, "typed", resume=True):
        point, both, image, summed = (locate(), pair(), screenshot(), untyped([1, 2]))
    assert runs == []
    assert isinstance(point, Point) and point == originals[0]
    assert both == (1, "a")
    assert image.tobytes() == originals[2].tobytes() and image.size == (3, 3)
    assert summed == {"sum": 3}


def test_objects_printed_with_their_address_still_match_on_resume():
    class Desktop:
        pass

    store, runs = MemoryStore(), []

    @agentic_function
    def act(desktop: Desktop, action: str) -> str:
        runs.append(action)
        return action

    with Session(store, id="objects"):
        act(Desktop(), "click")
    with Session.open(store, "objects", resume=True):
        assert act(Desktop(), "click") == "click"
    assert runs == ["click"]


def test_a_session_that_is_not_resuming_appends_after_the_recording():
    store = MemoryStore()
    with Session(store, id="append"):
        noted("a")
    with Session.open(store, "append") as session:
        assert not session.resuming
        noted("a")
    assert [n.seq for n in Session.open(store, "append").dag.nodes] == [1, 2]


@pytest.mark.parametrize("use_async", [False, True])
def test_a_resumed_session_replays_top_level_llm_calls(use_async):
    store = MemoryStore()
    with Session(store, id="top"), Runtime(ScriptedModel(["one"])):
        first = asyncio.run(allm("hi")) if use_async else llm("hi")
    with Session.open(store, "top", resume=True), Runtime(ScriptedModel([])):
        again = asyncio.run(allm("hi")) if use_async else llm("hi")
    assert first == again == "one"


def test_a_call_whose_place_was_taken_out_of_order_still_diverges():
    store, runs, values = MemoryStore(), [], [1, 2]

    @agentic_function
    def each(i: int) -> int:
        runs.append(i)
        return i

    @agentic_function
    def loop() -> list[int]:
        done = [each(i) for i in list(values)]
        checkpoint()
        return done

    session_id = _killed_session(store, loop)
    values[:] = [2, 3]
    with (
        Session.open(store, session_id, resume=True),
        pytest.raises(ResumeDivergence, match=r"loop #1 / each #1 .*\{\"i\": 1\}.*\{\"i\": 3\}"),
    ):
        loop()
    assert runs == [1, 2]  # nothing ran again: each(2) was replayed, each(3) refused


def test_a_divergence_reaches_the_caller_unlogged_with_the_context_as_it_was(caplog):
    store = MemoryStore()

    @agentic_function
    def step(x: int, runtime: Runtime = None) -> int:
        return x

    with Session(store, id="diverge"):
        step(1)
    ambient, passed = Runtime(ScriptedModel([])), Runtime(ScriptedModel([]))
    with Session.open(store, "diverge", resume=True) as session, ambient:
        with pytest.raises(ResumeDivergence, match=r"step #1") as caught:
            step(2, runtime=passed)
        # the call's own runtime and frame end with it, as when any call raises
        assert current_runtime() is ambient and current_frame() is None
        assert caught.value.node_id == session.dag.find(name="step")[0].id
        assert len(session.dag) == 1 and session.failed_writes == 0
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


@pytest.mark.slow
def test_an_llm_node_keeps_a_string_content_as_given_and_older_recordings_still_resume(
    tmp_path,
):
    import json
    import sqlite3
    from contextlib import closing

    path = str(tmp_path / "runs.db")

    @agentic_function
    def greet() -> str:
        reply = llm("say hello")
        if reply == "hello":
            raise RuntimeError("dies after its exchange")
        return reply

    with (
        Session(path, id="older") as session,
        Runtime(ScriptedModel(["hello"])),
        pytest.raises(RuntimeError),
    ):
        greet()
    (exchange,) = session.dag.find(kind="llm")
    assert exchange.input == "say hello"  # DESIGN §2: the request content
    # format_version 4 stored a string content as its one text part
    with closing(sqlite3.connect(path)) as raw, raw:
        raw.execute(
            "UPDATE openprogram_nodes SET input = ? WHERE kind = 'llm'",
            (json.dumps([{"type": "text", "text": "say hello"}]),),
        )
        raw.execute("UPDATE openprogram_meta SET value = '4' WHERE key = 'format_version'")

    @agentic_function
    def greet() -> str:  # the same program, run again, no longer failing
        return llm("say hello")

    with Session.open(path, "older", resume=True) as resumed, Runtime(ScriptedModel([])):
        assert greet() == "hello"  # replayed from the recording: the model is not asked
    assert resumed.store.format_version == FORMAT_VERSION  # migrated


def test_open_with_create_starts_the_session_the_first_time_and_resumes_it_after(tmp_path):
    db = str(tmp_path / "runs.db")
    runs = []

    @agentic_function
    def step(n: int) -> int:
        runs.append(n)
        return n * 2

    for _ in range(2):
        with (
            Session.open(db, "daily", resume=True, create=True) as session,
            Runtime(ScriptedModel([])),
        ):
            assert step(1) == 2
        assert session.id == "daily"
    assert runs == [1]  # the second open resumed: the call came from the record
    store = MemoryStore()
    with Session.open(store, "m", create=True) as session:
        step(2)
    assert Session.open(store, "m").dag.find(name="step")[0].output == 4
    with pytest.raises(UsageError, match="no session 'absent'"):
        Session.open(db, "absent")
