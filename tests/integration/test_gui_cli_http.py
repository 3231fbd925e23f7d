"""`openprogram gui "task" --model M --app CMD`: a real model call path end to end.

litellm talks HTTP to the local OpenAI-compatible server (configured the usual way,
through OPENAI_API_BASE and OPENAI_API_KEY); the agent drives the demo form on a private
Xvfb display; the server's "model" is the demo policy reading only what crossed the wire.
"""

from __future__ import annotations

import shutil
import sys

import pytest
from click.testing import CliRunner

from gui_harness.demo.app import read_state
from gui_harness.demo.policy import BASIC_TASK as TASK
from gui_harness.demo.policy import NAME
from openprogram.cli import cli
from openprogram.testing import OpenAIServer
from tests.support.wire_policy import answer

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]

KEY = "sk-local-0123456789abcdefghij"


def test_openprogram_gui_with_a_model_over_http_fills_the_form(tmp_path, monkeypatch):
    state = tmp_path / "state.json"
    app = f"{sys.executable} -m gui_harness.demo.app --state {state}"
    with OpenAIServer(responder=answer) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = CliRunner().invoke(
            cli,
            [
                "gui", TASK, "--model", "openai/test-model", "--app", app,
                "--store", str(tmp_path / "runs.db"), "--report", str(tmp_path / "run.html"),
            ],
        )  # fmt: skip
        bodies = [r.body for r in server.requests]
        headers = [r.headers for r in server.requests]
    assert result.exit_code == 0, result.output
    assert "step 4/15: press Save" in result.output
    saved = read_state(state)
    assert saved["state"]["name"] == NAME and saved["state"]["subscribe"] is True
    assert len(bodies) == 10 and all(b["model"] == "test-model" for b in bodies)
    assert all(h["authorization"] == f"Bearer {KEY}" for h in headers)
    assert KEY not in (tmp_path / "run.html").read_text()
    for written in tmp_path.glob("runs.db*"):  # the database and its WAL
        assert KEY.encode() not in written.read_bytes()
