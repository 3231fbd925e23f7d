"""OtelCallback.record_evaluation as a type checker sees it: an EvalReport is what its
EvaluatedReport Protocol reads, anything else is refused (mypy over typed_otel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.typing_check import mypy_reports


@pytest.mark.slow
def test_record_evaluation_takes_an_eval_report_to_mypy() -> None:
    assert mypy_reports(Path(__file__).with_name("typed_otel.py")) == ""
