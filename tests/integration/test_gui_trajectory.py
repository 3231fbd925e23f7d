"""A GUI run with TrajectorySaver and BudgetManager: the folder a user gets, the cap."""

from __future__ import annotations

import json

from gui_harness.agent import gui_agent
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.demo.policy import demo_policy
from gui_harness.desktop.fake import FakeDesktop
from openprogram import BudgetManager, Runtime, ScriptedModel, Session, TrajectorySaver, Usage
from openprogram.models.model import ModelReply


def test_trajectory_of_a_gui_run_has_steps_marked_actions_and_a_report(tmp_path):
    saver = TrajectorySaver(tmp_path)
    with Session(), Runtime(ScriptedModel(demo_policy), callbacks=[saver]):
        result = gui_agent(TASK, desktop=FakeDesktop.demo_form(), settle_timeout=0.2)
    (run_dir,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    metadata = json.loads((run_dir / "metadata.json").read_text())
    assert metadata["status"] == "completed"
    shots = sorted(p.name for p in (run_dir / "screenshots").iterdir())
    assert [name for name in shots if "action" not in name] == [
        f"step-00{k}.png" for k in range(1, len(result.steps) + 1)
    ]
    marked = [name for name in shots if "action" in name]
    assert marked == ["step-001-action-1.png", "step-003-action-1.png", "step-004-action-1.png"]
    requests = sorted((run_dir / "llm").glob("*-request.json"))
    assert len(requests) == result.usage.calls
    assert "base64" not in requests[0].read_text()
    report = (run_dir / "report.html").read_text()
    assert "step-001.png" in report and "completed" in report


class Priced:
    """A model that costs one cent per call and answers like the demo policy."""

    name = "priced"

    def __init__(self):
        self.script = ScriptedModel(demo_policy)

    def complete(self, request):
        reply = self.script.complete(request)
        return ModelReply(text=reply.text, usage=Usage(cost_usd=0.01, calls=1))

    async def acomplete(self, request):
        return self.complete(request)


def test_the_budget_stops_a_gui_run_cleanly_with_the_reason():
    desktop = FakeDesktop.demo_form()
    with Session(), Runtime(Priced(), callbacks=[BudgetManager(max_cost=0.035)]):
        result = gui_agent(TASK, desktop=desktop, settle_timeout=0.2)
    assert result.stop_reason == "stopped"
    assert "budget" in result.detail.lower() or "0.035" in result.detail
    assert result.usage.cost_usd <= 0.04 + 1e-9
    assert desktop.saved_state is None  # stopped before pressing Save
