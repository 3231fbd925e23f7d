"""`openprogram bench miniwob --model M` with a real model path: litellm in each worker
process talks HTTP to the local OpenAI-compatible server; the page, not the model's
claim, decides the outcome; the key never reaches the store or the reports."""

from __future__ import annotations

import json
import shutil

import pytest
from click.testing import CliRunner

from openprogram.cli import cli
from openprogram.testing import OpenAIServer
from openprogram.testing.server import _request_text, count_tokens

pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')

KEY = "sk-local-bench-0123456789abcdef"


def _claims_success(body: dict) -> str:
    """A model that skips the work: it says the task is done at once."""
    text = json.dumps(body["messages"])
    if "You operate a computer" in text:
        return json.dumps({"goal": "finish", "action": {"type": "done", "reason": "clicked"}})
    if "You check whether" in text:
        return json.dumps({"success": True, "observation": "done", "task_complete": True})
    return json.dumps({"summary": "The button was clicked.", "task_appears_complete": True})


@pytest.mark.x11
@pytest.mark.browser
@pytest.mark.skipif(shutil.which("chromedriver") is None, reason="chromedriver is not installed")
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_model_over_http_is_judged_by_the_page(tmp_path, monkeypatch):
    out = tmp_path / "out"
    with OpenAIServer(responder=_claims_success) as server:
        monkeypatch.setenv("OPENAI_API_BASE", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        result = CliRunner().invoke(
            cli,
            [
                "bench", "miniwob", "--model", "openai/test-model", "--tasks", "click-test",
                "--seeds", "0", "--max-steps", "3", "--out", str(out),
            ],
        )  # fmt: skip
        bodies = [r.body for r in server.requests]
    assert result.exit_code == 0, result.output
    assert bodies and all(b["model"] == "test-model" for b in bodies)
    assert "Click the button." in json.dumps(bodies[0]["messages"])  # the page's instruction
    episode = json.loads((out / "summary.json").read_text())["episodes"][0]
    # the model claimed done, but the page gave no reward: no success
    assert episode["status"] == "failure" and episode["reward"] == 0.0
    # the server's usage, per call: counted from each request's text and its reply
    reported = sum(
        count_tokens(_request_text(body)) + count_tokens(_claims_success(body) + " ")
        for body in bodies
    )
    assert episode["tokens"] == reported
    for written in [*out.glob("batch.db*"), *out.rglob("*.html"), out / "summary.json"]:
        assert KEY.encode() not in written.read_bytes()
