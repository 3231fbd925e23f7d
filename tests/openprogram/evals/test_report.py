"""EvalReport: tables, files, the replay tiers (rescore, ReplayModel) and its HTML."""

from __future__ import annotations

import pytest

from openprogram import ScriptedModel, Session, UsageError
from openprogram.errors import OpenProgramError
from openprogram.evals import Case, Dataset, EvalReport, contains, equals
from openprogram.store import open_store
from tests.openprogram.evals.agents import reply, write

DATASET = Dataset(
    name="taglines",
    cases=[
        Case(inputs={"product": "coffee"}, expected="Smart coffee.", name="c"),
        Case(inputs={"product": "tea"}, expected="Smart tea.", name="t"),
    ],
)


def private(case, output, run) -> bool:
    return not run.saw("review", contains="tagline")


@pytest.mark.parametrize("stored", [False, True])
def test_a_saved_report_rescores_without_calling_anything(tmp_path, stored: bool) -> None:
    store = tmp_path / "e.db" if stored else None
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=store)
    path = report.save(tmp_path / "report.json")
    loaded = EvalReport.load(path)
    assert loaded.runs == report.runs and loaded.table() == report.table()
    # no model at all: a call would raise ConfigError and fail the run
    again = loaded.rescore([contains("coffee"), private])
    assert again.keys == ["contains('coffee')", "private"]
    assert again.case_values("contains('coffee')") == {"c": 1.0, "t": 0.0}
    assert again.case_values("private") == {"c": 1.0, "t": 1.0}
    assert [r.session for r in again.runs] == [r.session for r in report.runs]


def test_replay_answers_from_the_recording_and_catches_prompt_drift() -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply))
    same = report.replay(write, [equals])
    assert not same.errors and same.case_values("equals") == report.case_values("equals")

    drifted = report.replay(_drifted_write(), [equals])
    assert len(drifted.errors) == 2
    assert drifted.errors[0].error.startswith(
        "ReplayMismatch: the rendered messages at write #1 / review #1"
    )


def test_load_refuses_what_is_not_a_report(tmp_path) -> None:
    with pytest.raises(UsageError, match="no report file"):
        EvalReport.load(tmp_path / "none.json")
    (tmp_path / "x.json").write_text('{"format": 1, "id": 3}')
    with pytest.raises(UsageError, match="is not a saved EvalReport"):
        EvalReport.load(tmp_path / "x.json")


def test_check_fails_below_the_threshold_with_the_worst_cases() -> None:
    report = DATASET.evaluate(write, [equals, contains("Smart")], model=ScriptedModel(reply))
    assert report.check(0.5) is report
    with pytest.raises(AssertionError) as caught:
        report.check({"equals": 0.9})
    message = str(caught.value)
    assert "equals: mean 0.500 < 0.9" in message
    assert "worst cases on equals:\n  t: 0.00  expected 'Smart tea.', got 'rejected'" in message
    assert report.failures({"equal": 1}) == [
        "equal: no such score; the report has ['equals', \"contains('Smart')\"]"
    ]


def test_html_links_every_run_to_its_session_report(tmp_path) -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), repeat=2)
    page = report.write_html(tmp_path / "eval.html")
    text = page.read_text()
    for case in ("c-0", "c-1", "t-0", "t-1"):
        assert f'href="eval.runs/{case}.html"' in text
        assert (tmp_path / "eval.runs" / f"{case}.html").read_text().count("review") >= 1
    assert "equals" in report._repr_html_()


def _drifted_write():
    from openprogram import agentic_function, llm

    @agentic_function(render_range={"callers": 0})
    def review(draft: str) -> str:
        return llm(f"Approve or reject, strictly: {draft}")

    @agentic_function
    def write(product: str, card: str = "") -> str:  # the same name: only the prompt drifted
        draft = llm(f"Write a tagline for {product}. Customer card: {card}")
        return draft if review(draft) == "approve" else "rejected"

    return write


def test_one_nested_function_is_evaluated_again_on_its_recorded_calls() -> None:
    from openprogram import agentic_function, llm

    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), repeat=2)
    reviews = report.calls("review")
    assert [c.name for c in reviews.cases] == ["c/0", "c/1", "t/0", "t/1"]
    assert reviews.cases[0].inputs == {"draft": "Smart coffee."}
    assert [c.expected for c in reviews.cases] == ["approve", "approve", "reject", "reject"]

    @agentic_function(render_range={"callers": 0})
    def review(draft: str) -> str:  # a new version: approves everything
        return llm(f"Approve: {draft}")

    again = reviews.evaluate(review, [equals], model=ScriptedModel(lambda r: "approve"))
    assert again.case_values("equals") == {"c/0": 1.0, "c/1": 1.0, "t/0": 0.0, "t/1": 0.0}
    with pytest.raises(UsageError, match="no completed call of 'revue'"):
        report.calls("revue")


def test_a_key_in_an_output_never_reaches_the_saved_report(tmp_path, monkeypatch) -> None:
    from openprogram import agentic_function

    key = "sk-evals-0123456789abcdef"
    monkeypatch.setenv("OPENAI_API_KEY", key)

    @agentic_function
    def careless(product: str) -> str:
        return f"{product} {key}"

    report = Dataset(cases=[Case(inputs={"product": "tea"})]).evaluate(careless, [equals])
    assert report.runs[0].output == "tea ***"
    text = report.save(tmp_path / "r.json").read_text()
    assert key not in text and "tea ***" in text
    assert key not in report.write_html(tmp_path / "r.html").read_text()


def test_rerun_runs_a_new_version_of_a_nested_function_in_its_recorded_context() -> None:
    from openprogram import agentic_function, llm

    dataset = Dataset(cases=[Case(inputs={"product": "coffee", "card": "4111 1111"}, name="c")])
    report = dataset.evaluate(write, [equals], model=ScriptedModel(reply))
    seen: list[str] = []

    def model(request) -> str:
        seen.append(request.history)
        return "approve"

    @agentic_function  # the new version reads its callers' history (callers=None)
    def review(draft: str) -> str:
        return llm(f"Approve or reject: {draft}")

    def card_kept_out(case, output, run) -> bool:
        return not run.saw("review", contains="4111")

    again = report.rerun("review", review, [equals, card_kept_out], model=ScriptedModel(model))
    assert seen == [
        '[write #1] input={"product": "coffee", "card": "4111 1111"}\n'
        "assistant: Smart coffee.\n"
        '[review #1] input={"draft": "Smart coffee."}'
    ]  # write's call and exchange, as they were when the recorded review began
    assert again.case_values("equals") == {"c/0": 1.0}
    assert again.case_values("card_kept_out") == {"c/0": 0.0}  # the new version would leak
    rerun_dag = again.dag(again.runs[0])
    new = rerun_dag.find(name="review", kind="code")[-1]
    assert (
        rerun_dag.node(new.parent).name == "write"
        and rerun_dag.node(new.parent).status == "running"
    )


def test_fork_runs_the_rest_after_a_node_again_and_only_the_rest(tmp_path) -> None:
    from openprogram import agentic_function, llm
    from tests.openprogram.evals.agents import review

    @agentic_function
    def polish(product: str) -> str:
        draft = llm(f"Write a tagline for {product}.")
        return llm(f"Polish: {draft}") if review(draft) == "approve" else "rejected"

    def first(request) -> str:
        if request.function == "review":
            return "approve"
        return "Draft." if "Write" in request.text else "Polished once."

    dataset = Dataset(cases=[Case(inputs={"product": "tea"}, expected="Polished twice.")])
    report = dataset.evaluate(polish, [equals], model=ScriptedModel(first), store=tmp_path / "e.db")
    asked: list[str] = []

    def second(request) -> str:
        asked.append(request.text)
        return "Polished twice."

    forked = report.fork("review#1", polish, [equals], model=ScriptedModel(second))
    assert asked == ["Polish: Draft."]  # the draft and the review came from the record
    assert forked.case_values("equals") == {"case-1": 1.0}
    assert forked.runs[0].session.startswith(f"{report.runs[0].session}-fork-")
    missing = report.fork("summary#1", polish, [equals], model=ScriptedModel(second))
    assert "no code node is named 'summary'" in missing.runs[0].error
    with pytest.raises(UsageError, match="fork needs them in a store"):
        dataset.evaluate(polish, [equals], model=ScriptedModel(first)).fork("review#1", polish)


def test_rescoring_inside_an_agentic_function_keeps_the_judge_apart() -> None:
    from openprogram import Session, agentic_function
    from openprogram.evals import llm_judge

    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply))
    judge_model = ScriptedModel(lambda request: {"passed": True, "reason": "fine"})

    @agentic_function
    def nightly() -> EvalReport:
        return report.rescore([llm_judge("Is it a tagline?", model=judge_model)])

    with Session() as outer:
        again = nightly()
    assert again.case_values("llm_judge") == {"c": 1.0, "t": 1.0}
    assert [n.name for n in outer.dag.nodes] == ["nightly"]  # the judge ran in its own sessions


@pytest.mark.postgres
def test_runs_in_postgresql_are_rescored_and_made_datasets_of(postgres_url: str) -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=postgres_url)
    assert report.store is not None and report.runs[0].session is not None
    report._dags.clear()  # read every run back from the server
    again = report.rescore([contains("Smart")], store=postgres_url)
    assert again.case_values("contains('Smart')") == {"c": 1.0, "t": 0.0}
    sessions = [run.session for run in report.runs]
    reviews = Dataset.from_sessions(postgres_url, "review", sessions=sessions)
    assert sorted(c.expected for c in reviews.cases) == ["approve", "reject"]


def test_a_saved_report_keeps_its_runs_from_prune_until_it_is_released(
    tmp_path, durable_store: str
) -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=durable_store)
    with Session(durable_store, id="other"):
        pass
    ran = {run.session for run in report.runs}
    path = report.save(tmp_path / "report.json")
    store, _ = open_store(durable_store)
    try:
        kept = store.prune(older_than=0)
        assert kept.removed == ["other"]
        assert kept.kept == {id: f"report:{report.id} reads it" for id in ran}
        loaded = EvalReport.load(path)
        assert loaded.reader == f"report:{report.id}"
        assert loaded.dag(loaded.runs[0]).find(name="review")  # the drill-down still works
        reviews = loaded.calls("review", store=durable_store)  # a reader of its own
        assert len(reviews) == 2
        assert loaded.release(store=durable_store) == 2
        assert store.prune(older_than=0).removed == []
        assert reviews.release(durable_store) == 2
        assert loaded.release(store=durable_store) == 0
        assert sorted(store.prune(older_than=0).removed) == sorted(ran)
        with pytest.raises(OpenProgramError):
            EvalReport.load(path).dag(loaded.runs[0], store=durable_store)
    finally:
        store.close()


def test_a_report_whose_store_is_gone_is_saved_all_the_same(tmp_path, caplog) -> None:
    report = DATASET.evaluate(write, [equals], model=ScriptedModel(reply), store=tmp_path / "e.db")
    (tmp_path / "e.db").unlink()
    for extra in ("-wal", "-shm"):
        (tmp_path / f"e.db{extra}").unlink(missing_ok=True)
    path = report.save(tmp_path / "report.json")
    assert EvalReport.load(path).runs == report.runs
    assert "could not be kept from prune" in caplog.text
    assert not (tmp_path / "e.db").exists()  # no new empty store where the old one was
    with pytest.raises(UsageError, match="no session store"):
        report.release()
