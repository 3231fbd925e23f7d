"""Comparing two eval reports: paired by case, with the significance a decision needs.

Owns Comparison and ScoreChange: for each score both reports have, the paired mean
difference with a bootstrap interval, an exact sign test over the cases that changed,
and which cases improved or regressed. Start at compare().
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from openprogram.echo import elide
from openprogram.errors import UsageError
from openprogram.evals.statistics import paired_bootstrap, sign_test

if TYPE_CHECKING:
    from openprogram.evals.report import EvalReport

__all__ = ["Comparison", "ScoreChange", "compare"]


@dataclass(frozen=True)
class ScoreChange:
    """One score, baseline against candidate, over the `n` cases both scored.

    `difference`: candidate mean minus baseline mean over those cases, with a 95%
    paired-bootstrap interval [`low`, `high`]. `p_value`: the exact sign test's over
    the cases whose value changed (`improved` and `regressed` name them, largest change
    first). `significant`: p_value < alpha.
    """

    key: str
    n: int
    baseline: float
    candidate: float
    difference: float
    low: float
    high: float
    p_value: float
    significant: bool
    improved: list[str] = field(default_factory=list)
    regressed: list[str] = field(default_factory=list)

    @property
    def flipped(self) -> list[str]:
        """The cases whose value changed either way (for pass/fail scores: flipped)."""
        return [*self.regressed, *self.improved]


@dataclass(frozen=True)
class Comparison:
    """Baseline report against candidate report, score by score (`changes`)."""

    baseline: str
    candidate: str
    changes: dict[str, ScoreChange]
    alpha: float
    only_baseline: list[str] = field(default_factory=list)
    only_candidate: list[str] = field(default_factory=list)

    def __getitem__(self, key: str) -> ScoreChange:
        return self.changes[key]

    @property
    def regressions(self) -> list[ScoreChange]:
        """The scores that got significantly worse."""
        return [c for c in self.changes.values() if c.significant and c.difference < 0]

    def table(self, *, width: int = 100) -> str:
        """The comparison as text: one line per score, then the cases that flipped."""
        lines = [f"{self.baseline}  ->  {self.candidate}"]
        name_width = min(48, max([5, *(len(k) for k in self.changes)]))
        lines.append(
            f"{'score':<{name_width}}  {'before':>6}  {'after':>6}  {'change':>7}  "
            f"{'95% interval':<17}  {'p':>6}  cases"
        )
        for key, c in self.changes.items():
            mark = " *" if c.significant else ""
            lines.append(
                f"{elide(key, name_width):<{name_width}}  {c.baseline:6.3f}  {c.candidate:6.3f}  "
                f"{c.difference:+7.3f}  [{c.low:+.3f}, {c.high:+.3f}]  {c.p_value:6.3f}  "
                f"{c.n}{mark}"
            )
        for key, c in self.changes.items():
            if c.regressed:
                shown = elide(", ".join(c.regressed), width - len(key) - 16)
                lines.append(f"{key}: worse on {len(c.regressed)}: {shown}")
            if c.improved:
                shown = elide(", ".join(c.improved), width - len(key) - 16)
                lines.append(f"{key}: better on {len(c.improved)}: {shown}")
        if self.only_baseline or self.only_candidate:
            lines.append(
                f"not paired: {len(self.only_baseline)} cases only in the baseline, "
                f"{len(self.only_candidate)} only in the candidate"
            )
        lines.append(f"* significant at p < {self.alpha:g} (sign test over the changed cases)")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def compare(baseline: EvalReport, candidate: EvalReport, *, alpha: float = 0.05) -> Comparison:
    """Pair the two reports' cases by name and compare every score both have.

    Raises UsageError when they share no case (two different datasets)."""
    if not 0 < alpha < 1:
        raise UsageError(f"alpha={alpha!r} must be between 0 and 1, e.g. 0.05")
    before_cases = {run.case for run in baseline.runs}
    after_cases = {run.case for run in candidate.runs}
    shared = before_cases & after_cases
    if not shared:
        raise UsageError(
            f"reports {baseline.name!r} and {candidate.name!r} share no case: compare runs "
            "of one dataset (cases are paired by name)"
        )
    changes = {}
    for key in [k for k in baseline.keys if k in candidate.keys]:
        before, after = baseline.case_values(key), candidate.case_values(key)
        cases = sorted(c for c in shared if c in before and c in after)
        if not cases:
            continue
        differences = [after[c] - before[c] for c in cases]
        mean, low, high, _ = paired_bootstrap(differences)
        moved = sorted(
            ((after[c] - before[c], c) for c in cases if after[c] != before[c]),
            key=lambda pair: -abs(pair[0]),
        )
        improved = [c for d, c in moved if d > 0]
        regressed = [c for d, c in moved if d < 0]
        p_value = sign_test(len(improved), len(regressed))
        changes[key] = ScoreChange(
            key=key,
            n=len(cases),
            baseline=sum(before[c] for c in cases) / len(cases),
            candidate=sum(after[c] for c in cases) / len(cases),
            difference=mean,
            low=low,
            high=high,
            p_value=p_value,
            significant=p_value < alpha,
            improved=improved,
            regressed=regressed,
        )
    return Comparison(
        baseline=baseline.name,
        candidate=candidate.name,
        changes=changes,
        alpha=alpha,
        only_baseline=sorted(before_cases - after_cases),
        only_candidate=sorted(after_cases - before_cases),
    )
