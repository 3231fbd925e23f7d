"""Running an eval: every case of a dataset, `repeat` times, each run then scored.

Owns evaluate(): checking its options, the report it fills, and which runs happen where:
in order, or `concurrency` threads each in a copy of the caller's context, or Ray tasks
(_ray.py's). What one run does is _running.py's; the public entry is Dataset.evaluate
(evaluation.py). Start at evaluate().
"""

from __future__ import annotations

import contextvars
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Literal, TypeVar

from openprogram.core import _secrets
from openprogram.core.dag import ContextDAG
from openprogram.echo import echo, mask_url
from openprogram.errors import UsageError
from openprogram.evals._ray import run_on_ray, worker_store
from openprogram.evals._running import (
    EvalModel,
    Plan,
    Scorers,
    failed_run,
    model_label,
    qualified,
    resolve_function,
    run_case,
)
from openprogram.evals._scores import TIMEOUT_S
from openprogram.evals.dataset import Case, DatasetData
from openprogram.evals.report import ReportData, RunResult

__all__ = ["Engine", "evaluate"]

Engine = Literal["local", "ray"]
"""Where runs happen: "local" (this process, `concurrency` threads) or "ray" (Ray tasks,
each recording into a store every worker opens)."""

_R = TypeVar("_R", bound=ReportData)


def evaluate(
    dataset: DatasetData,
    fn: Callable[..., Any] | str,
    scorers: Scorers | None = (),
    *,
    report_type: type[_R],
    repeat: int = 1,
    concurrency: int = 1,
    model: EvalModel = None,
    store: object = None,
    name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    id: str | None = None,
    engine: Engine = "local",
    address: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    scorer_timeout: float | None = TIMEOUT_S,
) -> _R:
    """Run `fn` on every case of `dataset`, `repeat` times, and score each run; the
    report is a `report_type` (the public EvalReport, which Dataset.evaluate passes).

    fn: the function (usually an @agentic_function), or "module:function". Each run is a
        session of its own, id "eval-{report id}-{case number}-{repeat}", recorded in
        `store` (None: in memory, the DAGs kept in the report).
    scorers: a list for the case's call, or a dict `{function name: [scorers]}` that also
        scores nested functions on each of their calls ("*" or fn's own name: the
        case's call).
    model: a model string or object every run uses (a fresh Runtime each run), or a
        callable `(case) -> model` (e.g. a ReplayModel per case); None: the caller's
        ambient Runtime. concurrency: runs at a time (threads; async functions run in an
        event loop per run). progress: called with (done, total) after each run.
    id: the report's id (default: a new random one). Evaluating again with the id of an
        interrupted eval and the same store resumes it: each run whose session exists is
        reopened with resume=True, so its completed calls (and model replies) come from
        the record and only unfinished work runs.
    engine: "ray" runs each run as a Ray task (1 CPU), `concurrency` at a time, on the
        cluster at `address` (None: a private local Ray with `concurrency` CPUs, stopped
        afterwards). Its runs record into `store`, which every worker must open: a file
        path (workers on this machine) or "postgresql://..."; fn, the scorers and the
        model must pickle (a model name, or a module-level `(case) -> model`; None: the
        workers' default, as the caller's ambient Runtime does not travel).
        runtime_env: Ray's runtime environment for the workers (e.g.
        `{"working_dir": ".", "pip": [...]}`: ship the code of `fn` to a cluster); it
        applies when this call starts or joins Ray, not to a Ray already initialized.
    scorer_timeout: seconds each scorer (a judge included) may take on one run; one that
        takes longer is given up and recorded as that score's error (None: no limit;
        Ray workers use the default).
    A run that raises, a case whose inputs do not fit `fn`, and a scorer that raises are
    recorded in the report, never raised. Raises UsageError for bad arguments.
    """
    from openprogram.store.open import open_store

    if isinstance(fn, str):
        fn = resolve_function(fn)
    if not callable(fn):
        raise UsageError(f"evaluate({echo(fn, 60)}, ...): pass the function to evaluate")
    if not isinstance(repeat, int) or repeat < 1:
        raise UsageError(f"repeat={repeat!r} must be an integer >= 1")
    if not isinstance(concurrency, int) or concurrency < 1:
        raise UsageError(f"concurrency={concurrency!r} must be an integer >= 1")
    if engine not in ("local", "ray"):
        raise UsageError(f"engine={engine!r} is not one of 'local', 'ray'")
    if address is not None and engine != "ray":
        raise UsageError(f"address={address!r} is for engine='ray'; pass engine='ray' too")
    if runtime_env is not None and (engine != "ray" or not isinstance(runtime_env, dict)):
        raise UsageError(
            f"runtime_env={echo(runtime_env, 60)} is a dict for engine='ray' (Ray's runtime "
            "environment: working_dir, pip, env_vars...)"
        )
    ray_store = worker_store(store, address) if engine == "ray" else ""  # a URL workers open
    function = getattr(fn, "__name__", type(fn).__name__)
    plan = Plan(scorers, function, scorer_timeout)
    resolved, owns = open_store(ray_store or store)
    report = report_type(
        id=id or uuid.uuid4().hex[:8],
        name=name or f"{dataset.name}: {function}",
        dataset=dataset,
        function=qualified(fn),
        model=model_label(model),
        repeat=repeat,
        agentic=bool(getattr(fn, "__agentic__", False)),
        store=None if resolved is None else mask_url(_secrets.scrub(resolved.url)),
        created_at=time.time(),
    )
    jobs = [(number, case, k) for number, case in enumerate(dataset.cases) for k in range(repeat)]
    base = contextvars.copy_context()
    done, lock = [0], threading.Lock()

    def one(job: tuple[int, Case, int]) -> tuple[RunResult, ContextDAG]:
        number, case, k = job
        result = base.copy().run(
            run_case, fn, case, k, plan, _session_id(report.id, number, k), resolved, model
        )
        if progress is not None:
            with lock:
                done[0] += 1
                progress(done[0], len(jobs))
        return result

    if engine == "ray":
        if resolved is not None and owns:
            resolved.close()
        results = run_on_ray(
            jobs,
            fn,
            scorers,
            function,
            sessions=lambda job: _session_id(report.id, job[0], job[2]),
            store=ray_store,
            model=model,
            address=address,
            runtime_env=runtime_env,
            concurrency=concurrency,
            failed=lambda job, why: failed_run(job[1], job[2], why, plan),
            progress=progress,
        )
        report.runs.extend(results)
        return report
    try:
        if concurrency == 1 or len(jobs) <= 1:
            outcomes = [one(job) for job in jobs]
        else:
            with ThreadPoolExecutor(concurrency, thread_name_prefix="openprogram-eval") as pool:
                outcomes = list(pool.map(one, jobs))  # a run's BaseException cancels the rest
    finally:
        if owns and resolved is not None:
            resolved.close()
    for result, dag in outcomes:
        report.runs.append(result)
        report.keep_dag(result, dag)
    return report


def _session_id(report: str, number: int, repeat: int) -> str:
    """The session a run records into: stable, so evaluating again with the same id
    finds (and resumes) it."""
    return f"eval-{report}-{number:04d}-{repeat}"
