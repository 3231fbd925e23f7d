"""Running an eval's runs as Ray tasks (`evaluate(..., engine="ray")`), for large sets.

Owns the Ray side: checking that the store is one every worker can open, sending the
function, scorers and model to the workers (they must pickle), starting or joining Ray
(through operations.ray.init_ray), keeping `concurrency` runs in flight and collecting
their results. What one run does is _running.py's; start at run_on_ray().
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openprogram.core import _secrets
from openprogram.echo import cut, echo
from openprogram.errors import ConfigError, UsageError
from openprogram.evals._running import EvalModel, Plan, Scorers, resolve_function, run_case
from openprogram.evals.dataset import Case
from openprogram.evals.report import RunResult
from openprogram.operations.ray import import_ray, shared_store

__all__ = ["run_on_ray", "worker_store"]

Job = tuple[int, Case, int]
"""(the case's number in the dataset, the case, the repeat)."""


def _ray() -> Any:
    return import_ray("engine='ray'")


def worker_store(store: object, address: str | None) -> str:
    """The store URL every Ray worker opens (operations.ray.shared_store)."""
    return shared_store(store, address, who="engine='ray'")


def _sendable(ray: Any, what: str, value: Any) -> None:
    """UsageError unless `value` pickles (Ray sends it to every worker)."""
    try:
        ray.cloudpickle.dumps(value)
    except Exception as exc:
        hint = (
            "pass a model name, or a function (case) -> model defined in an importable module"
            if what == "model"
            else "define it at the top level of an importable module"
        )
        raise UsageError(
            f"engine='ray' sends the {what} to its workers, but {echo(value, 60)} cannot be "
            f"sent ({type(exc).__name__}: {cut(str(exc), 200)}); {hint}"
        ) from None


def _remote_run(
    fn: Callable[..., Any] | str,
    case: dict[str, Any],
    repeat: int,
    scorers: Scorers | None,
    function: str,
    session: str,
    store: str,
    model: EvalModel,
) -> dict[str, Any]:
    """In a Ray worker: one run, recorded in session `session` of `store`; its result."""
    from openprogram.store.open import open_store

    target = resolve_function(fn) if isinstance(fn, str) else fn
    opened, _ = open_store(store)
    try:
        result, _ = run_case(
            target, Case.model_validate(case), repeat, Plan(scorers, function), session, opened,
            model,
        )  # fmt: skip
    finally:
        if opened is not None:
            opened.close()
    return result.model_dump(mode="json")


def run_on_ray(
    jobs: Sequence[Job],
    fn: Callable[..., Any] | str,
    scorers: Scorers | None,
    function: str,
    *,
    sessions: Callable[[Job], str],
    store: str,
    model: EvalModel,
    address: str | None,
    concurrency: int,
    runtime_env: dict[str, Any] | None = None,
    failed: Callable[[Job, str], RunResult],
    progress: Callable[[int, int], None] | None,
) -> list[RunResult]:
    """Run every job as a Ray task, at most `concurrency` at a time, and return their
    results in job order. `address` None starts a private local Ray with `concurrency`
    CPUs (stopped afterwards); otherwise joins that cluster. A task Ray could not run
    (its worker died) is `failed(job, why)`: a run with that error, never raised."""
    ray = _ray()
    for what, value in (("function", fn), ("scorers", scorers), ("model", model)):
        _sendable(ray, what, value)
    owned = not ray.is_initialized()
    if owned:
        from openprogram.operations.ray import init_ray

        # "local": a private Ray (address None would join any Ray running on the machine)
        options: dict[str, Any] = {"address": address or "local", "log_to_driver": False}
        if runtime_env is not None:
            options["runtime_env"] = runtime_env
        if address is None:
            options.update(num_cpus=concurrency, include_dashboard=False)
        try:
            init_ray(ray, **options)
        except (ConnectionError, RuntimeError) as exc:
            raise ConfigError(f"cannot start or join Ray at {address!r}: {exc}") from exc
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_remote_run)
        results: dict[int, RunResult] = {}
        running: dict[Any, int] = {}
        waiting = list(range(len(jobs)))[::-1]
        while waiting or running:
            while waiting and len(running) < concurrency:
                index = waiting.pop()
                _, case, repeat = jobs[index]
                ref = remote.remote(
                    fn, case.model_dump(mode="json"), repeat, scorers, function,
                    sessions(jobs[index]), store, model,
                )  # fmt: skip
                running[ref] = index
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                index = running.pop(ref)
                try:
                    results[index] = RunResult.model_validate(ray.get(ref))
                except ray.exceptions.RayError as exc:
                    why = _secrets.scrub(f"the Ray task failed: {type(exc).__name__}: {exc}")
                    results[index] = failed(jobs[index], cut(why, 2000))
                if progress is not None:
                    progress(len(results), len(jobs))
        return [results[index] for index in range(len(jobs))]
    finally:
        if owned and ray.is_initialized():
            ray.shutdown()
