"""GuiResult's views render through openprogram.pages: a `<script>` in a step's goal,
action or error, a summary or a task shows as text."""

from __future__ import annotations

from gui_harness.result import GuiResult
from openprogram import ContextDAG

EVIL = "<script>alert(1)</script>"
SHOWN = "&lt;script&gt;alert(1)&lt;/script&gt;"


def _escaped(page: str) -> None:
    assert EVIL not in page and "<script>alert" not in page and SHOWN in page


def test_a_runs_steps_and_head_escape_what_the_run_recorded():
    step = {"step": 1, "goal": EVIL, "action": {"type": EVIL}, "status": EVIL, "error": EVIL}
    result = GuiResult(success=False, summary=EVIL, stop_reason="fail", detail=EVIL, steps=[step])
    dag = ContextDAG()
    run = dag.add("code", "gui_agent", input={"task": EVIL})

    _escaped(result._repr_html_())  # no DAG at hand: the steps, with the stylesheet
    assert "<style>" in result._repr_html_()
    _escaped(result._report_head(dag, run.id))
