"""The pytest plugin of openprogram.evals: the `check_eval` fixture and the `eval` marker.

Registered as the pytest11 entry point `openprogram-evals` (or load it with
`-p openprogram.evals.pytest_plugin`). A test evaluates, then `check_eval(report)`
fails it when a score's mean is below the threshold, printing the worst cases.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

__all__ = ["check_eval", "pytest_configure"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "eval(threshold=1.0, worst=5): the threshold check_eval applies in this test "
        "(a number for every score, or {score: minimum})",
    )


@pytest.fixture
def check_eval(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """`check_eval(report, threshold=None, *, worst=None)`: fail the test when a score's
    mean is below the threshold (default: the test's `@pytest.mark.eval(threshold=...)`,
    else 1.0), with the report's table and each failing score's worst cases; returns the
    report otherwise."""
    marker = request.node.get_closest_marker("eval")
    options = dict(marker.kwargs) if marker is not None else {}

    def check(
        report: Any,
        threshold: float | Mapping[str, float] | None = None,
        *,
        worst: int | None = None,
    ) -> Any:
        chosen = threshold if threshold is not None else options.get("threshold", 1.0)
        count = worst if worst is not None else int(options.get("worst", 5))
        message = None
        try:
            report.check(chosen, worst=count)
        except AssertionError as exc:
            message = str(exc)
        if message is not None:  # outside the except: the failure is printed once
            pytest.fail(message, pytrace=False)
        return report

    return check
