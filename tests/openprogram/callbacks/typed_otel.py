"""What mypy sees of OtelCallback.record_evaluation: checked by test_otel_types.py, never
run. An EvalReport is what its EvaluatedReport Protocol reads, and a report that is not
one is refused (the ignore is reported unused if it is not)."""

# mypy: warn-unused-ignores, disallow-untyped-defs

from __future__ import annotations

from openprogram.callbacks.otel import OtelCallback
from openprogram.evals import EvalReport


def record(otel: OtelCallback, report: EvalReport) -> int:
    return otel.record_evaluation(report)


def refused(otel: OtelCallback) -> int:
    return otel.record_evaluation({"runs": []})  # type: ignore[arg-type]  # not a report
