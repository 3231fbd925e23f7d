"""The shared store suite: every behaviour of DESIGN.md §6, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import contextvars
import json
import logging
import threading
import time
from typing import Any

import pytest
from PIL import Image as PILImage

from openprogram import (
    ResumeDivergence,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    StoreError,
    UsageError,
    agentic_function,
    llm,
    render_context,
)
from openprogram.store import open_store
from openprogram.store.recorder import BATCH_AGE_S, SLOW_CALL_S
from tests.openprogram.store import programs
from tests.openprogram.store.helpers import Killed, comparable, count_rows, run_until_killed

# -- recording and reopening -----------------------------------------------------------------


def test_every_node_is_reopened_exactly_as_recorded(store):
    with Session(store, id="run") as session, Runtime(programs.model()):
        session.submit("do the task", input_id="task-1")
        assert programs.agent("task") == programs.EXPECTED
    reopened = Session.open(store, "run")
    assert comparable(reopened) == comparable(session)
    llm_node = reopened.dag.find(kind="llm")[0]
    assert llm_node.reads and llm_node.messages_hash and llm_node.usage.calls == 1
    reopened.close()


def _stored(store: Any, session_id: str) -> list[tuple[str, str, Any]]:
    """(name, status, output) of the session's nodes as a new reader sees them."""
    reader = Session.open(store, session_id)
    found = [(n.name, n.status, n.output) for n in reader.dag.nodes]
    reader.close()
    return found


def test_an_llm_exchange_is_durable_when_sent_and_when_answered(store):
    seen: dict[str, Any] = {}

    def reply(request: Any) -> str:
        seen["asking"] = _stored(store, "live")
        return "42"

    @agentic_function
    def ask(x: int) -> str:
        programs.count(x)  # a fast call: it waits, and is committed with the exchange
        answer = llm("the answer?")
        seen["answered"] = _stored(store, "live")
        return answer

    with Session(store, id="live"), Runtime(ScriptedModel(reply)):
        ask(41)
    assert seen["asking"] == [("ask", "running", None), ("count", "completed", 41),
                              ("ask", "running", None)]  # fmt: skip
    assert seen["answered"][2] == ("ask", "completed", "42")  # before llm() returned
    assert _stored(store, "live")[0] == ("ask", "completed", "42")


def test_a_call_that_took_a_millisecond_is_durable_when_it_returns(store):
    @agentic_function
    def slow(x: int) -> int:
        time.sleep(SLOW_CALL_S * 2)  # the work itself: a call that is dear to redo
        return x

    with Session(store, id="slow") as session:
        slow(1)
        assert _stored(store, "slow") == [("slow", "completed", 1)]
        programs.count(2)
        session.flush()  # what waits is committed on demand
        assert _stored(store, "slow")[1] == ("count", "completed", 2)
    assert session.failed_writes == 0


def test_a_waiting_call_is_committed_within_the_batch_age_by_itself(store):
    with Session(store, id="waits") as session:
        programs.count(1)
        started = time.monotonic()
        while not _stored(store, "waits") and time.monotonic() - started < 60:
            time.sleep(BATCH_AGE_S / 4)  # nothing to await: the flusher thread commits
        assert _stored(store, "waits") == [("count", "completed", 1)]
    assert session.failed_writes == 0


def test_fields_set_after_creation_reach_the_completed_record(store):
    with Session(store, id="fields"), Runtime(ScriptedModel(["one", "two"])):

        @agentic_function(render_range={"callers": 0}, system="be brief")
        def ask() -> str:
            llm("first")
            return llm("second")

        ask()
    reopened = Session.open(store, "fields")
    first, second = reopened.dag.find(kind="llm")
    assert second.reads == [reopened.dag.find(name="ask")[0].id, first.id]
    assert render_context(
        reopened.dag, second.parent, before=second.seq, content=second.input
    ).messages_hash.startswith(second.messages_hash[:8])
    assert second.system == "be brief" and second.meta["model"] == "scripted"
    assert second.usage.output_tokens > 0
    reopened.close()


def test_identical_images_are_stored_once_and_loaded_only_when_used(store):
    red = PILImage.new("RGB", (64, 48), "red")

    @agentic_function
    def look(screen: Any, step: int) -> str:
        return f"step {step}"

    with Session(store, id="screens"):
        for step in range(5):
            look(red.copy(), step)
        look(PILImage.new("RGB", (64, 48), "blue"), 5)
    assert count_rows(store, "blobs") == 2
    reopened = Session.open(store, "screens")
    ref = reopened.dag.nodes[0].input["screen"]
    assert len(reopened.dag.blobs) == 2 and dict.__len__(reopened.dag.blobs) == 0
    assert reopened.dag.image(ref).pil.tobytes() == red.tobytes()
    assert dict.__len__(reopened.dag.blobs) == 1
    reopened.close()


def test_many_sessions_live_in_one_store_and_are_listed(store):
    for name, calls in (("first", 1), ("second", 3)):
        with Session(store, id=name):
            for i in range(calls):
                programs.count(i)
    second = Session.open(store, "second")
    fork = second.fork(at=second.dag.nodes[1].id)
    second.close()
    resolved, owned = open_store(store)
    listed = {info.id: info for info in resolved.list_sessions()}
    assert [listed["first"].nodes, listed["second"].nodes] == [1, 3]
    assert listed[fork.id].parent == "second" and listed[fork.id].nodes == 0
    assert resolved.session("nope") is None
    if owned:
        resolved.close()


def test_an_existing_id_is_refused_and_an_unknown_one_named(store):
    Session(store, id="taken").close()
    with pytest.raises(UsageError, match="'taken' exists already"):
        Session(store, id="taken")
    with pytest.raises(UsageError, match="no session 'missing'"):
        Session.open(store, "missing")


def test_store_failures_are_logged_and_never_reach_the_program(store, caplog):
    resolved, _ = open_store(store)

    class Broken:
        url = "broken://"

        def __getattr__(self, name: str) -> Any:
            return getattr(resolved, name)

        def write(self, *args: Any) -> None:
            raise StoreError("disk full")

        def write_batch(self, *args: Any) -> None:
            raise StoreError("disk full")

    with caplog.at_level(logging.ERROR), Session(Broken(), id="broken") as session:
        assert programs.count(7) == 7
        session.submit("hello")
    assert "could not record" in caplog.text and "disk full" in caplog.text
    assert session.failed_writes == 2  # the call's record (one batch: created and
    # completed) and the input's; the batch failed and each was tried on its own
    resolved.close()


def test_submit_with_the_same_input_id_records_once_also_after_reopening(store):
    with Session(store, id="inputs") as session:
        first = session.submit("hello", input_id="message-1")
        assert session.submit("hello again", input_id="message-1") is first
    reopened = Session.open(store, "inputs")
    assert reopened.submit("hello", input_id="message-1").id == first.id
    assert reopened.submit("other", input_id="message-2").input == "other"
    reopened.close()
    assert [n.input for n in Session.open(store, "inputs").dag.nodes] == ["hello", "other"]


def test_32_threads_record_into_one_session(store):
    @agentic_function
    def inner(worker: int, i: int) -> str:
        return llm(f"worker {worker} item {i}")

    @agentic_function
    def work(worker: int) -> list[str]:
        return [inner(worker, i) for i in range(3)]

    model = ScriptedModel(lambda request: request.text.upper())
    with Session(store, id="threads") as session, Runtime(model):
        threads = [  # each in a copy of this context: it carries the ambient Runtime
            threading.Thread(target=contextvars.copy_context().run, args=(work, w))
            for w in range(32)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert len(session.dag) == 32 * (1 + 3 * 2)
    reopened = Session.open(store, "threads")
    assert comparable(reopened) == comparable(session)
    for top in reopened.dag.children(None):
        worker = top.input["worker"]
        for child in reopened.dag.children(top.id):
            assert child.input["worker"] == worker
            (exchange,) = reopened.dag.children(child.id)
            assert exchange.output == f"WORKER {worker} ITEM {child.input['i']}"
    reopened.close()


# -- resuming --------------------------------------------------------------------------------


def test_resume_returns_recorded_outputs_and_replays_exchanges_of_interrupted_calls(store):
    recorded = run_until_killed(store, "crash", "plan 2 thought")
    assert [n.status for n in recorded.dag.find(name="step")] == ["completed"] * 2 + ["error"]
    with Session.open(store, "crash", resume=True) as session, Runtime(programs.model()):
        assert programs.agent("task") == programs.EXPECTED
    assert programs.executed == ["plan 2", "tool 3", "plan 3"]
    assert programs.asked == ["plan step 2 after thought 2", "think about step 3",
                              "plan step 3 after thought 3"]  # fmt: skip
    reopened = Session.open(store, "crash")
    assert {n.status for n in reopened.dag.nodes} == {"completed"}
    assert len(reopened.dag.find(name="step")) == 4 and len(reopened.dag.find(name="agent")) == 1
    (agent,) = reopened.dag.find(name="agent")
    assert agent.meta["resumed"] == 1 and agent.output == programs.EXPECTED
    assert comparable(reopened) == comparable(session)
    reopened.close()


def test_an_exchange_in_flight_is_asked_again_and_nothing_before_it(store):
    run_until_killed(store, "flight", "llm: plan step 1 after thought 1")
    crashed = Session.open(store, "flight")
    in_flight = crashed.dag.find(kind="llm")[-1]
    assert (in_flight.status, in_flight.output) == ("running", None)
    crashed.close()
    with Session.open(store, "flight", resume=True), Runtime(programs.model()):
        assert programs.agent("task") == programs.EXPECTED
    assert programs.asked[0] == "plan step 1 after thought 1"
    assert "think about step 1" not in programs.asked and "tool 1" not in programs.executed


def test_a_resumed_call_returns_its_annotated_type(store):
    with Session(store, id="typed"), Runtime(programs.model()):
        first = programs.plan(5, 25)
    with Session.open(store, "typed", resume=True), Runtime(ScriptedModel([])):
        again = programs.plan(5, 25)
    assert isinstance(again, programs.Plan) and again == first
    assert programs.executed == ["plan 5"]


def test_a_different_input_at_a_recorded_place_raises_resume_divergence(store):
    run_until_killed(store, "diverge", "tool 1")
    diverged = r'agent #1 .*"task": "task".*"another task"'
    with (
        Session.open(store, "diverge", resume=True) as session,
        Runtime(programs.model()),
        pytest.raises(ResumeDivergence, match=diverged) as caught,
    ):
        programs.agent("another task")
    assert caught.value.node_id == session.dag.find(name="agent")[0].id
    assert programs.executed == []


def test_interrupted_calls_the_resumed_run_does_not_make_are_cancelled(store):
    run_until_killed(store, "leftover", "plan 3 thought")  # just after a durable point
    with Session.open(store, "leftover", resume=True):
        pass  # this time the program does not run at all
    reopened = Session.open(store, "leftover")
    cancelled = [n.name for n in reopened.dag.nodes if n.status == "cancelled"]
    assert cancelled == ["agent", "step", "plan"]
    assert (
        "resumed run did not call it again" in reopened.dag.find(name="plan", kind="code")[-1].error
    )
    assert all(n.status == "completed" for n in reopened.dag.find(name="tool"))
    assert all(n.status == "completed" for n in reopened.dag.find(kind="llm"))
    reopened.close()


@pytest.mark.slow
def test_a_failed_run_resumes_at_the_failure_keeping_the_error(store):
    model = ScriptedModel(["thought 0", '{"action": "act 0", "step": 0}', RuntimeError("down")])
    with (
        Session(store, id="failed"),
        Runtime(model, max_retries=0),
        pytest.raises(Exception, match="down"),
    ):
        programs.agent("task")
    programs.executed.clear()
    with Session.open(store, "failed", resume=True), Runtime(programs.model()):
        assert programs.agent("task") == programs.EXPECTED
    assert programs.executed == ["plan 1", "tool 2", "plan 2", "tool 3", "plan 3"]
    reopened = Session.open(store, "failed")
    (agent,) = reopened.dag.find(name="agent")
    assert agent.status == "completed" and "down" in agent.meta["previous_errors"][0]
    reopened.close()


# -- forking ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_fork_shares_history_up_to_its_node_and_the_two_never_see_each_other(store):
    with Session(store, id="original") as original, Runtime(programs.model()):
        original.submit("the task")
        programs.agent("task")
    before = comparable(original)
    second_step = original.dag.find(name="step")[1]
    fork = original.fork(at=second_step.id)
    assert comparable(original) == before
    names = [n.name for n in fork.dag.nodes]
    assert names.count("step") == 2 and "user" in names
    assert fork.dag.find(name="agent")[0].status == "running"  # open when the fork was made
    assert all(n.seq <= second_step.end_seq for n in fork.dag.nodes)

    with fork:
        fork.submit("a different instruction")
        programs.count(99)
    reopened_fork = Session.open(store, fork.id)
    assert comparable(reopened_fork) == comparable(fork)
    seen = render_context(reopened_fork.dag).text()
    assert "a different instruction" in seen and "count" in seen
    assert "step #3" not in seen
    reopened_original = Session.open(store, "original")
    assert comparable(reopened_original) == before
    assert "a different instruction" not in render_context(reopened_original.dag).text()
    reopened_fork.close()
    reopened_original.close()


@pytest.mark.slow
def test_resuming_a_fork_replays_the_shared_steps_and_runs_the_rest_live(store):
    with Session(store, id="base") as base, Runtime(programs.model()):
        programs.agent("task")
    fork = base.fork(at=base.dag.find(name="step")[1].id)
    programs.executed.clear()
    with Session.open(store, fork.id, resume=True), Runtime(programs.model()):
        assert programs.agent("task") == programs.EXPECTED
    assert programs.executed == ["tool 2", "plan 2", "tool 3", "plan 3"]
    assert len(Session.open(store, "base").dag.find(name="step")) == 4
    refork = Session.open(store, fork.id)
    assert [n.status for n in refork.dag.find(name="step")] == ["completed"] * 4
    assert refork.dag.find(name="step")[3].id not in {n.id for n in base.dag.nodes}
    refork.close()


def test_a_fork_at_an_unknown_or_running_node_is_refused(store):
    with Session(store, id="busy") as session:

        @agentic_function
        def busy() -> None:
            with pytest.raises(UsageError, match="still running"):
                session.fork(at=session.dag.nodes[0].id)

        busy()
        with pytest.raises(UsageError, match="no node 'nope'"):
            session.fork(at="nope")


# -- a GUI-shaped run ------------------------------------------------------------------------


class Screen:
    """A fake screen whose picture changes with every click."""

    def __init__(self) -> None:
        self.clicks: list[int] = []
        self.captures = 0

    def capture(self) -> PILImage.Image:
        self.captures += 1
        return PILImage.new("RGB", (32, 24), (40 * len(self.clicks), 0, 0))


screen = Screen()


@agentic_function
def look(step: int) -> PILImage.Image:
    return screen.capture()


@agentic_function
def choose(step: int, screenshot: PILImage.Image) -> dict:
    return json.loads(llm([f"step {step}: where to click?", screenshot]))


@agentic_function
def click(x: int) -> str:
    programs.checkpoint(f"click {x}")
    screen.clicks.append(x)
    return f"clicked {x}"


@agentic_function
def gui_run(task: str, steps: int) -> list[str]:
    done = []
    for step in range(1, steps + 1):
        target = choose(step, look(step))
        done.append(click(target["x"]))
    return done


def test_a_crashed_gui_shaped_run_resumes_without_repeating_clicks_or_model_calls(store):
    global screen
    screen = Screen()
    model = ScriptedModel(lambda request: json.dumps({"x": 10 * int(request.text.split()[1][:-1])}))
    with Session(store, id="gui") as session, Runtime(model):

        def die_at_third_click(label: str) -> None:
            if label == "click 30":
                session.dag.listeners.clear()
                raise Killed

        programs.checkpoint = die_at_third_click
        with pytest.raises(Killed):
            gui_run("fill the form", 5)
    programs.checkpoint = programs._no_stop
    assert screen.clicks == [10, 20] and screen.captures == 3 and len(model.requests) == 3

    model = ScriptedModel(lambda request: json.dumps({"x": 10 * int(request.text.split()[1][:-1])}))
    with Session.open(store, "gui", resume=True), Runtime(model):
        assert gui_run("fill the form", 5) == [f"clicked {x}" for x in (10, 20, 30, 40, 50)]
    assert screen.clicks == [10, 20, 30, 40, 50]  # the third click once, none repeated
    assert screen.captures == 5 and [r.text for r in model.requests] == [
        "step 4: where to click?",
        "step 5: where to click?",
    ]


# -- runs a gate stopped ---------------------------------------------------------------------


class _StopAfter:
    """A gate allowing `calls` model calls, then stopping the run."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.stop_reason: str | None = None

    def on_run_continue(self, runtime: Any, *, kind: str, frame: Any) -> bool:
        if self.calls == 0:
            self.stop_reason = "paused by the operator"
            return False
        self.calls -= 1
        return True


@agentic_function
def _ask(question: str) -> str:
    return llm(question)


@agentic_function
def _job() -> list[str]:
    return [_ask("one"), _ask("two")]


@pytest.mark.slow
def test_a_stopped_run_is_stored_as_stopped_and_resumed_past_its_stop(store):
    with (
        Session(store, id="paused"),
        Runtime(ScriptedModel(["A", "B"]), callbacks=[_StopAfter(1)]),
        pytest.raises(RunStopped),
    ):
        _job()
    reopened = Session.open(store, "paused")
    statuses = [(n.kind, n.name, n.status) for n in reopened.dag.nodes]
    assert statuses == [
        ("code", "_job", "stopped"),
        ("code", "_ask", "completed"),
        ("llm", "_ask", "completed"),
        ("code", "_ask", "stopped"),
    ]
    job, second = reopened.dag.nodes[0], reopened.dag.nodes[3]
    for node in (job, second):
        assert node.meta["stop_reason"] == "paused by the operator"
        assert node.error == "RunStopped: paused by the operator"
    reopened.close()

    model = ScriptedModel(["B"])
    with Session.open(store, "paused", resume=True) as resumed, Runtime(model):
        assert _job() == ["A", "B"]
    assert len(model.requests) == 1  # the first exchange came from the recording
    job = resumed.dag.nodes[0]
    assert job.status == "completed"
    assert job.meta["previous_errors"] == ["RunStopped: paused by the operator"]
