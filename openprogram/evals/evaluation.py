"""Dataset and EvalReport as a program holds them: where an eval starts and ends.

Owns the public classes: Dataset (a DatasetData, dataset.py's, that can `evaluate`) and
EvalReport (a ReportData, report.py's, with the cheap replay tiers: rescore with no
calls at all, replay with the recorded model replies, calls/rerun/fork of one function
or from one node; and its views: compare, the HTML page). Each method hands its work to
the engine below it (_evaluating, _running, rerun, compare, _html); this module only
joins them. Start at Dataset.evaluate.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from openprogram.core.dag import ContextDAG
from openprogram.core.values import rebuilt
from openprogram.errors import UsageError
from openprogram.evals._evaluating import evaluate
from openprogram.evals._html import report_fragment, write_html
from openprogram.evals._running import EvalModel, Plan, Scorers, score_run
from openprogram.evals._scores import TIMEOUT_S
from openprogram.evals.compare import Comparison, compare
from openprogram.evals.dataset import Case, DatasetData, dataset_reader
from openprogram.evals.report import ReportData
from openprogram.evals.rerun import fork, rerun
from openprogram.evals.run import Run

__all__ = ["Dataset", "EvalReport"]


class Dataset(DatasetData):
    """A named list of cases: `Dataset(cases=[Case(inputs={...}, expected=...)])`.

    Cases without a name are named "case-{n}" by their place; two cases with one name
    raise UsageError (a comparison pairs cases by name). `Dataset.load(path)` reads a
    file, `.save(path)` writes one, `Dataset.from_sessions(store, function)` makes
    cases from recorded calls, `.evaluate(fn, scorers)` runs and scores them.
    """

    def evaluate(
        self,
        fn: Callable[..., Any] | str,
        scorers: Scorers = (),
        *,
        repeat: int = 1,
        concurrency: int = 1,
        model: EvalModel = None,
        store: object = None,
        name: str | None = None,
        progress: Callable[[int, int], None] | None = None,
        id: str | None = None,
        engine: Literal["local", "ray"] = "local",
        address: str | None = None,
        runtime_env: dict[str, Any] | None = None,
        scorer_timeout: float | None = TIMEOUT_S,
    ) -> EvalReport:
        """Run `fn` on every case (`repeat` times each), each run its own recorded session,
        and score it; returns an EvalReport. `id` names the eval (again: resume it);
        engine="ray" runs each run as a Ray task (on the cluster at `address`, the
        workers set up by Ray's `runtime_env`). `scorer_timeout`: seconds a scorer may
        take on one run (then its error is recorded).
        See openprogram.evals._evaluating.evaluate for every option."""
        return evaluate(
            self,
            fn,
            scorers,
            report_type=EvalReport,
            repeat=repeat,
            concurrency=concurrency,
            model=model,
            store=store,
            name=name,
            progress=progress,
            id=id,
            engine=engine,
            address=address,
            runtime_env=runtime_env,
            scorer_timeout=scorer_timeout,
        )


class EvalReport(ReportData):
    """The result of Dataset.evaluate: the runs, and what they add up to.

    `store` is where the runs' sessions are (None: their DAGs are kept in the report
    itself, and saved with it). Read it with `.table()`, `.summary()`, `.worst()`,
    `.compare(other)`; keep it with `.save(path)` / `EvalReport.load(path)`.
    """

    dataset: Dataset

    # -- replay tiers --------------------------------------------------------------------
    def calls(self, function: str, *, store: object = None) -> Dataset:
        """A dataset of every completed call of `function` in this report's runs (at any
        depth): its recorded input, and its recorded output as `expected`; metadata names
        the case, repeat, session and node. Evaluate a new version of one nested
        function on exactly what the old one was given. Raises UsageError when none.

        When the runs are in a store, the dataset (named "REPORT: function (report ID)")
        is noted there as a reader of the sessions its cases came from ("dataset:" and
        its name), so `sessions prune` keeps them until `dataset.release(store)`; the
        report's own reader (`reader`, noted by `save`) is another, let go apart."""
        dataset = self._calls(function, store)
        sessions = {str(c.metadata["session"]) for c in dataset.cases if c.metadata["session"]}
        self._note_reader(sessions, dataset_reader(dataset.name), store)
        return dataset

    def _calls(self, function: str, store: object) -> Dataset:
        """calls() without noting a reader: rerun() reads the calls only while it runs."""
        cases = []
        for run in self.runs:
            try:
                dag = self.dag(run, store=store)
            except UsageError:
                continue
            calls = [n for n in dag.find(name=function, kind="code") if n.status == "completed"]
            for node in calls:
                suffix = f"#{dag.ordinal(node)}" if len(calls) > 1 else ""
                cases.append(
                    Case(
                        inputs=node.input,
                        expected=node.output,
                        name=f"{run.case}/{run.repeat}{suffix}",
                        metadata={"case": run.case, "repeat": run.repeat,
                                  "session": run.session, "node": node.id},
                    )
                )  # fmt: skip
        if not cases:
            raise UsageError(f"no completed call of {function!r} in the runs of {self.name!r}")
        return Dataset(name=f"{self.name}: {function} (report {self.id})", cases=cases)

    def rescore(
        self,
        scorers: Scorers,
        *,
        store: object = None,
        name: str | None = None,
    ) -> EvalReport:
        """A new report with the same runs scored by `scorers`, calling nothing: outputs
        and DAGs come from the record (`store` overrides where the sessions are).
        An llm_judge among them does call its model. The copy has an id of its own, so
        saved it is a reader ("report:ID") apart from this report: releasing either
        lets go of nothing the other still reads."""
        from openprogram.session.session import Session

        function = self.function.rpartition(":")[2].rpartition(".")[2]
        plan = Plan(scorers, function)
        fresh = {"runs": [], "name": name or self.name, "id": uuid.uuid4().hex[:8]}
        report: EvalReport = self.model_copy(update=fresh)
        report._dags = dict(self._dags)  # a copy of its own: model_copy shares it
        cases = {case.name: case for case in self.dataset.cases}
        for old in self.runs:
            case = cases.get(old.case) or Case(name=old.case)
            dag = report.dag(old, store=store)
            node = next((n for n in dag.nodes if n.parent is None and n.kind == "code"), None)
            run = Run(
                dag,
                node if self.agentic and case.turns is None else None,
                _revived(old.output),
                old.error,
                old.duration_s,
                old.session,
                old.repeat,
            )
            with Session():  # a judge's calls are recorded apart from the stored run
                scores = score_run(plan, case, run)
            report.runs.append(old.model_copy(update={"scores": scores}))
        return report

    def replay(
        self,
        fn: Callable[..., Any] | str,
        scorers: Scorers = (),
        *,
        store: object = None,
        strict: bool = True,
        concurrency: int = 1,
    ) -> EvalReport:
        """Run `fn` again on every case with each run's recorded model replies
        (ReplayModel): no model is paid for, and a prompt that drifted from the
        recording fails its run with ReplayMismatch naming the call (recorded in the
        report, never raised). Runs the first repeat of each case once."""
        from openprogram.session.replay import ReplayModel

        firsts = {run.case: run for run in self.runs if run.repeat == 0}

        def recorded(case: Case) -> Any:
            return ReplayModel(self.dag(firsts[case.name or ""], store=store), strict=strict)

        recorded.__name__ = f"replay of {self.id}"
        dataset = self.dataset.model_copy(
            update={"cases": [c for c in self.dataset.cases if c.name in firsts]}
        )
        return evaluate(
            dataset,
            fn,
            scorers,
            report_type=type(self),
            model=recorded,
            concurrency=concurrency,
            name=f"{self.name} (replay)",
        )

    def rerun(
        self,
        function: str,
        fn: Callable[..., Any],
        scorers: Scorers = (),
        *,
        model: EvalModel = None,
        store: object = None,
    ) -> EvalReport:
        """Run `fn` (a new version of the nested function `function`) in place of each
        recorded call of it, in exactly the context that call had: the run's history up
        to it, its callers running, the recorded arguments. Only `fn` calls a model; the
        cases are `calls(function)`, so `equals` compares with the old output."""
        calls = self._calls(function, store)
        return rerun(self, function, calls, fn, scorers, model=model, store=store)

    def fork(
        self,
        at: str | Callable[[ContextDAG], Any],
        fn: Callable[..., Any],
        scorers: Scorers = (),
        *,
        model: EvalModel = None,
        store: object = None,
    ) -> EvalReport:
        """Run `fn` (the program, perhaps a new version) again on each case from node `at`
        of its recorded run on ("review#1", "llm:write#2", or `dag -> node`): each run's
        session is forked there and `fn` resumed in the fork, so what finished by then
        comes from the record and only the rest runs. Needs the runs in a store."""
        return fork(self, at, fn, scorers, model=model, store=store)

    # -- views ---------------------------------------------------------------------------
    def compare(self, other: EvalReport, *, alpha: float = 0.05) -> Comparison:
        """How `other` (the new version) differs from this report (the baseline), score by
        score, over the cases both ran: see openprogram.evals.compare."""
        return compare(self, other, alpha=alpha)

    def to_html(self) -> str:
        """The report as an HTML fragment: summary and one row per case (notebooks)."""
        return report_fragment(self, links=None)

    def _repr_html_(self) -> str:
        return self.to_html()

    def write_html(
        self,
        path: str | os.PathLike[str],
        *,
        store: object = None,
        links: Mapping[tuple[str, int], str] | None = None,
        extra_html: str | None = None,
        baseline: EvalReport | None = None,
    ) -> Path:
        """Write the report page to `path`: every case with its inputs, expected output,
        each run's output and each scorer's verdict and reason; beside it (folder
        `<name>.runs/`) each run's session report, linked from its row. `baseline`: an
        earlier report to compare with, shown case by case (✗✗✗ → ✔✔✔) with the
        statistics in words. `store` overrides where the sessions are read (e.g. a URL
        whose password the report does not keep); `links` maps (case, repeat) to the
        href of a session report written already (then none is written); `extra_html`
        is added after the report (trusted)."""
        return write_html(
            self,
            Path(path).expanduser(),
            store=store,
            links=links,
            extra_html=extra_html,
            baseline=baseline,
        )


def _revived(value: Any) -> Any:
    try:
        return rebuilt(value)
    except Exception:  # NotRebuildable, or a value of an older format: keep it as stored
        return value
