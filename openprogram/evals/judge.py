"""judge: the recorded agentic function an llm_judge scorer asks.

Owns the judge's prompt and its verdict's shape. Each verdict is one code node `judge`
with one llm exchange, so it can be read back like any call (scorers.py builds the
scorer around it).
"""

from __future__ import annotations

import json
from typing import Any

from openprogram.agentic.function import agentic_function
from openprogram.evals.scorers import Verdict
from openprogram.runtime.runtime import llm

__all__ = ["JUDGE_SYSTEM", "judge"]

JUDGE_SYSTEM = (
    "You grade one output of a program against a rubric. Answer only with JSON: "
    '{"passed": true or false, "reason": "one sentence"}.'
)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


@agentic_function(render_range={"callers": 0}, system=JUDGE_SYSTEM)
def judge(rubric: str, inputs: Any, expected: Any, output: Any) -> Verdict:
    """Whether `output` meets `rubric`, given the case's inputs and expected output."""
    lines = [f"Rubric: {rubric}", f"Inputs: {_json(inputs)}"]
    if expected is not None:
        lines.append(f"Expected (reference): {_json(expected)}")
    lines.append(f"Output: {_json(output)}")
    return llm("\n".join(lines), response_format=Verdict)
