"""An answer is final: a compare-and-set on the stored question, on every backend and
across processes; the second answer gets a UsageError naming who answered, and when."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram import RunWaiting, Session, UsageError, agentic_function, ask_user

ROOT = Path(__file__).resolve().parents[3]
paid: list[int] = []


@agentic_function
def pay(amount: int) -> str:
    if ask_user(f"Pay {amount} EUR?", choices=["yes", "no"]) == "yes":
        paid.append(amount)
        return "paid"
    return "not paid"


def _suspended(store: Any, session_id: str) -> str:
    """A session of `store` waiting on one question; the question's id."""
    with pytest.raises(RunWaiting), Session(store, id=session_id) as session:
        pay(100)
    (question,) = session.pending()
    return question.id


def _resumed(store: Any, session_id: str) -> str:
    with Session.open(store, session_id, resume=True):
        return pay(100)


@pytest.mark.slow
def test_of_two_sessions_answering_one_question_only_the_first_answer_lands(store: Any):
    paid.clear()
    question = _suspended(store, "pay1")
    first, second = Session.open(store, "pay1"), Session.open(store, "pay1")
    first.answer(question, "no")
    with pytest.raises(UsageError) as refused:
        second.answer(question, "yes")
    message = str(refused.value)
    assert "answered already by " in message and " UTC, with 'no'" in message
    assert "nothing changed" in message
    first.answer(question, "no")  # the same answer again: idempotent, through either
    second.answer(question, "no")
    (node,) = Session.open(store, "pay1").dag.find(name="ask_user")
    assert node.output == "no"
    assert _resumed(store, "pay1") == "not paid" and paid == []


def test_the_answerer_is_recorded_as_given_or_as_user_at_host_and_pid(store: Any):
    import os
    import socket

    question = _suspended(store, "pay2")
    loaded = Session.open(store, "pay2")
    Session.open(store, "pay2").answer(question, "yes", by="alice")
    with pytest.raises(UsageError, match=r"answered already by alice at .* with 'yes'"):
        loaded.answer(question, "no")
    (node,) = Session.open(store, "pay2").dag.find(name="ask_user")
    assert node.meta["answered_by"] == "alice" and isinstance(node.meta["answered_at"], float)
    with pytest.raises(UsageError, match="must name who answers"):
        Session.open(store, "pay2").answer(question, "yes", by=" ")
    other = _suspended(store, "pay2b")
    Session.open(store, "pay2b").answer(other, "no")
    (node,) = Session.open(store, "pay2b").dag.find(name="ask_user")
    assert node.meta["answered_by"].endswith(f"@{socket.gethostname()} pid {os.getpid()}")


_CHILD = """
import sys
sys.path.insert(0, sys.argv[1])
from openprogram import Session, UsageError
store, session_id, question, value = sys.argv[2:6]
session = Session.open(store, session_id)
print("loaded", flush=True)
sys.stdin.readline()
try:
    session.answer(question, value)
    print("answered", flush=True)
except UsageError as exc:
    print("refused:", exc, flush=True)
"""


def _answerer(store: str, session_id: str, question: str, value: str) -> Any:
    child = subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(ROOT), store, session_id, question, value],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "loaded\n", child.stderr
    return child


def _go(child: Any) -> str:
    out, err = child.communicate("go\n", timeout=60)
    assert child.returncode == 0, err
    return str(out)


@pytest.mark.slow
def test_two_processes_that_loaded_the_question_cannot_both_answer_it(durable_store: str):
    paid.clear()
    question = _suspended(durable_store, "pay3")
    refuses = _answerer(durable_store, "pay3", question, "yes")  # loaded while waiting
    answers = _answerer(durable_store, "pay3", question, "no")
    assert _go(answers) == "answered\n"
    refused = _go(refuses)
    assert refused.startswith("refused: question ") and "answered already by " in refused
    assert " with 'no'" in refused
    assert _resumed(durable_store, "pay3") == "not paid" and paid == []


def test_a_fork_at_a_waiting_question_answers_it_for_itself(store: Any):
    paid.clear()
    question = _suspended(store, "pay4")
    fork = Session.open(store, "pay4").fork(at=question, id="pay4-fork")
    fork.answer(question, "yes")
    assert Session.open(store, "pay4-fork").pending() == []
    assert [q.id for q in Session.open(store, "pay4").pending()] == [question]
    assert _resumed(store, "pay4-fork") == "paid" and paid == [100]
    Session.open(store, "pay4").answer(question, "no")  # the original keeps its own
    assert _resumed(store, "pay4") == "not paid" and paid == [100]


def test_the_cli_answers_a_question_named_as_any_node_is(tmp_path: Path):
    from click.testing import CliRunner

    from openprogram.cli import cli

    paid.clear()
    path = str(tmp_path / "runs.db")
    question = _suspended(path, "pay5")
    said = CliRunner().invoke(
        cli, ["sessions", "answer", "pay5", "ask_user#1", "no", "--store", path]
    )  # NAME#K, as every NODE argument takes it
    assert said.exit_code == 0, said.output
    assert said.output.startswith(f"answered {question} (")
    again = CliRunner().invoke(
        cli, ["sessions", "answer", "pay5", question[:6], "no", "--store", path]
    )  # a unique id prefix: the same answer again is a no-op
    assert again.exit_code == 0, again.output
    assert _resumed(path, "pay5") == "not paid" and paid == []
