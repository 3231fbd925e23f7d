"""`openprogram serve-model`: the shipped server run from the shell, answered through
litellm over HTTP by a Runtime with a tool."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram import Runtime, Session, agentic_function, llm
from tests.support.interrupting import FAULTHANDLER, interrupted

ROOT = Path(__file__).resolve().parents[3]


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def serve(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "serve-model",
         *arguments],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # faulthandler: a server that does not stop is made to say where it hangs
        env={**os.environ, "PYTHONPATH": str(ROOT), **FAULTHANDLER},
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux") or os.uname().machine != "x86_64",
                    reason="tgkill through its x86_64 syscall number")  # fmt: skip
def test_serve_model_stops_when_sigint_reaches_a_server_thread() -> None:
    """Issue 40, item 11: the kernel gives a process's SIGINT to any thread; Python runs
    the handler in the main thread, which waited on an Event no signal wakes. Under load
    (server threads busy) serve-model then ignored Ctrl-C for good, and the test suite
    left it running. Now its main thread wakes to run the handler."""
    process = serve()
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("http://127.0.0.1:")
        errors = interrupted(process, thread=True)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0 and "stopped after 0 request(s)" in errors


@pytest.mark.slow
def test_serve_model_answers_a_scripted_tool_loop_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    tool_call = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
    script.write_text(json.dumps([tool_call, "2 + 3 = 5"]))
    process = serve("--script", str(script))
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        runtime = Runtime("openai/local", api_base=url, api_key="test", max_retries=0)
        with Session() as session, runtime:
            answer = llm("What is 2 + 3?", tools=[add])
    finally:
        errors = interrupted(process)

    assert answer == "2 + 3 = 5"
    [tool] = session.dag.find(name="add", kind="code")
    assert (tool.input, tool.output) == ({"a": 2, "b": 3}, 5)
    first, second = session.dag.find(kind="llm")
    assert second.usage.input_tokens > first.usage.input_tokens  # the tool turn is longer
    assert second.usage.output_tokens == 5  # "2" "+" "3" "=" "5"
    assert process.returncode == 0
    assert "stopped after 2 request(s)" in errors


@pytest.mark.slow
def test_serve_model_refuses_a_script_that_is_not_a_list_in_one_line(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('"just text"')
    process = serve("--script", str(script))
    try:
        _, errors = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()

    assert process.returncode == 1
    assert "must hold a JSON list of replies" in errors
    assert "Traceback" not in errors


@pytest.mark.slow
def test_serve_model_refuses_a_300_mb_body_unread_and_stops_with_clients_hanging_on() -> None:
    process = serve()
    clients: list[socket.socket] = []
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip().rsplit(":", 1)[1].split("/")[0])
        for _ in range(3):  # connected, sending nothing
            clients.append(socket.create_connection(("127.0.0.1", port), timeout=30))
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 300000000\r\n\r\n"
            )  # and never the body
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
    finally:
        try:
            errors = interrupted(process)
        finally:  # closed even when the server did not stop (a socket left to the GC
            for client in clients:  # fails whichever test it is collected in)
                client.close()

    assert reply.startswith(b"HTTP/1.0 413 "), reply[:200]
    assert b"is over this server's 33,554,432 bytes" in reply
    assert process.returncode == 0, errors
    assert "stopped after 0 request(s)" in errors
