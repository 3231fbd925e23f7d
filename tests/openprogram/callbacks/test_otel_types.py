"""OtelCallback.record_evaluation as a type checker sees it: an EvalReport is what its
EvaluatedReport Protocol reads, anything else is refused (mypy over typed_otel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.typing_check import TYPED_CALLS, mypy_reports


@pytest.mark.slow
@pytest.mark.xdist_group(TYPED_CALLS)  # one mypy run for every typed file (typing_check)
@pytest.mark.timeout(960)
def test_record_evaluation_takes_an_eval_report_to_mypy() -> None:
    assert mypy_reports(Path(__file__).with_name("typed_otel.py")) == ""
