"""In a real Jupyter kernel, ask_user with no asker asks through the kernel's input box;
a kernel that cannot ask (a notebook run by nbconvert) suspends the run instead."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

jupyter_client = pytest.importorskip("jupyter_client", reason="needs the dev extra")

pytestmark = pytest.mark.notebook

ROOT = Path(__file__).resolve().parents[3]
CELL = """
from openprogram import RunWaiting, Session, agentic_function, ask_user

@agentic_function
def book(hotel):
    return ask_user(f"Book {hotel}?", choices=["yes", "no"])

try:
    with Session() as session:
        print("answer:", book("Ritz"))
except RunWaiting as waiting:
    print("waiting:", waiting.question.text)
"""


@pytest.fixture
def manager(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A started kernel of this interpreter, with this checkout importable."""
    spec = tmp_path / "jupyter" / "kernels" / "python3"
    spec.mkdir(parents=True)
    argv = [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    (spec / "kernel.json").write_text(json.dumps({"argv": argv, "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    kernel = jupyter_client.KernelManager(kernel_name="python3")
    kernel.start_kernel(cwd=str(tmp_path))
    yield kernel
    kernel.shutdown_kernel(now=True)


def run(client, code: str, *, answer: str | None) -> tuple[str, list[str]]:
    """Execute `code`; answer each input request with `answer`. (stdout, prompts seen)."""
    message_id = client.execute(code, allow_stdin=answer is not None)
    prompts: list[str] = []
    out: list[str] = []
    while True:
        if answer is not None:
            try:
                request = client.get_stdin_msg(timeout=0.1)
            except Exception:  # queue.Empty: no input request yet
                request = None
            if request is not None and request["msg_type"] == "input_request":
                prompts.append(request["content"]["prompt"])
                client.input(answer)
        try:
            message = client.get_iopub_msg(timeout=0.1)
        except Exception:
            continue
        if message["parent_header"].get("msg_id") != message_id:
            continue
        if message["msg_type"] == "stream":
            out.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            raise AssertionError("\n".join(message["content"]["traceback"]))
        elif message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(out), prompts


def test_no_asker_in_a_notebook_asks_through_the_input_box_or_suspends(manager):
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        out, prompts = run(client, CELL, answer="1")
        assert prompts == ["> "]
        assert "Book Ritz?\n  1. yes\n  2. no\n" in out and "answer: yes" in out
        out, prompts = run(client, CELL, answer=None)  # as nbconvert runs a notebook
        assert prompts == [] and "waiting: Book Ritz?" in out
    finally:
        client.stop_channels()
