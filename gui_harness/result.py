"""GuiResult: what a gui_agent run returns.

Owns the result record (success, summary, why it stopped, the steps, usage, session)
and its notebook view. Built by agent.py at the end of a run.
"""

from __future__ import annotations

import html
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from openprogram.usage import Usage

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

    def _repr_html_(self) -> str:
        """The step table, then the run's call tree (with screenshot thumbnails and what
        every model call saw) when the run's DAG is at hand."""
        page = self._steps_html()
        if self._dag is not None:
            from openprogram.display.html import dag_html

            page += dag_html(
                self._dag,
                focus=self._node_id,
                title="gui_agent run",
                facts={"success": self.success, "stop reason": self.stop_reason},
            )
        return page

    def _steps_html(self) -> str:
        colour = "#1a7f37" if self.success else "#cf222e"
        rows = "".join(
            "<tr>"
            f"<td>{step.get('step')}</td>"
            f"<td>{html.escape(str(step.get('goal', '')))}</td>"
            f"<td><code>{html.escape(json.dumps(step.get('action')))}</code></td>"
            f"<td>{html.escape(str(step.get('status', '')))}</td>"
            f"<td>{html.escape(str(step.get('error') or ''))}</td>"
            "</tr>"
            for step in self.steps
        )
        return (
            '<div style="font:13px/1.4 ui-monospace,monospace">'
            f'<div><b style="color:{colour}">{"success" if self.success else "no success"}</b>'
            f" — stopped: {self.stop_reason}"
            f"{' (' + html.escape(self.detail) + ')' if self.detail else ''}</div>"
            f"<p>{html.escape(self.summary)}</p>"
            "<table><tr><th>step</th><th>goal</th><th>action</th><th>status</th><th>error</th></tr>"
            f"{rows}</table>"
            f"<div>{self.usage.calls} model calls, {self.usage.total_tokens} tokens, "
            f"${self.usage.cost_usd:.4f}</div></div>"
        )
