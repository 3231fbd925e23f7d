"""What an eval leaves reading the store: a dataset of a report's calls, a rescored copy.

Each is a reader of its own (store/_readers.py): prune keeps what it reads, and letting
one go never lets go of what another still reads. On SQLite and PostgreSQL.
"""

from __future__ import annotations

from openprogram import ScriptedModel
from openprogram.evals import EvalReport, contains, equals
from openprogram.store import open_store
from tests.openprogram.evals.agents import reply, write
from tests.openprogram.evals.test_report import DATASET


def _prune(store: str) -> tuple[list[str], dict[str, str]]:
    opened, _ = open_store(store)
    assert opened is not None
    try:
        done = opened.prune(older_than=0)
        return sorted(done.removed), done.kept
    finally:
        opened.close()


def test_a_dataset_of_a_reports_calls_keeps_their_sessions_until_it_is_released(
    durable_store: str,
) -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=durable_store)
    ran = {run.session for run in report.runs}
    reviews = report.calls("review")  # the report itself is never saved: no report reader
    removed, kept = _prune(durable_store)
    assert removed == []
    assert reviews.name == f"{report.name}: review (report {report.id})"
    assert kept == {id: f"dataset:{reviews.name} reads it" for id in ran}
    assert reviews.release(durable_store) == 2
    assert _prune(durable_store)[0] == sorted(ran)


def test_two_reports_datasets_of_one_function_are_two_readers(durable_store: str) -> None:
    first = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=durable_store)
    second = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=durable_store)
    assert first.name == second.name  # the same eval, run twice
    kept_by_first = first.calls("review")
    second.calls("review")
    assert kept_by_first.release(durable_store) == 2
    removed, kept = _prune(durable_store)
    assert removed == sorted(run.session for run in first.runs)
    assert set(kept) == {run.session for run in second.runs}


def test_a_rescored_copy_is_a_reader_apart_from_its_report(tmp_path, durable_store: str) -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=durable_store)
    ran = sorted(run.session for run in report.runs)
    report.save(tmp_path / "v1.json")
    again = EvalReport.load(tmp_path / "v1.json").rescore([contains("Smart")])
    assert again.id != report.id and again.reader != report.reader
    again.save(tmp_path / "v1-rescored.json")
    assert report.release() == 2  # the original goes: the rescored copy still reads them
    removed, kept = _prune(durable_store)
    assert removed == []
    assert set(kept.values()) == {f"{again.reader} reads it"}
    rescored = EvalReport.load(tmp_path / "v1-rescored.json")
    assert rescored.dag(rescored.runs[0]).find(name="review")  # still readable
    assert rescored.release() == 2
    assert _prune(durable_store)[0] == ran
