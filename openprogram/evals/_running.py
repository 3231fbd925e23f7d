"""Running an eval: each case run in its own recorded session, then scored.

Owns evaluate(): the plan of scorers (for the case's call, and per nested function), the
runs (in order, or `concurrency` threads each in a copy of the caller's context; Ray
tasks are _ray.py's), and turning each run's failure into a recorded error rather than
the eval's crash. The result is report.py's EvalReport. Start at evaluate().
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import Any, Literal

from openprogram.core import _context, _secrets
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.values import to_jsonable
from openprogram.echo import echo, elide, mask_url
from openprogram.errors import UsageError
from openprogram.evals.dataset import Case, Dataset
from openprogram.evals.report import EvalReport, RunResult
from openprogram.evals.run import Run
from openprogram.evals.scorers import (
    TIMEOUT_S,
    Scorer,
    ScoreResult,
    Scoring,
    apply_all,
    scorer_name,
)

__all__ = ["Plan", "evaluate", "resolve_function", "run_in", "score_run"]

Scorers = Sequence[Scorer] | Mapping[str, Sequence[Scorer]]
Engine = Literal["local", "ray"]
"""Where runs happen: "local" (this process, `concurrency` threads) or "ray" (Ray tasks,
each recording into a store every worker opens)."""


class Plan:
    """Which scorers score what: `main` the case's own call, `nested[name]` each call of
    the nested function `name`. Scorer names are made unique (`equals`, `equals#2`).
    `timeout`: seconds each scorer may take on one run (None: no limit)."""

    def __init__(
        self, scorers: Scorers | None, function: str | None, timeout: float | None = TIMEOUT_S
    ) -> None:
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise UsageError(f"scorer_timeout={timeout!r} must be a number of seconds > 0")
        self.timeout = timeout
        self.main: list[tuple[str, Scorer]] = []
        self.nested: dict[str, list[tuple[str, Scorer]]] = {}
        if scorers is None:
            return
        if isinstance(scorers, Mapping):
            for name, group in scorers.items():
                target = self.main if name in ("*", function) else self.nested.setdefault(name, [])
                self._add(target, group, name)
        else:
            self._add(self.main, scorers, None)

    @staticmethod
    def _add(target: list[tuple[str, Scorer]], group: Iterable[Scorer], key: str | None) -> None:
        if callable(group) or isinstance(group, (str, bytes)):
            raise UsageError(
                f"scorers{'' if key is None else f'[{key!r}]'}={echo(group, 80)} must be a "
                "list of scorers, e.g. [equals]"
            )
        for scorer in group:
            if not callable(scorer):
                raise UsageError(
                    f"scorer {echo(scorer, 80)} is not callable; a scorer is a function "
                    "(case, output, run) -> bool | float | Score"
                )
            name, count = scorer_name(scorer), 1
            taken = {n for n, _ in target}
            while (name if count == 1 else f"{name}#{count}") in taken:
                count += 1
            target.append((name if count == 1 else f"{name}#{count}", scorer))


def resolve_function(spec: str) -> Callable[..., Any]:
    """The function `spec` ("package.module:function" or "module:Class.method") names.
    Raises UsageError saying what is missing (the module, or the name in it)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise UsageError(f"{spec!r}: name a function as MODULE:FUNCTION, e.g. 'agents:book_hotel'")
    try:
        target: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(f"{spec!r}: cannot import module {module_name!r}: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            known = sorted(n for n in dir(target) if not n.startswith("_"))[:20]
            raise UsageError(f"{spec!r}: {module_name!r} has no {part!r}; it has {known}")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"{spec!r} is a {type(target).__name__}, not a function")
    return target  # type: ignore[no-any-return]


def evaluate(
    dataset: Dataset,
    fn: Callable[..., Any] | str,
    scorers: Scorers | None = (),
    *,
    repeat: int = 1,
    concurrency: int = 1,
    model: Any = None,
    store: Any = None,
    name: str | None = None,
    progress: Callable[[int, int], None] | None = None,
    id: str | None = None,
    engine: Engine = "local",
    address: str | None = None,
    runtime_env: dict[str, Any] | None = None,
    scorer_timeout: float | None = TIMEOUT_S,
) -> EvalReport:
    """Run `fn` on every case of `dataset`, `repeat` times, and score each run.

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
    if engine == "ray":
        from openprogram.evals._ray import worker_store

        store = worker_store(store, address)
    function = getattr(fn, "__name__", type(fn).__name__)
    plan = Plan(scorers, function, scorer_timeout)
    resolved, owns = open_store(store)
    report = EvalReport(
        id=id or uuid.uuid4().hex[:8],
        name=name or f"{dataset.name}: {function}",
        dataset=dataset,
        function=_qualified(fn),
        model=_model_label(model),
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
            _run_case, fn, case, k, plan, _session_id(report.id, number, k), resolved, model
        )
        if progress is not None:
            with lock:
                done[0] += 1
                progress(done[0], len(jobs))
        return result

    if engine == "ray":
        if resolved is not None and owns:
            resolved.close()
        from openprogram.evals._ray import run_on_ray

        results = run_on_ray(
            jobs,
            fn,
            scorers,
            function,
            sessions=lambda job: _session_id(report.id, job[0], job[2]),
            store=store,
            model=model,
            address=address,
            runtime_env=runtime_env,
            concurrency=concurrency,
            failed=lambda job, why: _failed(job[1], job[2], why, plan),
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


def _run_case(
    fn: Callable[..., Any],
    case: Case,
    repeat: int,
    plan: Plan,
    session_id: str,
    store: Any,
    model: Any,
) -> tuple[RunResult, ContextDAG]:
    """One run of one case, in this (copied) context: its session, the call, the scores."""
    from openprogram.session.session import Session

    _context.frame_var.set(None)  # a copy made inside a call must not nest under it
    try:
        if store is not None and store.session(session_id) is not None:
            session = Session.open(store, session_id, resume=True)  # an interrupted eval
        else:
            session = Session(store, id=session_id if store is not None else None)
    except Exception as exc:
        problem = f"the run's session could not be made: {_error_text(exc)}"
        return _failed(case, repeat, problem, plan), ContextDAG()
    return run_in(session, fn, case, repeat, plan, model, recorded=store is not None)


def run_in(
    session: Any,
    fn: Callable[..., Any],
    case: Case,
    repeat: int,
    plan: Plan,
    model: Any,
    *,
    frame: str | None = None,
    after: int = -1,
    recorded: bool = False,
) -> tuple[RunResult, ContextDAG]:
    """Call `fn` on `case` inside `session` (as a call of `frame`, None: at top level;
    the scored call is the first such call after seq `after`), then score it; the
    run's failure, or its model's, is the result's error."""
    from openprogram.runtime.runtime import Runtime

    output: Any = None
    error: str | None = None
    started = time.perf_counter()
    with session:
        try:
            runtime = None if model is None else Runtime(model(case) if _factory(model) else model)
        except Exception as exc:
            runtime, error = None, f"model {echo(model, 60)}: {_error_text(exc)}"
        with runtime if runtime is not None else nullcontext():
            token = _context.frame_var.set(frame)
            try:
                if error is None and case.turns is not None:
                    output, error = _converse(fn, case)
                elif error is None:
                    try:
                        output = _call(fn, case)
                    except Exception as exc:
                        error = _error_text(exc)
            finally:
                _context.frame_var.reset(token)
            duration = time.perf_counter() - started
            agentic = getattr(fn, "__agentic__", False)
            run = Run(
                dag=session.dag,
                node=_case_node(session.dag, frame, after)
                if agentic and case.turns is None  # a conversation is scored whole
                else None,
                since=after,
                until=session.dag.nodes[-1].seq if len(session.dag) else None,
                output=output,
                error=error,
                duration_s=duration,
                session=session.id if recorded else None,
                repeat=repeat,
            )
            scores = score_run(plan, case, run)
    result = RunResult(
        case=case.name or "",
        repeat=repeat,
        session=run.session,
        output=_stored(output),
        error=error,
        duration_s=run.latency_s,
        cost_usd=run.cost,
        scores=scores,
    )
    return result, session.dag


def score_run(plan: Plan, case: Case, run: Run) -> list[ScoreResult]:
    """Every scorer of `plan` on one run: the case's call (a failed run scores 0 on each,
    with the failure as the reason), then each nested function's calls. The scorer
    calls are handed to one worker together, each with the plan's deadline."""
    todo: list[Scoring] = []
    if run.error is None:
        todo += [Scoring(scorer, case, run.output, run, name) for name, scorer in plan.main]
    nested = {function: run.calls(function) for function in plan.nested}
    for function, group in plan.nested.items():
        for name, scorer in group:
            for node in nested[function]:
                each = Run(run.dag, node, node.output, _node_error(node), repeat=run.repeat)
                todo.append(Scoring(scorer, case, node.output, each, name, function))
    done = iter(apply_all(todo, plan.timeout))
    scores: list[ScoreResult] = []
    for name, _ in plan.main:
        if run.error is not None:
            reason = f"the run failed: {run.error}"
            scores.append(ScoreResult(scorer=name, value=0.0, reason=reason))
        else:
            scores.append(next(done))
    for function, group in plan.nested.items():
        calls = nested[function]
        for name, _ in group:
            if not calls:
                reason = f"{function} was not called"
                scores.append(ScoreResult(scorer=name, function=function, reason=reason))
            else:
                scores.append(_combined([next(done) for _ in calls], name, function))
    return scores


def _combined(each: list[ScoreResult], name: str, function: str) -> ScoreResult:
    """The scores of every call of one function in a run as one: their mean; the first
    error, or the reason of the lowest score."""
    errors = [r.error for r in each if r.error is not None]
    values = [r.value for r in each if r.value is not None]
    worst = min(
        (r for r in each if r.value is not None), key=lambda r: r.value or 0.0, default=None
    )
    reason = worst.reason if worst is not None else None
    if len(each) > 1 and worst is not None:
        reason = f"{len(each)} calls; lowest: {reason or worst.value}"
    return ScoreResult(
        scorer=name,
        function=function,
        value=sum(values) / len(values) if values and not errors else None,
        binary=all(r.binary for r in each if r.error is None),
        reason=reason,
        error=errors[0] if errors else None,
    )


def _converse(fn: Callable[..., Any], case: Case) -> tuple[list[Any], str | None]:
    """Each turn of a conversation case, one call of `fn` each in the one session: the
    replies so far, and the error that ended it early (naming the turn)."""
    replies: list[Any] = []
    turns = case.turns or []
    for number, turn in enumerate(turns, 1):
        try:
            replies.append(_call(fn, Case(inputs=turn, name=f"{case.name} turn {number}")))
        except Exception as exc:
            return replies, f"turn {number} of {len(turns)}: {_error_text(exc)}"
    return replies, None


def _call(fn: Callable[..., Any], case: Case) -> Any:
    args, kwargs = case.arguments()
    signature = _signature(fn)
    if signature is not None:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as exc:
            shown = ", ".join(p for p in signature.parameters if p != "runtime")
            raise UsageError(
                f"case {case.name!r} does not fit {getattr(fn, '__name__', fn)}({shown}): "
                f"{exc}; its inputs are {echo(case.inputs, 120)}"
            ) from None
        args, kwargs = _revived(signature, args, kwargs)
    if inspect.iscoroutinefunction(fn):
        return asyncio.run(fn(*args, **kwargs))
    result = fn(*args, **kwargs)
    if inspect.isawaitable(result):
        return asyncio.run(_awaited(result))
    return result


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    """fn's signature, its annotations evaluated where they can be (a module with
    `from __future__ import annotations` keeps them as text)."""
    try:
        return inspect.signature(fn, eval_str=True)
    except (TypeError, ValueError):
        return None
    except Exception:  # an annotation naming what its module cannot resolve
        try:
            return inspect.signature(fn)
        except (TypeError, ValueError):
            return None


def _revived(
    signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Arguments as the function takes them: a value recorded by its fields (a pydantic
    model, a dataclass: `{"$type": ..., "$fields": ...}`, as Dataset.from_sessions
    copies it) is validated into the parameter's annotated type. Others pass as given."""
    from pydantic import TypeAdapter

    from openprogram.core.values import rebuilt

    bound = signature.bind(*args, **kwargs)
    for name, value in list(bound.arguments.items()):
        if not _tagged(value):
            continue
        annotation = signature.parameters[name].annotation
        try:
            fields = rebuilt(value, fields=True)
            if annotation is not inspect.Parameter.empty and not isinstance(annotation, str):
                fields = TypeAdapter(annotation).validate_python(fields)
            bound.arguments[name] = fields
        except Exception:  # kept as recorded; the function says what it lacks
            continue
    return bound.args, bound.kwargs


def _tagged(value: Any) -> bool:
    if isinstance(value, dict):
        return any(key.startswith("$") for key in value) or any(map(_tagged, value.values()))
    if isinstance(value, list):
        return any(map(_tagged, value))
    return False


async def _awaited(value: Any) -> Any:
    return await value


def _case_node(dag: ContextDAG, frame: str | None = None, after: int = -1) -> Node | None:
    """The code node of the case's call: the first call made in `frame` (None: at top
    level) after seq `after` (a judge's calls come after it)."""
    for node in dag.nodes:
        if node.seq > after and node.parent == frame and node.kind == "code":
            return node
    return None


def _node_error(node: Node) -> str | None:
    return node.error if node.status == "error" else None


def _failed(case: Case, repeat: int, error: str, plan: Plan) -> RunResult:
    run = Run(ContextDAG(), None, None, error, repeat=repeat)
    return RunResult(
        case=case.name or "",
        repeat=repeat,
        error=error,
        scores=score_run(plan, case, run),
    )


def _error_text(exc: BaseException) -> str:
    return elide(_secrets.scrub(f"{type(exc).__name__}: {exc}"), 2000)


def _stored(output: Any) -> Any:
    try:
        return _secrets.scrub_value(to_jsonable(output, None))  # keys never reach a report
    except Exception as exc:
        return {"$opaque": type(output).__qualname__, "error": _error_text(exc)}


def _factory(model: Any) -> bool:
    """Whether `model` makes a model per case (a callable that is not itself a model)."""
    return callable(model) and not hasattr(model, "complete") and not isinstance(model, str)


def _model_label(model: Any) -> str | None:
    if model is None or isinstance(model, str):
        return model
    if _factory(model):
        return getattr(model, "__name__", "per-case models")
    return str(getattr(model, "name", None) or type(model).__name__)


def _qualified(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}:{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"
