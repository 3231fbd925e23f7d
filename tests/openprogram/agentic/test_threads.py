"""The threads rule of DESIGN.md §3: which session and Runtime a thread records with."""

from __future__ import annotations

import contextvars
import threading

import pytest

from openprogram import (
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    current_runtime,
    llm,
    start_thread,
)


@agentic_function
def ask(i: int) -> str:
    return llm(f"question {i}")


def run_in_plain_thread(target, *args):
    """Run target in a plain thread (no copied context); its result or its exception."""
    outcome: dict = {}

    def body():
        try:
            outcome["value"] = target(*args)
        except BaseException as exc:  # handed back to the test
            outcome["error"] = exc

    thread = threading.Thread(target=body)
    thread.start()
    thread.join()
    return outcome


def test_a_plain_thread_records_into_the_one_live_session_with_its_runtime():
    model = ScriptedModel(lambda request: f"answer to {request.text}")
    with Session() as session, Runtime(model) as runtime:
        outcome = run_in_plain_thread(ask, 1)
        assert run_in_plain_thread(current_runtime)["value"] is runtime
    assert outcome == {"value": "answer to question 1"}
    code, exchange = session.dag.nodes
    assert (code.name, code.parent, exchange.parent) == ("ask", None, code.id)


def test_with_two_live_sessions_a_plain_thread_gets_a_usage_error_naming_the_fix():
    first, second = Session(), Session()
    with first, Runtime(ScriptedModel(["unused"])):
        entered = threading.Event()
        leave = threading.Event()

        def other_request():
            with second:
                entered.set()
                leave.wait(timeout=30)

        other = threading.Thread(target=other_request)
        other.start()
        entered.wait(timeout=30)
        try:
            outcome = run_in_plain_thread(ask, 1)
        finally:
            leave.set()
            other.join()
    error = outcome["error"]
    assert isinstance(error, UsageError)
    assert "2 are live" in str(error)
    assert "openprogram.start_thread" in str(error)
    assert "contextvars.copy_context().run" in str(error)
    assert len(first.dag) == 0 and len(second.dag) == 0  # nothing landed anywhere


def test_with_two_live_runtimes_a_plain_thread_cannot_pick_one():
    with Session(), Runtime(ScriptedModel(["a"])), Runtime(ScriptedModel(["b"])):
        outcome = run_in_plain_thread(current_runtime)
    assert isinstance(outcome["error"], UsageError)
    assert "Runtime" in str(outcome["error"])


def test_with_no_live_session_a_plain_thread_records_into_the_process_default():
    from openprogram import current_session

    outcome = run_in_plain_thread(lambda: (current_session(), current_runtime()))
    session, runtime = outcome["value"]
    assert session is current_session() and runtime is current_runtime()


def test_start_thread_nests_the_threads_calls_under_the_caller():
    @agentic_function
    def fan_out() -> list[str]:
        results: list[str] = []
        threads = [start_thread(lambda i=i: results.append(ask(i))) for i in range(3)]
        for thread in threads:
            thread.join()
        return sorted(results)

    with Session() as session, Runtime(ScriptedModel(lambda request: request.text)):
        assert fan_out() == ["question 0", "question 1", "question 2"]
    top = session.dag.find(name="fan_out")[0]
    asks = session.dag.find(name="ask", kind="code")
    assert len(asks) == 3 and all(node.parent == top.id for node in asks)


def test_start_thread_passes_arguments_and_thread_options():
    seen: dict = {}

    def work(a, b, *, c):
        seen.update(a=a, b=b, c=c, name=threading.current_thread().name)

    thread = start_thread(work, 1, 2, c=3, name="worker-7", daemon=True)
    thread.join()
    assert seen == {"a": 1, "b": 2, "c": 3, "name": "worker-7"} and thread.daemon


def test_two_requests_in_two_threads_each_record_their_workers_into_their_own_session():
    """A web server: each request thread has its own Session and Runtime and starts
    worker threads; every node lands in its own request's session."""
    both_live = threading.Barrier(2)
    sessions: dict[str, Session] = {}
    plain_errors: dict[str, BaseException] = {}

    @agentic_function
    def handle(request_id: str) -> list[str]:
        both_live.wait(timeout=30)  # both sessions are live from here on
        results: list[str] = []
        workers = [
            start_thread(lambda i=i: results.append(ask(i)), name=f"{request_id}-{i}")
            for i in range(3)
        ]
        pool_thread = threading.Thread(
            target=contextvars.copy_context().run, args=(lambda: results.append(ask(9)),)
        )
        pool_thread.start()
        for worker in [*workers, pool_thread]:
            worker.join()
        plain = run_in_plain_thread(ask, 99)  # no copied context: refused, not misfiled
        plain_errors[request_id] = plain.get("error")
        both_live.wait(timeout=30)  # neither session ends before both checks are done
        return sorted(results)

    def serve(request_id: str) -> None:
        model = ScriptedModel(lambda request: f"{request_id}: {request.text}")
        with Session() as session, Runtime(model):
            sessions[request_id] = session
            handle(request_id)

    servers = [threading.Thread(target=serve, args=(rid,)) for rid in ("A", "B")]
    for server in servers:
        server.start()
    for server in servers:
        server.join()
    for request_id, session in sessions.items():
        dag = session.dag
        (top,) = dag.children(None)
        assert top.name == "handle" and top.input == {"request_id": request_id}
        assert top.output == [f"{request_id}: question {i}" for i in (0, 1, 2, 9)]
        asks = dag.find(name="ask", kind="code")
        assert len(asks) == 4 and all(node.parent == top.id for node in asks)
        for exchange in dag.find(kind="llm"):
            assert exchange.output.startswith(f"{request_id}: ")
        assert isinstance(plain_errors[request_id], UsageError)


def test_a_session_entered_twice_in_one_thread_counts_once():
    with Session() as session, session, Runtime(ScriptedModel(["one"])):
        outcome = run_in_plain_thread(ask, 1)
    assert outcome == {"value": "one"}


@pytest.mark.parametrize("nested", [False, True])
def test_leaving_a_session_makes_it_no_longer_live(nested):
    with Session() as outer:
        if nested:
            with Session():
                pass
        assert (
            run_in_plain_thread(lambda: __import__("openprogram").current_session())["value"]
            is outer
        )


def test_a_plain_threads_call_keeps_its_session_when_another_is_entered_meanwhile():
    asked, entered = threading.Event(), threading.Event()

    def slow_model(request):
        asked.set()
        entered.wait(timeout=30)  # a second session is live while this reply is pending
        return "late reply"

    with Session() as first, Runtime(ScriptedModel(slow_model)):
        worker = threading.Thread(target=lambda: outcome.update(run_in_plain_thread(ask, 1)))
        outcome: dict = {}
        worker.start()
        asked.wait(timeout=30)
        with Session() as second:
            entered.set()
            worker.join()
    assert outcome == {"value": "late reply"}
    assert [n.status for n in first.dag.nodes] == ["completed", "completed"]
    assert len(second.dag) == 0
