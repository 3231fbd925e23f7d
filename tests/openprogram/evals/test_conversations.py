"""Conversation cases (a list of user turns through the agent in one session, scored on
the whole conversation) and the stuck-in-a-loop scorer, no_loop."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from pydantic import ValidationError

from openprogram import ModelRequest, ScriptedModel, UsageError, agentic_function, llm
from openprogram.cli import cli
from openprogram.evals import Case, Dataset, Score, equals, llm_judge, no_loop


@agentic_function
def concierge(message: str) -> str:
    return llm(message)


def remembers(request: ModelRequest) -> str:
    """Answers with what it saw: how many earlier turns, and the city asked for."""
    if request.function == "judge":
        return '{"passed": true, "reason": "it booked what was asked"}'
    seen = "\n".join(str(m["content"]) for m in request.messages)
    earlier = seen.count(" output=")  # the turns before, each a call line with its reply
    city = "Oslo" if "Oslo" in seen else "?"
    return f"turn {earlier + 1}, city {city}"


def test_a_conversation_case_runs_each_turn_in_one_session_and_is_scored_whole() -> None:
    seen: list[object] = []

    def whole(case, output, run) -> Score:
        seen.append(output)
        calls = run.calls("concierge")
        return Score(len(calls) == 3, f"{len(calls)} turns")

    dataset = Dataset(cases=[
        Case(turns=["Hi", "A room in Oslo, please", "Thanks!"],
             expected=["turn 1, city ?", "turn 2, city Oslo", "turn 3, city Oslo"]),
        Case(inputs={"message": "One call"}, expected="turn 1, city ?"),
    ])  # fmt: skip
    report = dataset.evaluate(
        concierge, [equals, whole, llm_judge("Did it book?")], model=ScriptedModel(remembers)
    )
    first, second = report.runs
    assert first.output == ["turn 1, city ?", "turn 2, city Oslo", "turn 3, city Oslo"]
    assert first.score("equals").value == 1.0 and first.score("whole").reason == "3 turns"
    assert second.score("equals").value == 1.0 and second.score("whole").value == 0.0
    assert dataset.cases[0].label == "Hi"
    judged = report.dag(first).find(name="judge", kind="code")[0]
    assert judged.input["inputs"] == ["Hi", "A room in Oslo, please", "Thanks!"]
    assert report.runs[0].score("llm_judge").value == 1.0
    assert '  turns     ["Hi", "A room in Oslo, please", "Thanks!"]' in report.table(cases=True)


def test_a_turn_that_fails_ends_its_conversation_naming_the_turn() -> None:
    @agentic_function
    def fragile(message: str) -> str:
        if message == "boom":
            raise ValueError("cannot parse")
        return "ok"

    report = Dataset(cases=[Case(turns=["a", "boom", "c"])]).evaluate(fragile, [equals])
    assert report.runs[0].error == "turn 2 of 3: ValueError: cannot parse"
    assert report.runs[0].output == ["ok"]
    with pytest.raises(ValidationError, match="inputs \\(one call\\) or turns"):
        Dataset(cases=[Case(inputs="x", turns=["y"])])


def test_conversations_load_from_a_file_and_run_through_the_cli(tmp_path) -> None:
    path = tmp_path / "chats.yaml"
    path.write_text("cases:\n- name: booking\n  turns: [Hi, A room in Oslo]\n"
                    "  expected: ['turn 1, city ?', 'turn 2, city Oslo']\n")  # fmt: skip
    assert Dataset.load(path).cases[0].turns == ["Hi", "A room in Oslo"]
    result = CliRunner().invoke(cli, ["eval", str(path), f"{__name__}:scripted_concierge",
                                      "-s", "equals", "-s", "no_loop", "--cases"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "equals       1.000" in result.output and "✔ no_loop(3)" in result.output


@agentic_function
def scripted_concierge(message: str) -> str:
    from openprogram import Runtime

    with Runtime(ScriptedModel(remembers)):
        return concierge(message)


@agentic_function
def lookup(order: str) -> str:
    return "pending"


@agentic_function
def track(order: str) -> str:
    status = "pending"
    for _ in range(4 if order == "A-1" else 2):  # a stuck agent asks again and again
        status = lookup(order)
    lookup("B-2")
    return status


def test_no_loop_finds_a_function_called_again_and_again_with_one_input() -> None:
    dataset = Dataset(cases=[Case(inputs="A-1", name="stuck"), Case(inputs="A-2", name="fine")])
    report = dataset.evaluate(track, [no_loop(), no_loop(5)])
    stuck, fine = report.runs
    assert stuck.score("no_loop(3)").value == 0.0
    assert stuck.score("no_loop(3)").reason == (
        'lookup was called 4 times with the same input {"order": "A-1"}'
    )
    assert stuck.score("no_loop(5)").value == 1.0
    assert fine.score("no_loop(3)").value == 1.0  # twice is not a loop at times=3
    with pytest.raises(UsageError, match="times is an integer >= 2"):
        no_loop(1)
