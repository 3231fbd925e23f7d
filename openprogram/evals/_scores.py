"""What a scorer gives and what a report keeps of it: Score, ScoreResult, Verdict.

Owns the scorer's type (`Scorer`), the verdict a scorer returns (`Score`), the recorded
result of one scorer on one run (`ScoreResult`, bounded and cut), the judge model's
answer (`Verdict`) and the limits they keep. Data only: calling scorers is scorers.py's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from openprogram.echo import elide

__all__ = [
    "REASON_LIMIT",
    "SCORE_LIMIT",
    "TIMEOUT_S",
    "Score",
    "ScoreResult",
    "Scorer",
    "Verdict",
]

SCORE_LIMIT = 1e12
"""The largest score magnitude a report keeps: larger values (and NaN, infinity) are the
scorer's error, so sums and variances over any number of runs stay finite."""

REASON_LIMIT = 2000
"""Characters of a score's reason or error kept (the rest is cut, saying how much)."""

TIMEOUT_S = 120.0
"""Seconds a scorer (a judge's model call included) may take on one run by default."""

Scorer = Callable[..., Any]
"""`(case, output, run) -> bool | float | Score`, or `(case, output) -> ...`."""


@dataclass(frozen=True)
class Score:
    """A scorer's verdict with its reason: `value` is a bool (pass/fail) or a number
    (higher is better; 0..1 reads best in reports)."""

    value: bool | float
    reason: str | None = None


class ScoreResult(BaseModel):
    """One scorer's result on one run: `value` (bools as 1.0/0.0), why, or the error the
    scorer raised (then `value` is None). `function` is the function scored (None: the
    case's own call); `binary` says the scorer answered pass/fail."""

    scorer: str
    function: str | None = None
    value: float | None = None
    binary: bool = False
    reason: str | None = None
    error: str | None = None

    @field_validator("value")
    @classmethod
    def _bounded(cls, value: float | None) -> float | None:
        if value is not None and not (math.isfinite(value) and abs(value) <= SCORE_LIMIT):
            raise ValueError(f"a score is a finite number within ±{SCORE_LIMIT:g}, not {value!r}")
        return value

    @field_validator("reason", "error")
    @classmethod
    def _cut(cls, text: str | None) -> str | None:
        return None if text is None else elide(str(text), REASON_LIMIT)

    @property
    def key(self) -> str:
        """How the report names this score: `scorer`, or `function/scorer`."""
        return self.scorer if self.function is None else f"{self.function}/{self.scorer}"


class Verdict(BaseModel):
    """What a judge model answers: pass or fail, and why."""

    model_config = ConfigDict(strict=True)  # "passed": "yes" (or 1, "true") is no verdict

    passed: bool
    reason: str
