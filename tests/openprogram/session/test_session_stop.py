"""Session.stop(reason): the run stops at its next node boundary, from another thread
too; an `effect="once"` body is let finish first (as a SIGTERM drains)."""

from __future__ import annotations

import threading

import pytest

from openprogram import RunStopped, Session, agentic_function

ran: list[str] = []


@agentic_function
def step(i: int) -> int:
    ran.append(f"step {i}")
    return i


@agentic_function(effect="once")
def pay(session: Session) -> str:
    session.stop("asked to stop")  # mid-body: the body goes on, its calls too
    step(100)
    ran.append("paid")
    return "paid"


@agentic_function
def steps(session: Session, stop_at: int) -> int:
    for i in range(5):
        if i == stop_at:
            stopper = threading.Thread(target=session.stop, args=("asked to stop",))
            stopper.start()
            stopper.join()
        step(i)
    return 5


@agentic_function
def paying(session: Session) -> str:
    receipt = pay(session)
    step(1)
    return receipt


def test_a_stopped_session_stops_at_its_next_call() -> None:
    ran.clear()
    with Session() as session, pytest.raises(RunStopped, match="asked to stop"):
        steps(session, 2)
    assert ran == ["step 0", "step 1"]
    [top, *children] = session.dag.nodes
    assert top.status == "stopped" and [c.status for c in children] == ["completed"] * 2


def test_a_once_body_is_let_finish_before_the_stop() -> None:
    ran.clear()
    with Session() as session, pytest.raises(RunStopped, match="asked to stop"):
        paying(session)
    assert ran == ["step 100", "paid"]
    assert session.dag.nodes[1].name == "pay" and session.dag.nodes[1].status == "completed"
