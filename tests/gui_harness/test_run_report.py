"""The HTML report of a GUI run opens with a heading, the task, the outcome and the
final screen, before the steps and the call tree (also from a reopened session)."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

from PIL import Image as PILImage

from gui_harness.agent import gui_agent
from gui_harness.demo.policy import BASIC_TASK, demo_policy
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.run import write_run_report
from openprogram import Runtime, ScriptedModel, Session


def test_the_report_opens_with_heading_task_outcome_and_final_screen(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    desktop = FakeDesktop.demo_form()
    with Session(store) as session, Runtime(ScriptedModel(demo_policy)):
        result = gui_agent(BASIC_TASK, max_steps=6, desktop=desktop, settle_timeout=0.2)
    with Session.open(store, session.id) as reopened:
        write_run_report(tmp_path / "report.html", reopened, result)
        last = reopened.dag.find(name="observe", kind="code")[-1]
        final = reopened.dag.image(last.output["screenshot"]).pil
    page = (tmp_path / "report.html").read_text(encoding="utf-8")

    order = [
        page.index("<h1>gui_agent succeeded</h1>"),
        page.index(f"<b>Task:</b> {BASIC_TASK}"),
        page.index("<b>Outcome:</b> succeeded; stopped: done"),
        page.index('<img alt="the final screen"'),
        page.index("<th>step</th>"),
    ]
    assert order == sorted(order)
    encoded = re.search(r'alt="the final screen"[^>]*src="data:image/png;base64,([^"]+)"', page)
    assert encoded is not None
    shown = PILImage.open(io.BytesIO(base64.b64decode(encoded.group(1)))).convert("RGB")
    assert shown.size == final.size
    assert shown.tobytes() == final.convert("RGB").tobytes()  # the last step's screen
