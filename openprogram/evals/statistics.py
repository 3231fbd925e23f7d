"""The statistics an eval decision needs: a mean with its interval, and paired tests.

Owns summarize (mean and 95% interval of one scorer over cases), the exact sign test and
the paired bootstrap that compare.py uses. Standard library only, seeded, so a report
says the same thing every time it is read.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Summary", "paired_bootstrap", "sign_test", "summarize"]

_Z = 1.959963984540054  # the normal quantile of a two-sided 95% interval
# two-sided 95% quantiles of Student's t for 1..30 degrees of freedom
_T = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179,
      2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
      2.060, 2.056, 2.052, 2.048, 2.045, 2.042)  # fmt: skip


@dataclass(frozen=True)
class Summary:
    """One scorer over a report: the `mean` of its case means, a 95% interval
    [`low`, `high`], `n` cases scored, and how many runs' scorers raised (`errors`)."""

    mean: float | None
    low: float | None
    high: float | None
    n: int
    errors: int = 0
    method: str = ""


def summarize(values: Sequence[float], *, binary: bool, errors: int = 0) -> Summary:
    """Mean and 95% interval of per-case values (each case's mean over its repeats).

    binary: the values are pass rates; when each is 0 or 1 the Wilson score interval
    is used (right at 0/10 or 10/10, where a normal interval collapses); otherwise
    Student's t over the case means (repeats of a case are not independent cases),
    kept within [0, 1] for pass rates."""
    n = len(values)
    if n == 0:
        return Summary(None, None, None, 0, errors, "")
    mean = math.fsum(values) / n
    if binary and all(v in (0.0, 1.0) for v in values):
        centre = (mean + _Z**2 / (2 * n)) / (1 + _Z**2 / n)
        half = _Z * math.sqrt(mean * (1 - mean) / n + _Z**2 / (4 * n * n)) / (1 + _Z**2 / n)
        low = 0.0 if mean == 0 else max(0.0, centre - half)  # exact at the edges
        high = 1.0 if mean == 1 else min(1.0, centre + half)
        return Summary(mean, low, high, n, errors, "wilson")
    if n == 1:
        return Summary(mean, None, None, 1, errors, "")
    variance = math.fsum((v - mean) ** 2 for v in values) / (n - 1)
    quantile = _T[n - 2] if n - 1 <= len(_T) else _Z
    half = quantile * math.sqrt(variance / n)
    if binary:  # pass rates: the interval never leaves [0, 1]
        return Summary(mean, max(0.0, mean - half), min(1.0, mean + half), n, errors, "t")
    return Summary(mean, mean - half, mean + half, n, errors, "t")


def sign_test(improved: int, regressed: int) -> float:
    """The exact two-sided sign test's p-value for paired cases that changed: how likely
    a split at least this uneven is when neither version is better (ties left out)."""
    n = improved + regressed
    if n == 0:
        return 1.0
    k = min(improved, regressed)
    tail = math.fsum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def paired_bootstrap(
    differences: Sequence[float], *, resamples: int = 2000, seed: int = 0
) -> tuple[float, float, float, float]:
    """The mean paired difference, its 95% percentile interval from `resamples` bootstrap
    resamples of the cases, and a two-sided p-value (twice the share of resampled means
    on the far side of zero). Seeded: the same data gives the same answer."""
    n = len(differences)
    if n == 0:
        return 0.0, 0.0, 0.0, 1.0
    mean = math.fsum(differences) / n
    if all(d == differences[0] for d in differences):
        return mean, mean, mean, 1.0 if mean == 0 else 0.0
    rng = random.Random(seed)
    means = sorted(math.fsum(rng.choices(differences, k=n)) / n for _ in range(resamples))
    low = means[int(0.025 * resamples)]
    high = means[min(resamples - 1, int(0.975 * resamples))]
    below = sum(1 for m in means if m <= 0) / resamples
    above = sum(1 for m in means if m >= 0) / resamples
    return mean, low, high, min(1.0, 2 * min(below, above))
