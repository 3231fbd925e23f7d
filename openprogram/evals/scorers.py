"""Scorers: Score, the built-in scorers, and calling a scorer safely.

A scorer is a plain function `(case, output, run) -> bool | float | Score` (it may take
just `(case, output)`). Owns the built-ins (equals, contains, matches_schema, max_cost,
max_latency, llm_judge, no_loop) and `apply`, which turns whatever a scorer returns or
raises, or a call that outlasts its deadline, into a recorded ScoreResult (Score and
ScoreResult themselves are _scores.py's, re-exported here). Start at apply().
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from openprogram.core import _secrets
from openprogram.core.values import to_jsonable
from openprogram.echo import echo, elide
from openprogram.errors import UsageError
from openprogram.evals._deadline import call_each_within
from openprogram.evals._scores import (
    REASON_LIMIT,
    SCORE_LIMIT,
    TIMEOUT_S,
    Score,
    Scorer,
    ScoreResult,
)
from openprogram.evals.dataset import Case
from openprogram.evals.run import Run

if TYPE_CHECKING:
    from openprogram.models.model import Model

__all__ = [
    "Score",
    "ScoreResult",
    "Scorer",
    "Scoring",
    "apply",
    "apply_all",
    "contains",
    "equals",
    "llm_judge",
    "matches_schema",
    "max_cost",
    "max_latency",
    "no_loop",
    "scorer_name",
]


def scorer_name(scorer: Scorer) -> str:
    """The name a scorer is reported under: its `__name__` (a built-in's shows its
    arguments, e.g. `contains('refund')`)."""
    return str(getattr(scorer, "__name__", None) or type(scorer).__name__)


def apply(
    scorer: Scorer,
    case: Case,
    output: object,
    run: Run,
    *,
    name: str,
    function: str | None = None,
    timeout: float | None = TIMEOUT_S,
) -> ScoreResult:
    """Call `scorer` on one run and record what came of it; an exception, a result that
    is not a bool or a number within ±SCORE_LIMIT or a Score, and a call that takes over
    `timeout` seconds (the scorer's own `timeout_s` attribute first, as llm_judge's;
    None: no limit) are recorded as the result's `error`."""
    return apply_all([Scoring(scorer, case, output, run, name, function)], timeout)[0]


@dataclass(frozen=True)
class Scoring:
    """One scorer call to make: the scorer, what it is given, and the name it reports."""

    scorer: Scorer
    case: Case
    output: Any
    run: Run
    name: str
    function: str | None = None


def apply_all(scorings: list[Scoring], timeout: float | None = TIMEOUT_S) -> list[ScoreResult]:
    """apply() for each scoring, in order, handed to one worker thread together (each
    still with its own deadline)."""
    calls = []
    for item in scorings:
        arguments = (item.case, item.output, item.run)[: _arity(item.scorer)]
        seconds = getattr(item.scorer, "timeout_s", timeout)
        calls.append((seconds, functools.partial(item.scorer, *arguments)))
    results = []
    for item, (returned, value) in zip(scorings, call_each_within(calls), strict=True):
        try:
            if not returned:  # a KeyboardInterrupt goes on up: not the scorer's result
                raise value
            if inspect.isawaitable(value):
                raise TypeError("it is async; write scorers as plain functions")
            results.append(_result(value, item.name, item.function))
        except Exception as exc:
            message = _secrets.scrub(f"{type(exc).__name__}: {exc}")
            results.append(
                ScoreResult(
                    scorer=item.name, function=item.function, error=elide(message, REASON_LIMIT)
                )
            )
    return results


def _arity(scorer: Scorer) -> int:
    try:
        parameters = inspect.signature(scorer).parameters.values()
    except (TypeError, ValueError):
        return 3
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind == p.VAR_POSITIONAL for p in parameters):
        return 3
    return max(1, min(3, len(positional)))


def _result(verdict: Any, name: str, function: str | None) -> ScoreResult:
    reason = None
    if isinstance(verdict, Score):
        verdict, reason = verdict.value, verdict.reason
        if reason is not None:  # cut before it is kept: a 50 MB reason is 2 000 characters
            reason = elide(str(reason), REASON_LIMIT)
    if isinstance(verdict, bool):
        return ScoreResult(
            scorer=name, function=function, value=float(verdict), binary=True, reason=reason
        )
    if isinstance(verdict, (int, float)):
        try:
            number = float(verdict)
        except OverflowError:  # an int past float's range
            number = math.inf
        if math.isfinite(number) and abs(number) <= SCORE_LIMIT:
            return ScoreResult(scorer=name, function=function, value=number, reason=reason)
        raise ValueError(
            f"returned {echo(verdict, 40)}; a score is a finite number within "
            f"±{SCORE_LIMIT:g} (or a bool)"
        )
    raise TypeError(
        f"returned {echo(verdict, 80)}; a scorer returns a bool, a finite number or "
        "Score(value, reason)"
    )


def _named(name: str) -> Callable[[Scorer], Scorer]:
    def rename(scorer: Scorer) -> Scorer:
        scorer.__name__ = scorer.__qualname__ = name
        return scorer

    return rename


def _comparable(value: Any) -> Any:
    """A value in its stored form, so a live output equals its recorded reference."""
    return to_jsonable(value, None)


# -- the built-ins ----------------------------------------------------------------------
def equals(case: Case, output: object, run: Run | None = None) -> Score:
    """Whether the output equals the case's `expected`, compared in stored form: a
    pydantic model equals the same model, and its recorded form (from_sessions)."""
    stored = _comparable(output)
    same = stored == _comparable(case.expected) or stored == case.expected
    if same:
        return Score(True)
    return Score(False, f"expected {echo(case.expected, 120)}, got {echo(output, 120)}")


def contains(text: str, *, case_sensitive: bool = True) -> Scorer:
    """A scorer: whether `text` occurs in the output (as str)."""

    def check(case: Case, output: Any) -> Score:
        shown = output if isinstance(output, str) else str(output)
        needle = text
        if not case_sensitive:
            shown, needle = shown.casefold(), needle.casefold()
        if needle in shown:
            return Score(True)
        return Score(False, f"{echo(text, 60)} not in {echo(output, 120)}")

    return _named(f"contains({elide(repr(text), 40)})")(check)


def matches_schema(schema: Any) -> Scorer:
    """A scorer: whether the output validates against `schema`, a pydantic model class,
    any type pydantic validates (`list[int]`), or a JSON schema dict."""
    if isinstance(schema, dict):
        import jsonschema

        validator = jsonschema.Draft202012Validator(schema)
        title = schema.get("title", "schema")

        def check_json(case: Case, output: Any) -> Score:
            value = output.model_dump(mode="json") if isinstance(output, BaseModel) else output
            problem = jsonschema.exceptions.best_match(validator.iter_errors(value))
            if problem is None:
                return Score(True)
            return Score(False, f"{'/'.join(map(str, problem.path)) or '(top)'}: {problem.message}")

        return _named(f"matches_schema({title})")(check_json)
    adapter: TypeAdapter[Any] = TypeAdapter(schema)
    title = getattr(schema, "__name__", str(schema))

    def check(case: Case, output: Any) -> Score:
        value = output.model_dump() if isinstance(output, BaseModel) else output
        try:
            adapter.validate_python(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(map(str, error["loc"])) or "(top)"
            return Score(False, f"{where}: {error['msg']}")
        return Score(True)

    return _named(f"matches_schema({title})")(check)


def max_cost(usd: float) -> Scorer:
    """A scorer: whether the run's model exchanges cost at most `usd` dollars."""

    def check(case: Case, output: Any, run: Run) -> Score:
        cost = run.cost
        return Score(cost <= usd, f"cost ${cost:.6f} (limit ${usd:g})")

    return _named(f"max_cost({usd:g})")(check)


def max_latency(seconds: float) -> Scorer:
    """A scorer: whether the case's call took at most `seconds`."""

    def check(case: Case, output: Any, run: Run) -> Score:
        took = run.latency_s
        return Score(took <= seconds, f"took {took:.3f} s (limit {seconds:g} s)")

    return _named(f"max_latency({seconds:g})")(check)


def llm_judge(
    rubric: str,
    *,
    model: str | Model | None = None,
    name: str = "llm_judge",
    timeout: float | None = TIMEOUT_S,
) -> Scorer:
    """A scorer that asks a model whether the output meets `rubric`.

    The question is the recorded agentic function `judge` (openprogram.evals.judge): its
    call and exchange land in the case's session after the case's own call, so a
    verdict can be inspected like any call. model: a litellm model string or a Model
    object (default: the case run's model). timeout: seconds the verdict may take (None:
    no limit). A missing key, an unknown model, an unparseable verdict or one past the
    timeout is that score's recorded error, never the eval's crash.
    """

    from openprogram.evals.judge import judge  # the agentic runtime, on first use

    def check(case: Case, output: Any, run: Run) -> Score:
        from openprogram.runtime.runtime import Runtime

        inputs = case.inputs if case.turns is None else case.turns  # a conversation's turns
        arguments = dict(rubric=rubric, inputs=inputs, expected=case.expected, output=output)
        if model is None:
            verdict = judge(**arguments)
        else:
            with Runtime(model):
                verdict = judge(**arguments)
        return Score(verdict.passed, verdict.reason)

    check.timeout_s = timeout  # type: ignore[attr-defined]  # apply() reads it
    return _named(name)(check)


def no_loop(times: int = 3) -> Scorer:
    """A scorer: whether the run never got stuck in a loop, i.e. no function or tool was
    called `times` or more times with the same input inside the case's call (its DAG).
    The reason names the call and its input."""
    if not isinstance(times, int) or isinstance(times, bool) or times < 2:
        raise UsageError(f"no_loop(times={times!r}): times is an integer >= 2")

    def check(case: Case, output: Any, run: Run) -> Score:
        counts: dict[tuple[str, str], int] = {}
        for node in run.calls():
            key = (node.name, _secrets.scrub(_canonical(node.input)))
            counts[key] = counts.get(key, 0) + 1
        (call, given), count = max(counts.items(), key=lambda item: item[1], default=(("", ""), 0))
        if count < times:
            return Score(True)
        return Score(
            False, f"{call} was called {count} times with the same input {elide(given, 200)}"
        )

    return _named(f"no_loop({times})")(check)


def _canonical(value: Any) -> str:
    import json

    try:
        return json.dumps(to_jsonable(value, None), sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)
