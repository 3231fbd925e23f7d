"""Re-running one nested function in the context its recorded calls had.

Owns rerun(): for each recorded call of a function in a report's runs, a session that
holds the run's history up to that call (its callers running, as they were), the new
version called in the same caller frame with the recorded arguments, then scored. Its
llm() calls render what the old call's would have, expose and render_range included.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from openprogram.evals._running import Plan, _model_label, _qualified, run_in
from openprogram.evals.report import EvalReport

if TYPE_CHECKING:
    from openprogram.evals.dataset import Case

__all__ = ["rerun"]


def rerun(
    report: EvalReport,
    function: str,
    fn: Callable[..., Any],
    scorers: Sequence[Any] | Mapping[str, Sequence[Any]] = (),
    *,
    model: Any = None,
    store: Any = None,
    name: str | None = None,
) -> EvalReport:
    """A report of `fn` run in place of each recorded call of `function`: the cases are
    report.calls(function) (the recorded output as `expected`), each run in memory on a
    copy of its run's history up to that call. Raises UsageError when no call was
    recorded."""
    import time
    import uuid

    from openprogram._loading import shared_history
    from openprogram.session import Session

    dataset = report.calls(function, store=store)
    plan = Plan(scorers, getattr(fn, "__name__", None))
    result = EvalReport(
        id=uuid.uuid4().hex[:8],
        name=name or f"{report.name}: {function} again",
        dataset=dataset,
        function=_qualified(fn),
        model=_model_label(model),
        created_at=time.time(),
    )
    runs = {(run.case, run.repeat): run for run in report.runs}
    for case in dataset.cases:
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
