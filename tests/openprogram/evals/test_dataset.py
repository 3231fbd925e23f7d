"""Datasets: cases, files in three formats, and cases made from recorded sessions."""

from __future__ import annotations

import json
import os

import pytest
from pydantic import BaseModel

from openprogram import Runtime, ScriptedModel, Session, UsageError, agentic_function
from openprogram.evals import Case, Dataset, equals
from tests.openprogram.evals.agents import reply, write


def test_cases_without_names_are_named_by_place_and_names_must_be_unique() -> None:
    dataset = Dataset(cases=[Case(inputs={"product": "tea"}), Case(inputs="x", name="mine")])
    assert [c.name for c in dataset.cases] == ["case-1", "mine"]
    assert dataset["mine"].arguments() == (("x",), {})
    assert dataset["case-1"].arguments() == ((), {"product": "tea"})
    with pytest.raises(UsageError, match="two cases are named 'a'"):
        Dataset(cases=[Case(name="a"), Case(name="a")])


@pytest.mark.parametrize("suffix", [".yaml", ".json", ".jsonl"])
def test_a_dataset_saved_loads_back_equal(tmp_path, suffix: str) -> None:
    dataset = Dataset(
        name="d" if suffix != ".jsonl" else "cases",
        cases=[
            Case(inputs={"product": "café ☕"}, expected="Smart café ☕.", metadata={"tag": 1}),
            Case(inputs=[1, 2], expected=None, name="list"),
        ],
    )
    path = dataset.save(tmp_path / f"cases{suffix}")
    assert Dataset.load(path) == dataset


def test_bad_dataset_files_are_usage_errors_naming_the_file_and_line(tmp_path) -> None:
    with pytest.raises(UsageError, match="no dataset file"):
        Dataset.load(tmp_path / "missing.json")
    with pytest.raises(UsageError, match=r"name it \.yaml"):
        Dataset.load(tmp_path / "cases.txt")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"inputs": 1}\n{oops\n')
    with pytest.raises(UsageError, match=r"broken.jsonl:2: not JSON"):
        Dataset.load(broken)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"cases": [{"inputs": 1, "expect": 2}]}))
    with pytest.raises(UsageError, match=r"cases.0.expect: Extra inputs"):
        Dataset.load(wrong)


def test_hostile_dataset_files_are_refused_with_a_bounded_message(tmp_path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)  # reading it would block for ever
    with pytest.raises(UsageError, match="is not a regular file"):
        Dataset.load(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(UsageError, match=r"deep\.json: nests too deeply"):
        Dataset.load(deep)
    deep_line = tmp_path / "deep.jsonl"
    deep_line.write_text('{"inputs": 1}\n' + "[" * 200_000 + "]" * 200_000 + "\n")
    with pytest.raises(UsageError, match=r"deep.jsonl:2: nests too deeply"):
        Dataset.load(deep_line)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"name: caf\xe9\n")
    with pytest.raises(UsageError, match="not UTF-8") as caught:
        Dataset.load(latin)
    assert len(str(caught.value)) < 400


def test_from_sessions_makes_cases_of_recorded_calls_with_their_outputs(tmp_path) -> None:
    store = tmp_path / "runs.db"
    for product in ("coffee", "tea", "coffee"):
        with Session(store), Runtime(ScriptedModel(reply)):
            write(product)
    dataset = Dataset.from_sessions(store, "write")
    assert [c.inputs for c in dataset.cases] == [
        {"product": "coffee", "card": ""},
        {"product": "tea", "card": ""},
    ]  # the second coffee call is the same input
    assert [c.expected for c in dataset.cases] == ["Smart coffee.", "rejected"]
    assert set(dataset.cases[0].metadata) == {"session", "node", "call"}
    assert [c.name for c in dataset.cases] == ["coffee", "tea"]  # named by input, not session
    assert dataset.cases[0].metadata["call"] == dataset.cases[0].metadata["session"]
    nested = Dataset.from_sessions(store, "review", where=lambda n: "tea" in n.input["draft"])
    assert [c.inputs for c in nested.cases] == [{"draft": "Smart tea."}]
    with pytest.raises(UsageError, match="no completed call of 'wrtie'"):
        Dataset.from_sessions(store, "wrtie")


class Trip(BaseModel):
    city: str
    nights: int


@agentic_function
def book(trip: Trip, when: str) -> str:
    return f"{trip.city} x{trip.nights} on {when}"


@agentic_function
def plan(city: str) -> Trip:
    return Trip(city=city, nights=3)


def test_recorded_typed_arguments_are_given_back_as_their_types(tmp_path) -> None:
    with Session(tmp_path / "runs.db"):
        book(Trip(city="Oslo", nights=2), "may")
    dataset = Dataset.from_sessions(tmp_path / "runs.db", "book")
    assert dataset.cases[0].inputs["trip"]["$fields"] == {"city": "Oslo", "nights": 2}
    report = dataset.evaluate(book, [equals])
    assert report.errors == [] and report.case_values("equals") == {dataset.cases[0].name: 1.0}


def test_a_recorded_typed_output_equals_the_live_one(tmp_path) -> None:
    with Session(tmp_path / "runs.db"):
        plan("Oslo")
    dataset = Dataset.from_sessions(tmp_path / "runs.db", "plan")
    assert dataset.cases[0].expected["$fields"] == {"city": "Oslo", "nights": 3}
    assert dataset.evaluate(plan, [equals]).summary()["equals"].mean == 1.0
    typed = Dataset(cases=[Case(inputs={"city": "Oslo"}, expected=Trip(city="Oslo", nights=3))])
    assert typed.evaluate(plan, [equals]).summary()["equals"].mean == 1.0
