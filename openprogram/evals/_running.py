"""One run of one case: its own recorded session, the call, then its scores.

Owns the plan of scorers (for the case's call, and per nested function), one run
(run_case: its session made or resumed; run_in: the call inside a session, a
conversation turn by turn, then scored), and turning each run's failure into a recorded
error rather than the eval's crash. Which runs happen, in threads or as Ray tasks, is
_evaluating.py's and _ray.py's. Start at run_case().
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, TypeAlias, TypeGuard, cast

from openprogram.core import _context, _secrets
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.values import to_jsonable
from openprogram.echo import echo, elide
from openprogram.errors import UsageError
from openprogram.evals._scores import TIMEOUT_S, Scorer, ScoreResult
from openprogram.evals.dataset import Case
from openprogram.evals.report import RunResult
from openprogram.evals.run import Run
from openprogram.evals.scorers import Scoring, apply_all, scorer_name

if TYPE_CHECKING:
    from openprogram.models.model import Model
    from openprogram.session.session import Session
    from openprogram.store.base import Store

__all__ = [
    "EvalModel",
    "Plan",
    "Scorers",
    "error_text",
    "failed_run",
    "model_label",
    "qualified",
    "resolve_function",
    "run_case",
    "run_in",
    "score_run",
]

Scorers = Sequence[Scorer] | Mapping[str, Sequence[Scorer]]

EvalModel: TypeAlias = "str | Model | Callable[[Case], str | Model] | None"
"""The model an eval's runs use: a model string or object every run uses (a fresh
Runtime each run), a callable `(case) -> model` making one per case, or None for the
caller's ambient Runtime."""


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


def run_case(
    fn: Callable[..., Any],
    case: Case,
    repeat: int,
    plan: Plan,
    session_id: str,
    store: Store | None,
    model: EvalModel,
) -> tuple[RunResult, ContextDAG]:
    """One run of one case, in this (copied) context: its session, the call, the scores."""
    from openprogram.session.session import Session

    _context.enter(frame=None)  # a copy made inside a call must not nest under it
    try:
        if store is not None and store.session(session_id) is not None:
            session = Session.open(store, session_id, resume=True)  # an interrupted eval
        else:
            session = Session(store, id=session_id if store is not None else None)
    except Exception as exc:
        problem = f"the run's session could not be made: {error_text(exc)}"
        return failed_run(case, repeat, problem, plan), ContextDAG()
    return run_in(session, fn, case, repeat, plan, model, recorded=store is not None)


def run_in(
    session: Session,
    fn: Callable[..., Any],
    case: Case,
    repeat: int,
    plan: Plan,
    model: EvalModel,
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
            runtime = None if model is None else Runtime(_model_for(model, case))
        except Exception as exc:
            runtime, error = None, f"model {echo(model, 60)}: {error_text(exc)}"
        with runtime if runtime is not None else nullcontext():
            token = _context.enter(frame=frame)
            try:
                if error is None and case.turns is not None:
                    output, error = _converse(fn, case)
                elif error is None:
                    try:
                        output = _call(fn, case)
                    except Exception as exc:
                        error = error_text(exc)
            finally:
                _context.leave(token)
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
            return replies, f"turn {number} of {len(turns)}: {error_text(exc)}"
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


def failed_run(case: Case, repeat: int, error: str, plan: Plan) -> RunResult:
    """The result of a run that never ran (`error` says why): each score of the case's
    call 0, with the failure as its reason."""
    run = Run(ContextDAG(), None, None, error, repeat=repeat)
    return RunResult(
        case=case.name or "",
        repeat=repeat,
        error=error,
        scores=score_run(plan, case, run),
    )


def error_text(exc: BaseException) -> str:
    """An exception as a report keeps it: its type and message, keys scrubbed, cut."""
    return elide(_secrets.scrub(f"{type(exc).__name__}: {exc}"), 2000)


def _stored(output: Any) -> Any:
    try:
        return _secrets.scrub_value(to_jsonable(output, None))  # keys never reach a report
    except Exception as exc:
        return {"$opaque": type(output).__qualname__, "error": error_text(exc)}


def _factory(model: EvalModel) -> TypeGuard[Callable[[Case], str | Model]]:
    """Whether `model` makes a model per case (a callable that is not itself a model)."""
    return callable(model) and not hasattr(model, "complete") and not isinstance(model, str)


def _model_for(model: EvalModel, case: Case) -> str | Model | None:
    """The model a run of `case` uses: what a per-case callable makes for it, else `model`."""
    if _factory(model):
        return model(case)
    return cast("str | Model | None", model)  # a TypeGuard narrows its True side only


def model_label(model: EvalModel) -> str | None:
    """How a report names the model its runs used (None: the ambient one)."""
    if model is None or isinstance(model, str):
        return model
    if _factory(model):
        return getattr(model, "__name__", "per-case models")
    return str(getattr(model, "name", None) or type(model).__name__)


def qualified(fn: Callable[..., Any]) -> str:
    """A function's "module:qualname", as a report names what it evaluated."""
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}:{getattr(fn, '__qualname__', getattr(fn, '__name__', repr(fn)))}"
