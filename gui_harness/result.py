"""GuiResult: what a gui_agent run returns.

Owns the result record (success, summary, why it stopped, the steps, usage, session)
and its notebook view. Built by agent.py at the end of a run.
"""

from __future__ import annotations

import html
import json
from typing import Any, Literal

from pydantic import BaseModel, Field, PrivateAttr

from openprogram.core.image import ImageRef
from openprogram.core.usage import Usage

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

    def _report_head(self, dag: Any, run_id: str | None) -> str:
        """What a run's report opens with: a heading, the task, the outcome, the final
        screen (the last screenshot of the run, at most 960 pixels wide)."""
        run = dag.get(run_id) if run_id else None
        task = run.input.get("task") if run is not None and isinstance(run.input, dict) else None
        outcome = "succeeded" if self.success else "did not succeed"
        detail = f" ({self.detail})" if self.detail else ""
        parts = [
            '<section class="gui-run" style="font:14px/1.5 system-ui,sans-serif">',
            f"<h1>gui_agent {outcome}</h1>",
            f"<p><b>Task:</b> {html.escape(str(task or '(not recorded)'))}</p>",
            f"<p><b>Outcome:</b> {outcome}; stopped: {html.escape(self.stop_reason)}"
            f"{html.escape(detail)} after {len(self.steps)} step(s). "
            f"{html.escape(self.summary)}</p>",
        ]
        screen = _last_screen(dag, run)
        if screen is not None:
            parts.append(
                f'<figure><img alt="the final screen" style="max-width:100%;border:1px solid '
                f'#ccc" src="{screen}"><figcaption>The final screen</figcaption></figure>'
            )
        parts.append("</section>")
        return "".join(parts)

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
