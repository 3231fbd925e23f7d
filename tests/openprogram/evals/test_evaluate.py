"""Dataset.evaluate: a recorded session per run, scorers of every shape, and every
failure a newcomer meets recorded in the report instead of ending the eval."""

from __future__ import annotations

import pytest

from openprogram import (
    ModelAuthError,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    llm,
)
from openprogram.evals import (
    Case,
    Dataset,
    Score,
    contains,
    equals,
    llm_judge,
    matches_schema,
    max_cost,
    max_latency,
)
from tests.openprogram.evals.agents import leaky_write, reply, write

DATASET = Dataset(
    name="taglines",
    cases=[
        Case(inputs={"product": "coffee", "card": "4111 1111"}, expected="Smart coffee.", name="c"),
        Case(inputs={"product": "tea", "card": "4111 1111"}, expected="Smart tea.", name="t"),
    ],
)


def test_each_run_is_its_own_recorded_session_in_the_store(tmp_path) -> None:
    store = tmp_path / "evals.db"
    report = DATASET.evaluate(
        write, [equals, contains("Smart")], model=ScriptedModel(reply), store=store, repeat=2
    )
    assert [(r.case, r.repeat) for r in report.runs] == [("c", 0), ("c", 1), ("t", 0), ("t", 1)]
    sessions = {r.session for r in report.runs}
    assert len(sessions) == 4 and all(s.startswith(f"eval-{report.id}-") for s in sessions)
    reopened = Session.open(store, report.runs[0].session)
    try:
        assert [n.name for n in reopened.dag.nodes if n.kind == "code"] == ["write", "review"]
    finally:
        reopened.close()
    summary = report.summary()
    assert summary["equals"].mean == 0.5 and summary["equals"].n == 2
    assert summary["contains('Smart')"].mean == 0.5  # "rejected" for tea
    assert report.runs[2].score("equals").reason == "expected 'Smart tea.', got 'rejected'"


def test_concurrent_runs_give_the_same_report_as_sequential_ones() -> None:
    cases = [
        Case(inputs={"product": p}, expected="Smart coffee.") for p in ["coffee"] * 3 + ["x"] * 3
    ]
    dataset = Dataset(cases=cases)
    one = dataset.evaluate(write, [equals], model=ScriptedModel(reply))
    four = dataset.evaluate(write, [equals], model=ScriptedModel(reply), concurrency=4)
    assert [r.scores for r in one.runs] == [r.scores for r in four.runs]
    assert one.summary()["equals"].mean == 0.5


def test_a_dag_scorer_sees_what_a_sub_call_saw() -> None:
    def card_kept_from_review(case, output, run) -> Score:
        leaked = run.saw("review", contains="4111")
        return Score(not leaked, "the review saw the card number" if leaked else None)

    safe = DATASET.evaluate(write, [card_kept_from_review], model=ScriptedModel(reply))
    leaky = DATASET.evaluate(leaky_write, [card_kept_from_review], model=ScriptedModel(reply))
    assert safe.summary()["card_kept_from_review"].mean == 1.0
    assert leaky.summary()["card_kept_from_review"].mean == 0.0
    assert leaky.runs[0].scores[0].reason == "the review saw the card number"


def test_per_function_scorers_score_each_nested_call_under_its_name() -> None:
    def approved(case, output) -> bool:
        return output == "approve"

    report = DATASET.evaluate(
        write, {"write": [equals], "review": [approved], "summarise": [approved]},
        model=ScriptedModel(reply),
    )  # fmt: skip
    assert report.keys == ["equals", "review/approved", "summarise/approved"]
    assert report.case_values("review/approved") == {"c": 1.0, "t": 0.0}
    missing = report.runs[0].score("summarise/approved")
    assert missing.value is None and missing.reason == "summarise was not called"


def test_tool_calls_are_seen_with_their_arguments() -> None:
    @agentic_function
    def add(a: int, b: int) -> int:
        return a + b

    @agentic_function
    def sums(question: str) -> str:
        return llm(question, tools=[add])

    def used_add(case, output, run) -> bool:
        return [(t.name, t.arguments, t.output) for t in run.tool_calls()] == [
            ("add", {"a": 2, "b": 3}, 5)
        ]

    script = ScriptedModel([{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, "5"])
    report = Dataset(cases=[Case(inputs={"question": "2+3?"}, expected="5")]).evaluate(
        sums, [equals, used_add], model=script
    )
    assert report.case_values("used_add") == {"case-1": 1.0}
    assert report.case_values("equals") == {"case-1": 1.0}


def test_builtin_scorers_give_reasons() -> None:
    from pydantic import BaseModel

    class Tagline(BaseModel):
        text: str

    @agentic_function
    def structured(product: str) -> dict:
        return {"text": llm(product)} if product != "bad" else {"words": 1}

    dataset = Dataset(cases=[Case(inputs={"product": "ok"}), Case(inputs={"product": "bad"})])
    report = dataset.evaluate(
        structured,
        [matches_schema(Tagline), matches_schema({"type": "object", "required": ["text"]}),
         max_cost(0.0), max_latency(60)],
        model=ScriptedModel(["fine"]),
    )  # fmt: skip
    bad = report.runs[1]
    assert bad.score("matches_schema(Tagline)").reason == "text: Field required"
    assert "'text' is a required property" in bad.score("matches_schema(schema)").reason
    assert report.case_values("max_cost(0)") == {"case-1": 1.0, "case-2": 1.0}
    assert report.runs[0].score("max_latency(60)").reason.startswith("took ")


def test_failures_are_recorded_and_the_eval_goes_on() -> None:
    def broken(case, output):
        raise KeyError("no such field")

    def wrong_type(case, output):
        return "yes"

    dataset = Dataset(
        cases=[
            Case(inputs={"product": "coffee"}, expected="Smart coffee.", name="ok"),
            Case(inputs={"prodcut": "tea"}, name="typo"),
            Case(inputs={"product": "boom"}, name="raises"),
        ]
    )

    def answer(request):
        if "boom" in request.text:
            raise ModelAuthError("bad key")
        return reply(request)

    report = dataset.evaluate(write, [equals, broken, wrong_type], model=ScriptedModel(answer))
    ok, typo, raises = report.runs
    assert ok.error is None and ok.score("equals").value == 1.0
    assert ok.score("broken").error == "KeyError: 'no such field'"
    assert "returned 'yes'; a scorer returns a bool" in ok.score("wrong_type").error
    assert typo.error.startswith("UsageError: case 'typo' does not fit write(product, card)")
    assert "missing a required argument: 'product'; its inputs are {'prodcut'" in typo.error
    assert raises.error == "ModelAuthError: bad key"
    assert raises.score("equals").value == 0.0
    assert raises.score("equals").reason == "the run failed: ModelAuthError: bad key"
    assert report.summary()["broken"].errors == 1
    assert "failed: 2" in report.table()


def test_a_judge_missing_its_key_is_that_scores_error(monkeypatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judged = DATASET.evaluate(
        write,
        [llm_judge("Is it a tagline?", model="anthropic/claude-3-5-haiku-latest")],
        model=ScriptedModel(reply),
    )
    error = judged.runs[0].score("llm_judge").error
    assert error.startswith("ModelAuthError: model 'anthropic/claude-3-5-haiku-latest' needs an")
    assert "ANTHROPIC_API_KEY is not set" in error and "Nothing was sent" in error
    assert judged.runs[0].score("llm_judge").value is None and judged.runs[0].error is None


def test_a_judge_is_a_recorded_call_after_the_case(tmp_path) -> None:
    judge_model = ScriptedModel([{"passed": True, "reason": "short and clear"}] * 2)
    report = DATASET.evaluate(
        write, [llm_judge("Is it short?", model=judge_model)], model=ScriptedModel(reply),
        store=tmp_path / "e.db",
    )  # fmt: skip
    assert report.case_values("llm_judge") == {"c": 1.0, "t": 1.0}
    assert report.runs[0].score("llm_judge").reason == "short and clear"
    session = Session.open(tmp_path / "e.db", report.runs[0].session)
    try:
        tops = [n.name for n in session.dag.nodes if n.parent is None]
    finally:
        session.close()
    assert tops == ["write", "judge"]


def test_function_by_name_and_bad_arguments_are_usage_errors() -> None:
    report = DATASET.evaluate(
        "tests.openprogram.evals.agents:write", [equals], model=ScriptedModel(reply)
    )
    assert report.function == "tests.openprogram.evals.agents:write"
    with pytest.raises(UsageError, match="has no 'wirte'"):
        DATASET.evaluate("tests.openprogram.evals.agents:wirte", [equals])
    with pytest.raises(UsageError, match="repeat=0 must be"):
        DATASET.evaluate(write, [equals], repeat=0)
    with pytest.raises(UsageError, match="must be a list of scorers"):
        DATASET.evaluate(write, equals)  # type: ignore[arg-type]


def test_without_a_model_the_callers_runtime_answers() -> None:
    with Runtime(ScriptedModel(reply)):
        report = DATASET.evaluate(write, [equals], concurrency=2)
    assert report.case_values("equals") == {"c": 1.0, "t": 0.0}


def test_async_functions_are_evaluated() -> None:
    from openprogram import allm

    @agentic_function
    async def shout(word: str) -> str:
        return (await allm(word)).upper()

    report = Dataset(cases=[Case(inputs={"word": "hi"}, expected="HI")]).evaluate(
        shout, [equals], model=ScriptedModel(["hi"])
    )
    assert report.case_values("equals") == {"case-1": 1.0}


def test_an_interrupted_eval_resumes_without_asking_again(tmp_path) -> None:
    asked: list[str] = []
    interrupt = [True]

    def answer(request):
        asked.append(request.text)
        if request.function == "review" and "tea" in request.text and interrupt[0]:
            interrupt[0] = False
            raise KeyboardInterrupt
        return reply(request)

    store = tmp_path / "e.db"
    with pytest.raises(KeyboardInterrupt):
        DATASET.evaluate(write, [equals], model=ScriptedModel(answer), store=store, id="nightly")
    assert len(asked) == 4  # coffee: write, review; tea: write, then the interrupted review
    report = DATASET.evaluate(
        write, [equals], model=ScriptedModel(answer), store=store, id="nightly"
    )
    assert report.case_values("equals") == {"c": 1.0, "t": 0.0}
    assert [r.session for r in report.runs] == ["eval-nightly-0000-0", "eval-nightly-0001-0"]
    assert asked[4:] == ["Approve or reject: Smart tea."]  # only the unfinished exchange


@pytest.mark.slow
def test_ctrl_c_in_a_concurrent_eval_starts_no_queued_run() -> None:
    import threading

    started: list[str] = []
    gate = threading.Event()

    @agentic_function
    def slow(n: int) -> int:
        started.append(str(n))
        if n == 0:
            raise KeyboardInterrupt
        gate.wait(1.0)  # the runs already going end by themselves, after a bound
        return n

    dataset = Dataset(cases=[Case(inputs={"n": n}) for n in range(50)])
    with pytest.raises(KeyboardInterrupt):
        dataset.evaluate(slow, [equals], concurrency=2)
    assert len(started) <= 4  # the interrupted run, and those the two threads had begun


def test_a_plain_function_is_scored_on_every_call_it_made() -> None:
    from tests.openprogram.evals.agents import review

    def pipeline(product: str, card: str) -> str:  # not agentic: two top-level calls
        first = write(product)
        return review(first)

    def reviewed_twice(case, output, run) -> bool:
        return [n.name for n in run.calls() if n.parent is None] == ["write", "review"]

    def review_saw_the_draft(case, output, run) -> bool:
        return run.saw("review", contains="Smart coffee.")

    report = DATASET.evaluate(
        pipeline,
        [reviewed_twice, review_saw_the_draft, llm_judge("ok?", model=ScriptedModel(
            lambda request: {"passed": True, "reason": "fine"}))],
        model=ScriptedModel(reply),
    )  # fmt: skip
    assert report.case_values("reviewed_twice") == {"c": 1.0, "t": 1.0}  # the judge's not
    assert report.case_values("review_saw_the_draft") == {"c": 1.0, "t": 0.0}
