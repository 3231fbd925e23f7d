"""`openprogram sessions pending` and `sessions answer` over a real SQLite store."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from pydantic import BaseModel

from openprogram import RunWaiting, Session, agentic_function, ask_user
from openprogram.cli import cli


class Stay(BaseModel):
    city: str
    nights: int


@agentic_function
def plan() -> Stay:
    return ask_user("Where, and how long?", schema=Stay)


def run(*arguments: str, code: int = 0):
    result = CliRunner().invoke(cli, list(arguments), prog_name="openprogram")
    assert result.exit_code == code, result.output
    return result


def test_a_schema_question_is_listed_and_answered_with_json(tmp_path, monkeypatch):
    store = str(tmp_path / "runs.db")
    monkeypatch.setenv("OPENPROGRAM_STORE", store)
    with pytest.raises(RunWaiting), Session(store, id="stay01"):
        plan()
    with Session(store, id="other"):
        pass
    shown = run("sessions", "show", "stay01").output
    assert " · 2 waiting" in shown.splitlines()[0] and "⏸  plan #1" in shown
    listed = run("sessions", "pending").output
    assert listed.startswith("stay01 ") and "Where, and how long?" in listed
    assert "answer: a JSON Stay matching" in listed
    (question,) = json.loads(run("sessions", "pending", "stay", "--json").output)
    assert question["schema"]["title"] == "Stay" and question["node_id"] == question["id"]
    assert run("sessions", "pending", "other").output.strip() == (
        "no questions are waiting in session other"
    )

    wrong = run("sessions", "answer", "stay01", question["id"], '{"city": "Oslo"}', code=2)
    assert "'nights' is a required property" in wrong.output
    run("sessions", "answer", "stay01", question["id"], '{"city": "Oslo", "nights": 3}')
    run("sessions", "answer", "stay01", question["id"], '{"city": "Oslo", "nights": 3}')  # again
    again = run("sessions", "answer", "stay01", question["id"], '{"city": "Rome", "nights": 1}',
                code=1)  # fmt: skip
    assert "answered already" in again.output
    assert run("sessions", "answer", "stay01", "nope", "x", code=1).output.count("no question")
    with Session.open(store, "stay01", resume=True):
        assert plan() == Stay(city="Oslo", nights=3)
