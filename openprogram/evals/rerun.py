"""Running part of a recorded eval again: one nested function, or the rest after a node.

Owns rerun(): for each recorded call of a function in a report's runs, a session that
holds the run's history up to that call (its callers running, as they were), the new
version called in the same caller frame with the recorded arguments, then scored; and
fork(): each run's session forked at a node and the program run again in the fork with
resume, so what finished by then comes from the record and only the rest runs.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from openprogram.errors import UsageError
from openprogram.evals._running import (
    EvalModel,
    Plan,
    Scorers,
    error_text,
    model_label,
    qualified,
    run_in,
)
from openprogram.evals.dataset import Case, DatasetData
from openprogram.evals.report import ReportData, RunResult

if TYPE_CHECKING:
    from openprogram.core.dag import ContextDAG, Node

__all__ = ["fork", "rerun"]

_R = TypeVar("_R", bound=ReportData)


def rerun(
    report: _R,
    function: str,
    calls: DatasetData,
    fn: Callable[..., Any],
    scorers: Scorers = (),
    *,
    model: EvalModel = None,
    store: object = None,
    name: str | None = None,
) -> _R:
    """A report (of `report`'s type) of `fn` run in place of each recorded call of
    `function`: the cases are `calls`, those calls as EvalReport.calls gives them (the
    recorded output as `expected`, metadata naming the case, repeat and node), each run
    in memory on a copy of its run's history up to that call."""
    from openprogram.session._loading import shared_history
    from openprogram.session.session import Session

    plan = Plan(scorers, getattr(fn, "__name__", None))
    result = type(report)(
        id=uuid.uuid4().hex[:8],
        name=name or f"{report.name}: {function} again",
        dataset=calls,
        function=qualified(fn),
        model=model_label(model),
        created_at=time.time(),
    )
    runs = {(run.case, run.repeat): run for run in report.runs}
    for case in calls.cases:
        recorded = report.dag(runs[_origin(case)], store=store)
        node = recorded.node(case.metadata["node"])
        session = Session()
        for copy in shared_history(recorded, node, node.seq - 1):
            session.dag.restore(copy)
        session.dag.blobs = recorded.blobs  # images the history shows
        last = session.dag.nodes[-1].seq if len(session.dag) else -1
        outcome, dag = run_in(session, fn, case, 0, plan, model, frame=node.parent, after=last)
        result.runs.append(outcome)
        result.keep_dag(outcome, dag)
    return result


def _origin(case: Case) -> tuple[str, int]:
    return str(case.metadata["case"]), int(case.metadata["repeat"])


def fork(
    report: _R,
    at: str | Callable[[ContextDAG], Node],
    fn: Callable[..., Any],
    scorers: Scorers = (),
    *,
    model: EvalModel = None,
    store: object = None,
    name: str | None = None,
) -> _R:
    """A report (of `report`'s type) of `fn` (the program, perhaps a new version) run again
    on each case from node `at` of its recorded run on: the run's session is forked at
    `at` (a reference such as "review#1" or "llm:write#2", or a function `dag -> node`)
    and `fn` runs in the fork with resume, so every call finished by then returns its
    recorded output and only what came after runs (and calls the model). Needs the runs
    in a store; each fork is a session of its own there. A run without such a node, or
    whose new version takes another path before it, is recorded as that run's error."""
    from openprogram.session.session import Session

    spec = store or report.store
    if spec is None:
        raise UsageError(
            f"report {report.name!r} kept its runs in memory; fork needs them in a store: "
            "evaluate(..., store='evals.db')"
        )
    plan = Plan(scorers, getattr(fn, "__name__", None))
    result = type(report)(
        id=uuid.uuid4().hex[:8],
        name=name or f"{report.name}: from {at if isinstance(at, str) else 'a node'}",
        dataset=report.dataset,
        function=qualified(fn),
        model=model_label(model),
        repeat=report.repeat,
        store=report.store if store is None else None,
        created_at=time.time(),
    )
    cases = {case.name: case for case in report.dataset.cases}
    for run in report.runs:
        case = cases[run.case]
        try:
            forked = _fork_of(spec, run, at)
        except Exception as exc:
            outcome = RunResult(case=run.case, repeat=run.repeat, error=error_text(exc))
            result.runs.append(outcome)
            continue
        session = Session.open(spec, forked, resume=True)
        outcome, dag = run_in(session, fn, case, run.repeat, plan, model, recorded=True)
        result.runs.append(outcome)
        result.keep_dag(outcome, dag)
    return result


def _fork_of(spec: Any, run: RunResult, at: str | Callable[[ContextDAG], Node]) -> str:
    """The id of a new fork of `run`'s session at node `at`."""
    from openprogram.display.calls import resolve_node
    from openprogram.session.session import Session

    if run.session is None:
        raise UsageError(f"run {run.case!r} #{run.repeat} has no recorded session to fork")
    source = Session.open(spec, run.session)
    try:
        node = resolve_node(source.dag, at) if isinstance(at, str) else at(source.dag)
        if node is None:
            raise UsageError(f"no node to fork at in run {run.case!r} #{run.repeat}")
        forked = source.fork(node.id, id=f"{run.session}-fork-{uuid.uuid4().hex[:6]}")
        forked.close()
        return forked.id
    finally:
        source.close()
