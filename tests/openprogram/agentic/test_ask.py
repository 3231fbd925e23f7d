"""ask_user, the runtime's asker, suspending with RunWaiting, answering and resuming."""

from __future__ import annotations

import asyncio
import io

import pytest
from pydantic import BaseModel

from openprogram import (
    ConsoleAsk,
    Question,
    ReplayModel,
    RunStopped,
    Runtime,
    RunWaiting,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    allm,
    ask_user,
    llm,
    needs_approval,
)

runs: list[str] = []


class Trip(BaseModel):
    city: str
    nights: int


@agentic_function
def search(city: str) -> list[str]:
    runs.append(f"search {city}")
    return [f"Hotel {city}"]


@agentic_function
def confirm(hotel: str) -> str:
    return ask_user(f"Book {hotel}?", choices=["yes", "no"])


@agentic_function
def plan(city: str) -> dict:
    hotels = search(city)
    answer = confirm(hotels[0])
    runs.append(f"after {answer}")
    return {"hotel": hotels[0], "booked": answer == "yes"}


@agentic_function
def trip_details() -> Trip:
    return ask_user("Where and for how long?", schema=Trip)


@pytest.fixture(autouse=True)
def _clear():
    runs.clear()


def test_the_runtime_asker_answers_and_the_call_is_recorded():
    asked: list[Question] = []

    def asker(question: Question) -> str:
        asked.append(question)
        return "yes"

    with Session() as session, Runtime(ScriptedModel([]), ask=asker):
        assert plan("Oslo") == {"hotel": "Hotel Oslo", "booked": True}
    (node,) = session.dag.find(name="ask_user")
    assert node.status == "completed" and node.output == "yes"
    assert node.input == {"question": "Book Hotel Oslo?", "choices": ["yes", "no"], "schema": None}
    assert asked[0].text == str(asked[0]) == "Book Hotel Oslo?"
    assert asked[0].choices == ["yes", "no"] and asked[0].id == node.id


def test_an_asker_answer_outside_the_choices_is_a_usage_error():
    expected = r"'maybe' is not an answer .* one of \"yes\", \"no\""
    with (
        Session(),
        Runtime(ScriptedModel([]), ask=lambda q: "maybe"),
        pytest.raises(UsageError, match=expected),
    ):
        plan("Oslo")


def test_no_asker_suspends_with_the_stack_waiting(tmp_path):
    with pytest.raises(RunWaiting) as caught, Session(tmp_path / "s.db") as session:
        plan("Oslo")
    assert isinstance(caught.value, RunStopped)
    (question,) = session.pending()
    assert caught.value.question == question
    assert question.text == "Book Hotel Oslo?" and question.choices == ["yes", "no"]
    statuses = {n.name: n.status for n in session.dag.nodes}
    assert statuses == {
        "plan": "waiting",
        "search": "completed",
        "confirm": "waiting",
        "ask_user": "waiting",
    }
    assert session.dag.find(name="plan")[0].meta["waiting_on"] == question.id
    reopened = Session.open(tmp_path / "s.db", session.id)
    assert reopened.pending() == [question]
    reopened.close()


def test_an_asker_returning_none_suspends_too():
    with pytest.raises(RunWaiting), Session(), Runtime(ScriptedModel([]), ask=lambda q: None):
        plan("Oslo")


def test_answer_then_resume_runs_nothing_finished_twice(tmp_path):
    store = tmp_path / "s.db"
    with pytest.raises(RunWaiting), Session(store) as session:
        plan("Oslo")
    assert runs == ["search Oslo"]
    (question,) = session.pending()

    answering = Session.open(store, session.id)
    assert answering.answer(question.id, "yes") == question
    assert answering.answer(question.id, "yes") == question  # idempotent
    assert answering.pending() == []
    answering.close()

    with Session.open(store, session.id, resume=True) as resumed:
        assert plan("Oslo") == {"hotel": "Hotel Oslo", "booked": True}
    assert runs == ["search Oslo", "after yes"]
    nodes = resumed.dag.nodes
    assert [n.status for n in nodes] == ["completed"] * 4
    assert len(nodes) == 4  # the waiting calls went on in place, no new nodes
    assert resumed.pending() == []


def test_a_wrong_answer_is_a_usage_error_naming_what_is_expected(tmp_path):
    with pytest.raises(RunWaiting), Session(tmp_path / "s.db") as session:
        plan("Oslo")
    (question,) = session.pending()
    with pytest.raises(UsageError, match=r"expects one of \"yes\", \"no\""):
        session.answer(question.id, "perhaps")
    with pytest.raises(UsageError, match="expects one of"):
        session.answer(question.id, True)
    with pytest.raises(UsageError, match="no question 'nope'"):
        session.answer("nope", "yes")
    session.answer(question.id, "no")
    with pytest.raises(UsageError, match="answered already"):
        session.answer(question.id, "yes")
    assert session.pending() == []


def test_a_schema_answer_comes_back_as_the_model(tmp_path):
    store = tmp_path / "s.db"
    with pytest.raises(RunWaiting), Session(store) as session:
        trip_details()
    (question,) = session.pending()
    assert question.schema is not None and question.schema["title"] == "Trip"
    with pytest.raises(UsageError, match="nights"):
        session.answer(question.id, {"city": "Oslo"})
    with pytest.raises(UsageError, match="expects a JSON Trip"):
        session.answer(question.id, '{"city": "Oslo", "nights": "two"}')
    session.answer(question.id, '{"city": "Oslo", "nights": 2}')  # text, as from the CLI
    with Session.open(store, session.id, resume=True):
        assert trip_details() == Trip(city="Oslo", nights=2)


def test_free_text_questions_take_text_only():
    with pytest.raises(RunWaiting), Session() as session:
        ask_user("Anything to add?")
    (question,) = session.pending()
    with pytest.raises(UsageError, match="expects text"):
        session.answer(question.id, 3)
    session.answer(question.id, "no")


def test_bad_arguments_are_usage_errors():
    with pytest.raises(UsageError, match="question"):
        ask_user("")
    with pytest.raises(UsageError, match="not both"):
        ask_user("x", choices=["a"], schema=Trip)
    with pytest.raises(UsageError, match="non-empty list"):
        ask_user("x", choices="ab")
    with pytest.raises(UsageError, match="pydantic model"):
        ask_user("x", schema=dict)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="ask="):
        Runtime(ScriptedModel([]), ask="yes")  # type: ignore[arg-type]


def test_console_ask_reads_a_choice_by_number_or_text_and_explains_a_wrong_one():
    lines = iter(["3", "maybe", "2"])
    out = io.StringIO()
    asker = ConsoleAsk(read=lambda prompt: next(lines), write=out)
    with Session(), Runtime(ScriptedModel([]), ask=asker):
        assert plan("Oslo")["booked"] is False
    shown = out.getvalue()
    assert "Book Hotel Oslo?" in shown and "  1. yes" in shown and "  2. no" in shown
    assert "'3' is not an answer" in shown and "'maybe' is not an answer" in shown


def test_console_ask_reads_json_for_a_schema_and_an_empty_line_suspends():
    answers = iter(['{"city": "Rome", "nights": 3}'])
    asker = ConsoleAsk(read=lambda prompt: next(answers), write=io.StringIO())
    with Session(), Runtime(ScriptedModel([]), ask=asker):
        assert trip_details() == Trip(city="Rome", nights=3)
    empty = ConsoleAsk(read=lambda p: "", write=io.StringIO())
    with pytest.raises(RunWaiting), Session(), Runtime(ScriptedModel([]), ask=empty):
        trip_details()

    def closed(prompt: str) -> str:
        raise EOFError

    ended = ConsoleAsk(read=closed, write=io.StringIO())
    with pytest.raises(RunWaiting), Session(), Runtime(ScriptedModel([]), ask=ended):
        trip_details()


# -- tool approval ------------------------------------------------------------------------
booked: list[str] = []


@agentic_function
def book(hotel: str, nights: int = 1) -> str:
    """Book a hotel room."""
    booked.append(hotel)
    return f"booked {hotel} for {nights} nights"


@agentic_function
def assistant(request: str) -> str:
    return llm(request, tools=[needs_approval(book)])


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            {"tool_calls": [{"name": "book", "arguments": {"hotel": "Ritz", "nights": 2}}]},
            "Done.",
        ]
    )


def test_needs_approval_keeps_the_spec_and_runs_on_yes():
    booked.clear()
    approved = needs_approval(book)
    assert approved.spec == book.spec
    questions: list[str] = []

    def asker(question: Question) -> str:
        questions.append(question.text)
        return "yes"

    with Session() as session, Runtime(_script(), ask=asker):
        assert assistant("Book the Ritz") == "Done."
    assert booked == ["Ritz"]
    assert questions == ["Allow book(hotel='Ritz', nights=2)?"]
    (tool,) = session.dag.find(name="book")
    assert tool.output == "booked Ritz for 2 nights" and tool.meta.get("tool_call_id")
    assert [c.name for c in session.dag.children(tool.id)] == ["ask_user"]


def test_a_declined_call_goes_back_to_the_model_and_does_not_run():
    booked.clear()
    seen: list[str] = []

    def reply(request):
        if len(seen) == 0:
            seen.append("asked")
            return {"tool_calls": [{"name": "book", "arguments": {"hotel": "Ritz"}}]}
        seen.append(str(request.messages[-1]["content"]))
        return "Not booked."

    with Session() as session, Runtime(ScriptedModel(reply), ask=lambda q: "no"):
        assert assistant("Book the Ritz") == "Not booked."
    assert booked == []
    (tool,) = session.dag.find(name="book")
    assert tool.meta["declined"] is True
    assert "declined" in seen[1]


def test_approval_suspends_and_the_resumed_run_books_once_without_asking_the_model_again(
    tmp_path,
):
    booked.clear()
    store = tmp_path / "s.db"
    model = _script()
    with pytest.raises(RunWaiting), Session(store) as session, Runtime(model):
        assistant("Book the Ritz")
    assert booked == []
    (question,) = session.pending()
    session.answer(question.id, "yes")
    model = ScriptedModel(["Done."])  # only the turn after the tool is new
    with Session.open(store, session.id, resume=True) as resumed, Runtime(model):
        assert assistant("Book the Ritz") == "Done."
    assert booked == ["Ritz"]
    assert [n.status for n in resumed.dag.nodes] == ["completed"] * len(resumed.dag)
    assert len(resumed.dag.find(kind="llm")) == 2


@agentic_function
async def async_book(hotel: str) -> str:
    """Book a hotel room (async)."""
    booked.append(hotel)
    return f"booked {hotel}"


@agentic_function
async def async_assistant(request: str) -> str:
    return await allm(request, tools=[needs_approval(async_book), needs_approval(book)])


def test_under_allm_parallel_approvals_suspend_and_resume_each_call_once(tmp_path):
    booked.clear()
    store = tmp_path / "s.db"
    calls = {
        "tool_calls": [
            {"name": "async_book", "arguments": {"hotel": "Ritz"}},
            {"name": "book", "arguments": {"hotel": "Savoy"}},
        ]
    }
    with pytest.raises(RunWaiting), Session(store) as session, Runtime(ScriptedModel([calls])):
        asyncio.run(async_assistant("Book both"))
    assert booked == []
    waiting = session.pending()
    assert sorted(q.text for q in waiting) == [
        "Allow async_book(hotel='Ritz')?",
        "Allow book(hotel='Savoy')?",
    ]
    for question in waiting:
        session.answer(question.id, "yes")
    with Session.open(store, session.id, resume=True), Runtime(ScriptedModel(["Both booked."])):
        assert asyncio.run(async_assistant("Book both")) == "Both booked."
    assert sorted(booked) == ["Ritz", "Savoy"]


def test_a_streamed_tool_loop_suspends_at_an_approval_and_resumes(tmp_path):
    booked.clear()
    store = tmp_path / "s.db"

    @agentic_function
    def streaming_assistant(request: str) -> str:
        return "".join(llm(request, tools=[needs_approval(book)], stream=True))

    with pytest.raises(RunWaiting), Session(store) as session, Runtime(_script()):
        streaming_assistant("Book the Ritz")
    (question,) = session.pending()
    session.answer(question.id, "yes")
    with Session.open(store, session.id, resume=True), Runtime(ScriptedModel(["Done."])):
        assert streaming_assistant("Book the Ritz") == "Done."
    assert booked == ["Ritz"]


def test_a_replay_answers_its_questions_as_recorded():
    with Session() as recorded, Runtime(ScriptedModel([]), ask=lambda q: "no"):
        assert plan("Oslo")["booked"] is False
    with Session() as replay, Runtime(ReplayModel(recorded)):  # no asker: it never waits
        assert plan("Oslo")["booked"] is False
    assert replay.dag.find(name="ask_user")[0].output == "no"


def test_resuming_before_the_answer_waits_again_on_the_same_question(tmp_path):
    store = tmp_path / "s.db"
    with pytest.raises(RunWaiting), Session(store) as session:
        plan("Oslo")
    (question,) = session.pending()
    with pytest.raises(RunWaiting) as again, Session.open(store, session.id, resume=True) as s:
        plan("Oslo")
    assert again.value.question == question and s.pending() == [question]
    assert runs == ["search Oslo"] and len(s.dag) == 4
    s.answer(question.id, "yes")
    with Session.open(store, session.id, resume=True):
        assert plan("Oslo")["booked"] is True
    assert runs == ["search Oslo", "after yes"]


def test_an_async_asker_is_a_usage_error_saying_what_ask_takes():
    async def asker(question):
        return "yes"

    with (
        Session(),
        Runtime(ScriptedModel([]), ask=asker),
        pytest.raises(UsageError, match="returned an awaitable"),
    ):
        plan("Oslo")


def test_the_log_and_the_trajectory_call_a_suspended_run_waiting(caplog, tmp_path):
    import json
    import logging

    from openprogram import LoggingCallback, TrajectorySaver

    caplog.set_level(logging.INFO, "openprogram.run")
    callbacks = [LoggingCallback(), TrajectorySaver(tmp_path / "runs")]
    with pytest.raises(RunWaiting), Session(), Runtime(ScriptedModel([]), callbacks=callbacks):
        plan("Oslo")
    ends = [r.getMessage() for r in caplog.records if "run end" in r.getMessage()]
    assert len(ends) == 1 and ends[0].startswith("run end plan #1 waiting (waiting for an answer")
    (metadata,) = (tmp_path / "runs").glob("*/metadata.json")
    assert json.loads(metadata.read_text())["status"] == "waiting"


# -- what a person is shown -----------------------------------------------------------------
@agentic_function
def write(content: str, path: str = "notes.txt") -> str:
    """Write a file."""
    return f"wrote {len(content)} characters to {path}"


def test_an_approval_shows_the_argument_after_a_long_one():
    asked: list[str] = []

    def no(question: Question) -> str:
        asked.append(question.text)
        return "no"

    script = ScriptedModel(
        [
            {"tool_calls": [{"name": "write", "arguments": {"content": "x" * 600,
                                                            "path": "/root/.ssh/id_rsa"}}]},
            "ok",
        ]
    )  # fmt: skip

    @agentic_function
    def assistant_writing(request: str) -> str:
        return llm(request, tools=[needs_approval(write)])

    with Session(), Runtime(script, ask=no):
        assistant_writing("write it")
    (text,) = asked
    assert text.endswith(", path='/root/.ssh/id_rsa')?")
    assert "characters elided]…" in text and "(sha256 " in text


def test_console_ask_shows_a_question_with_its_escapes_escaped():
    out = io.StringIO()
    asker = ConsoleAsk(read=lambda prompt: "1", write=out)
    question = Question(
        id="q", text="Allow it?\x1b]0;owned\x07\x1b[2J\u202e", choices=["yes\x1b[8m", "no"]
    )
    assert asker(question) == "yes\x1b[8m"
    shown = out.getvalue()
    assert "\x1b" not in shown and "\x07" not in shown and "\u202e" not in shown
    assert "Allow it?\\x1b]0;owned\\x07\\x1b[2J\\u202e" in shown and "1. yes\\x1b[8m" in shown
