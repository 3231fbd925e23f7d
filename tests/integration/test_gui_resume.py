"""A GUI run killed with SIGKILL resumes where it died: no click or model call twice.

The desktop (Xvfb + the demo form) lives in the test process behind serve_desktop, so it
survives the agent's process, as a real desktop survives a crashed agent.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gui_harness.agent import gui_agent
from gui_harness.demo.app import demo_app, read_state
from gui_harness.demo.policy import NAME, TASK, demo_policy
from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.desktop.server import serve_desktop
from gui_harness.desktop.virtual import VirtualDesktop
from openprogram import Runtime, ScriptedModel, Session

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]

CHILD = """
import os, sys, threading
from pathlib import Path
from openprogram import Runtime, ScriptedModel, Session
from openprogram.callbacks.base import Callback
from gui_harness.agent import gui_agent
from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.demo.policy import TASK, demo_policy

url, store, session_id, marker = sys.argv[1:5]

class DieAfterStepTwo(Callback):
    def on_call_end(self, node):
        if node.name == "gui_step" and (node.output or {}).get("step") == 2:
            Path(marker).write_text("step 2 recorded")
            threading.Event().wait()  # the test kills this process here

runtime = Runtime(ScriptedModel(demo_policy), callbacks=[DieAfterStepTwo()])
with Session(store, id=session_id), runtime:
    desktop = RemoteDesktop(url, token=os.environ["DESKTOP_TOKEN"])
    gui_agent(TASK, desktop=desktop, app="demo-form", settle_timeout=1.0)
"""


def wait_for_file(path: Path, process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "the agent never reached step 2"
        time.sleep(0.05)


def test_a_killed_gui_run_resumes_without_repeating_clicks_or_model_calls(tmp_path):
    store = str(tmp_path / "runs.db")
    marker = tmp_path / "marker"
    state_path = tmp_path / "state.json"
    with VirtualDesktop(apps=[demo_app(state_path)]) as desktop, serve_desktop(desktop) as server:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, server.url, store, "crashy", str(marker)],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "DESKTOP_TOKEN": server.token},  # not in argv: ps shows that
        )
        try:
            wait_for_file(marker, child)
        finally:
            os.kill(child.pid, signal.SIGKILL)
            child.wait()
            child.stderr.close()
        clicks_before = read_state(state_path)["clicks"]
        assert [c["widget"] for c in clicks_before] == ["name"]

        asked: list[str] = []

        def counting(request):
            asked.append(request.function)
            return demo_policy(request)

        with (
            Session.open(store, "crashy", resume=True) as session,
            Runtime(ScriptedModel(counting)),
        ):
            result = gui_agent(
                TASK,
                desktop=RemoteDesktop(server.url, token=server.token),
                app="demo-form",
                settle_timeout=1.0,
            )
        state = read_state(state_path)

    assert result.success and result.stop_reason == "done"
    assert state["state"]["name"] == NAME and state["state"]["subscribe"] is True
    assert [c["widget"] for c in state["clicks"]] == ["name", "subscribe", "save"]
    # steps 1 and 2 came from the record: only steps 3-5 and the conclusion asked the model
    assert asked.count("plan_next_action") == 3
    assert asked.count("verify_step") == 3
    assert [s["step"] for s in result.steps] == [1, 2, 3, 4, 5]
    steps = session.dag.find(name="gui_step", kind="code")
    assert [s.status for s in steps] == ["completed"] * 5
