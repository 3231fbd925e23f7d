"""Evals: datasets made from recorded runs, scorers that see what every call saw, and
reports compared with statistics. Start at Dataset.evaluate (docs/evals.md)."""

from openprogram.evals._scores import Score, ScoreResult
from openprogram.evals.compare import CaseChange, Comparison, ScoreChange
from openprogram.evals.dataset import Case
from openprogram.evals.evaluation import Dataset, EvalReport
from openprogram.evals.report import RunResult
from openprogram.evals.run import Run, ToolUse
from openprogram.evals.scorers import (
    contains,
    equals,
    llm_judge,
    matches_schema,
    max_cost,
    max_latency,
    no_loop,
)
from openprogram.evals.statistics import Summary

__all__ = [  # noqa: RUF022 - grouped by topic, as STYLE.md asks
    # datasets
    "Case",
    "Dataset",
    # scoring
    "Score",
    "ScoreResult",
    "Run",
    "ToolUse",
    "equals",
    "contains",
    "matches_schema",
    "max_cost",
    "max_latency",
    "llm_judge",
    "no_loop",
    # reports
    "EvalReport",
    "RunResult",
    "Summary",
    "Comparison",
    "ScoreChange",
    "CaseChange",
]
