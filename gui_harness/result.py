"""GuiResult: what a gui_agent run returns.

Owns the result record (success, summary, why it stopped, the steps, usage, session)
and its notebook view (templates/run.html.j2 and steps.html.j2, rendered through
openprogram.pages). Built by agent.py at the end of a run.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from openprogram.core.image import ImageRef
from openprogram.core.usage import Usage
from openprogram.pages import render

__all__ = ["GuiResult", "StopReason"]

StopReason = Literal["done", "fail", "max_steps", "timeout", "stopped", "error", "waiting"]
"""done/fail: the model ended the run (done only when verified); max_steps, timeout: a
limit was reached; stopped: a callback gate ended it; error: a fatal error; waiting: an
ask_user (e.g. the policy's confirm hook) awaits an answer, and the run is recorded
`waiting`: answer it and re-run under Session.open(..., resume=True) to go on."""


class GuiResult(BaseModel):
    """The outcome of gui_agent: `success` is True only for a verified done."""

    success: bool
    summary: str
    stop_reason: StopReason
    detail: str | None = None
    steps: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    session_id: str | None = None
    _dag: Any = PrivateAttr(default=None)
    _node_id: str | None = PrivateAttr(default=None)

    @property
    def node_id(self) -> str | None:
        """The id of the run's gui_agent node in its session's DAG (None when the result
        was not made by a run, e.g. rebuilt from a stored value)."""
        return self._node_id

    def bind_run(self, dag: Any, node_id: str | None) -> None:
        """Keep the run's DAG and its gui_agent node `node_id`, for the notebook view
        (agent.py does at the end of a run)."""
        self._dag = dag
        self._node_id = node_id

    def report_html(self, dag: Any, run_id: str | None) -> str:
        """What a run's HTML report opens with: a heading, the task, the outcome and the
        final screen (of the gui_agent node `run_id` in `dag`), then the step table."""
        return self._report_head(dag, run_id) + self._steps_html()

    def _repr_html_(self) -> str:
        """The step table, then the run's call tree (with screenshot thumbnails and what
        every model call saw) when the run's DAG is at hand."""
        page = self._steps_html(styled=self._dag is None)  # a DAG view carries the stylesheet
        if self._dag is not None:
            from openprogram.display.html import dag_html

            page += dag_html(
                self._dag,
                focus=self._node_id,
                title="gui_agent run",
                facts={"success": self.success, "stop reason": self.stop_reason},
            )
        return page

    def _report_head(self, dag: Any, run_id: str | None) -> str:
        """What a run's report opens with: a heading, the task, the outcome, the final
        screen (the last screenshot of the run, at most 960 pixels wide)."""
        run = dag.get(run_id) if run_id else None
        task = run.input.get("task") if run is not None and isinstance(run.input, dict) else None
        outcome = "succeeded" if self.success else "did not succeed"
        return render(
            "gui_harness:templates/run.html.j2",
            outcome=outcome,
            task=str(task or "(not recorded)"),
            stop_reason=self.stop_reason,
            detail=f" ({self.detail})" if self.detail else "",
            steps=len(self.steps),
            summary=self.summary,
            screen=_last_screen(dag, run),
        )

    def _steps_html(self, *, styled: bool = False) -> str:
        """The steps as a table, with the outcome and usage; `styled`: the stylesheet
        inline (a notebook cell without the DAG view)."""
        return render(
            "gui_harness:templates/steps.html.j2",
            styled=styled,
            success=self.success,
            stop_reason=self.stop_reason,
            detail=self.detail,
            summary=self.summary,
            steps=[
                {
                    "step": step.get("step"),
                    "goal": str(step.get("goal", "")),
                    "action": json.dumps(step.get("action")),
                    "status": str(step.get("status", "")),
                    "error": str(step.get("error") or ""),
                }
                for step in self.steps
            ],
            calls=self.usage.calls,
            tokens=self.usage.total_tokens,
            cost=f"{self.usage.cost_usd:.4f}",
        )


def _last_screen(dag: Any, run: Any) -> str | None:
    """The last screenshot the run recorded (an observation's, not the marked copy an
    llm call was sent), as a PNG data URL; None without one."""
    if run is None:
        return None
    nodes = [n for n in dag.nodes if n.kind == "code" and _within(dag, n, run.id)]
    for node in sorted(nodes, key=lambda n: n.seq, reverse=True):
        for value in (node.output, node.input):
            sha = _last_image(value)
            if sha is not None:
                return _data_url(dag.image(sha).pil)
    return None


def _within(dag: Any, node: Any, ancestor: str) -> bool:
    parent = node.parent
    while parent is not None:
        if parent == ancestor:
            return True
        parent = dag.node(parent).parent
    return False


def _last_image(value: Any) -> str | None:
    """The sha256 of the last image reference inside a stored value."""
    if isinstance(value, dict):
        if isinstance(value.get("$image"), str):  # as a reopened session stores it
            return str(value["$image"])
        for item in reversed(list(value.values())):
            found = _last_image(item)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for item in reversed(value):
            found = _last_image(item)
            if found is not None:
                return found
    elif isinstance(value, ImageRef):
        return value.sha256
    return None


def _data_url(pil: Any, max_width: int = 960) -> str:
    import base64
    import io

    if pil.width > max_width:
        pil = pil.resize((max_width, round(pil.height * max_width / pil.width)))
    buffer = io.BytesIO()
    pil.convert("RGB").save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
