"""Comparing two eval reports: paired by case, with the significance a decision needs.

Owns Comparison and ScoreChange: for each score both reports have, the paired mean
difference with a bootstrap interval, an exact sign test over the cases that changed,
which cases improved or regressed (each case's runs before → after, CaseChange), and
the statistics said in words (ScoreChange.explain). Start at compare().
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass, field

from openprogram.echo import elide, printable
from openprogram.errors import UsageError
from openprogram.evals.report import ReportData, RunResult
from openprogram.evals.statistics import paired_bootstrap, sign_test

__all__ = ["CaseChange", "Comparison", "ScoreChange", "compare", "marks"]

PASS, FAIL, ERROR, MISSING = "✔", "✗", "!", "·"


def marks(values: list[float | str | None]) -> str:
    """A case's runs of one score as marks, one per repeat: ✔ pass, ✗ fail, ! the
    scorer's error, · not scored; a score that is not pass/fail as its value (0.75)."""
    shown = []
    for value in values:
        if isinstance(value, str):
            shown.append(ERROR)
        elif value is None:
            shown.append(MISSING)
        elif value == 1.0:
            shown.append(PASS)
        elif value == 0.0:
            shown.append(FAIL)
        else:
            shown.append(f"{value:.2g} " if len(values) > 1 else f"{value:.2g}")
    return "".join(shown).strip()


@dataclass(frozen=True)
class CaseChange:
    """One case of both reports: its runs of each score before and after as marks
    (`before["equals"] == "✗✗✗"`, `after["equals"] == "✔✔✔"`), and per score whether
    its mean went up ("better"), down ("worse") or stayed ("same"; "" when unpaired)."""

    case: str
    before: dict[str, str]
    after: dict[str, str]
    moved: dict[str, str]

    @property
    def changed(self) -> bool:
        """Whether any score of the case went up or down."""
        return any(m in ("better", "worse") for m in self.moved.values())


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

    def explain(self, alpha: float = 0.05) -> str:
        """The comparison of this score in words: what moved, what the sign test asks,
        why the change is (not) significant, and how many changed cases it would take."""
        up, down = len(self.improved), len(self.regressed)
        moved, same = up + down, self.n - up - down
        parts = [
            f"Over the {self.n} cases both versions scored, the mean went from "
            f"{self.baseline:.3f} to {self.candidate:.3f} ({self.difference:+.3f}); "
            f"resampling those cases 2 000 times puts the change between "
            f"{self.low:+.3f} and {self.high:+.3f} (95%)"
            + ("." if self.low > 0 or self.high < 0 else ", an interval that holds 0 (no change).")
        ]
        if moved == 0:
            parts.append("No case changed, so nothing says either version is better (p = 1).")
            return " ".join(parts)
        parts.append(
            f"{up} {_cases(up)} improved, {down} regressed and {same} did not change. The "
            f"sign test looks only at the {moved} that changed (an unchanged case says "
            "nothing about which version is better): if neither version were better, "
            "each would go up or down as a coin falls, and a split at least as uneven as "
            f"{up} up / {down} down comes out with probability p = {self.p_value:.3g}."
        )
        if self.p_value < alpha:
            parts.append(f"That is below {alpha:g}: the change is significant.")
            return " ".join(parts)
        parts.append(f"That is not below {alpha:g}, so the change is not significant: "
                     "chance alone gives such a split too often.")  # fmt: skip
        if self.low > 0 or self.high < 0:
            parts.append(
                f"(The interval above leaves 0 out, but resampling only {self.n} cases "
                "understates chance; the verdict is the sign test's exact one.)"
            )
        needed = _needed(up, down, alpha)
        if needed is None:
            parts.append(
                "An even split stays not significant however many cases change; only a "
                "lopsided one can show a difference."
            )
        else:
            share = "every one" if min(up, down) == 0 else f"{max(up, down)} in {moved}"
            parts.append(
                f"With the same share ({share} going the same way), {needed} changed "
                f"cases would be needed to reach p < {alpha:g} (here {moved} changed); "
                "more cases would tell."
            )
        return " ".join(parts)


def _cases(count: int) -> str:
    return "case" if count == 1 else "cases"


def _needed(up: int, down: int, alpha: float) -> int | None:
    """The fewest changed cases at which the observed share of the larger side gives a
    sign test below `alpha` (None: an even split, which never does)."""
    moved = up + down
    share = max(up, down) / moved
    if share <= 0.5:
        return None
    for count in range(moved + 1, 100_001):
        larger = math.floor(share * count + 1e-9)
        if sign_test(larger, count - larger) < alpha:
            return count
    return None


@dataclass(frozen=True)
class Comparison:
    """Baseline report against candidate report, score by score (`changes`)."""

    baseline: str
    candidate: str
    changes: dict[str, ScoreChange]
    alpha: float
    only_baseline: list[str] = field(default_factory=list)
    only_candidate: list[str] = field(default_factory=list)
    cases: list[CaseChange] = field(default_factory=list)
    uncompared: list[str] = field(default_factory=list)
    """Scores both reports have that could not be compared: no case has a value of it in
    both (e.g. every run of one of them a scorer error, or NaN). A CI gate fails on these."""
    dropped: list[str] = field(default_factory=list)
    """Scores of the baseline the candidate does not have (not scored this time)."""

    def __getitem__(self, key: str) -> ScoreChange:
        return self.changes[key]

    @property
    def regressions(self) -> list[ScoreChange]:
        """The scores that got significantly worse."""
        return [c for c in self.changes.values() if c.significant and c.difference < 0]

    def table(self, *, width: int = 100, cases: int = 20, explain: bool = True) -> str:
        """The comparison as text: one line per score; each case that changed (at most
        `cases` of them) as its runs before → after; each score's statistics in words."""
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
        changed = [c for c in self.cases if c.changed]
        if changed and cases > 0:
            case_width = min(40, max(len(c.case) for c in changed[:cases]))
            lines.append("changed cases (runs before -> after):")
            for change in changed[:cases]:
                shown = "  ".join(
                    f"{key} {change.before.get(key) or MISSING} -> "
                    f"{change.after.get(key) or MISSING}"
                    for key, moved in change.moved.items()
                    if moved in ("better", "worse")
                )
                name = printable(elide(change.case, case_width), newlines=False)
                lines.append(f"  {name:<{case_width}}  {shown}")
            if len(changed) > cases:
                lines.append(f"  ... and {len(changed) - cases} more")
        if self.only_baseline or self.only_candidate:
            lines.append(
                f"not paired: {len(self.only_baseline)} cases only in the baseline, "
                f"{len(self.only_candidate)} only in the candidate"
            )
        for key in self.uncompared:
            lines.append(f"{key}: NOT COMPARED: no case has a value of it in both reports")
        if self.dropped:
            lines.append(f"not scored in the candidate: {', '.join(self.dropped)}")
        lines.append(f"* significant at p < {self.alpha:g} (sign test over the changed cases)")
        if explain:
            for key, c in self.changes.items():
                lines.append("")
                lines.extend(textwrap.wrap(f"{key}: {c.explain(self.alpha)}", width))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


def compare(baseline: ReportData, candidate: ReportData, *, alpha: float = 0.05) -> Comparison:
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
    uncompared: list[str] = []
    for key in [k for k in baseline.keys if k in candidate.keys]:
        before, after = baseline.case_values(key), candidate.case_values(key)
        cases = sorted(c for c in shared if c in before and c in after)
        if not cases:
            uncompared.append(key)
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
        cases=_case_changes(baseline, candidate, changes),
        uncompared=uncompared,
        dropped=[k for k in baseline.keys if k not in candidate.keys],
    )


def _case_changes(
    baseline: ReportData, candidate: ReportData, changes: dict[str, ScoreChange]
) -> list[CaseChange]:
    """Every case of the candidate (in its dataset's order, then any other), its runs'
    marks in both reports; the cases that changed first, regressions before gains."""
    old_runs, new_runs = _by_case(baseline), _by_case(candidate)
    order = [c.name for c in candidate.dataset.cases if c.name in new_runs]
    old_keys, new_keys = baseline.keys, candidate.keys
    found = []
    for case in dict.fromkeys([*order, *new_runs]):
        before = {k: marks(_values(old_runs.get(case, []), k)) for k in old_keys}
        after = {k: marks(_values(new_runs.get(case, []), k)) for k in new_keys}
        moved = {}
        for key in {**before, **after}:
            change = changes.get(key)
            if change is None:
                moved[key] = ""
            elif case in change.improved:
                moved[key] = "better"
            elif case in change.regressed:
                moved[key] = "worse"
            else:
                moved[key] = "same"
        found.append(CaseChange(case, before, after, moved))
    rank = {"worse": 0, "better": 1}
    found.sort(key=lambda c: min((rank.get(m, 2) for m in c.moved.values()), default=2))
    return found


def _by_case(report: ReportData) -> dict[str, list[RunResult]]:
    """The report's runs by case, each case's in repeat order."""
    runs: dict[str, list[RunResult]] = {}
    for run in sorted(report.runs, key=lambda r: r.repeat):
        runs.setdefault(run.case, []).append(run)
    return runs


def _values(runs: list[RunResult], key: str) -> list[float | str | None]:
    """Each run (by repeat) on score `key`: its value, None, or its error."""
    values: list[float | str | None] = []
    for run in runs:
        score = run.score(key)
        values.append(None if score is None else (score.error or score.value))
    return values
