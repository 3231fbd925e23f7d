"""evaluate(..., engine="ray"): each run a Ray task on a private local Ray cluster,
recorded in a shared SQLite store, resumed by evaluating again with the same id."""

from __future__ import annotations

import os

import pytest

from openprogram import ScriptedModel
from openprogram.errors import ConfigError, UsageError
from openprogram.evals import Case, Dataset
from openprogram.store.open import open_store
from tests.openprogram.evals import scripted

ray = pytest.importorskip("ray", reason='needs pip install "openprogram[ray]"')

DATASET = Dataset(
    name="taglines",
    cases=[Case(inputs={"product": p}, expected=f"Smart {p}.", name=p) for p in ("coffee", "tea")],
)


def _sessions(store: str) -> set[str]:
    opened, _ = open_store(store)
    assert opened is not None
    try:
        return {info.id for info in opened.list_sessions()}
    finally:
        opened.close()


@pytest.mark.slow
def test_ray_runs_each_case_as_a_task_into_the_shared_store_and_resumes(tmp_path) -> None:
    store = str(tmp_path / "runs.db")
    report = DATASET.evaluate(
        scripted.write_where, [scripted.tagline], engine="ray", concurrency=2, store=store,
        id="r1", repeat=2, runtime_env={"env_vars": {"OPENPROGRAM_EVAL_MARK": "r1"}},
    )  # fmt: skip
    assert not report.errors, report.table()
    assert {run.output["mark"] for run in report.runs} == {"r1"}  # the workers' environment
    assert report.case_values("tagline") == {"coffee": 1.0, "tea": 0.0}
    assert all(run.output["pid"] != os.getpid() for run in report.runs)  # Ray workers ran them
    recorded = {f"eval-r1-{n:04d}-{k}" for n in range(2) for k in range(2)}
    assert _sessions(store) == recorded
    assert [r.session for r in report.runs] == sorted(recorded)
    page = report.write_html(tmp_path / "r1.html")  # each run's session one click away
    assert (tmp_path / "r1.runs" / "tea-1.html").is_file() and "r1.runs/tea-1.html" in (
        page.read_text(encoding="utf-8")
    )

    again = DATASET.evaluate(
        scripted.write_where, [scripted.tagline], engine="ray", store=store, id="r1", repeat=2
    )  # the same id and store: every run's session is reopened and resumed, none added
    assert not again.errors, again.table()
    assert _sessions(store) == recorded
    assert [r.output for r in again.runs] == [r.output for r in report.runs]


def test_ray_needs_a_store_its_workers_open_and_a_model_it_can_send(tmp_path) -> None:
    with pytest.raises(UsageError, match="engine='ray' records every run in a store"):
        DATASET.evaluate(scripted.write, engine="ray")
    with pytest.raises(ConfigError, match="cannot share an SQLite file"):
        DATASET.evaluate(
            scripted.write, engine="ray", store=tmp_path / "s.db", address="10.0.0.5:6379"
        )
    with pytest.raises(UsageError, match="sends the model to its workers"):
        DATASET.evaluate(
            scripted.write, engine="ray", store=tmp_path / "s.db", model=ScriptedModel(["hi"])
        )
    with pytest.raises(UsageError, match="address='h:1' is for engine='ray'"):
        DATASET.evaluate(scripted.write, address="h:1")
    with pytest.raises(UsageError, match="is a dict for engine='ray'"):
        DATASET.evaluate(scripted.write, runtime_env={"working_dir": "."})
    with pytest.raises(UsageError, match="is a dict for engine='ray'"):
        DATASET.evaluate(scripted.write, engine="ray", store=tmp_path / "s.db", runtime_env=".")
    assert not ray.is_initialized()
