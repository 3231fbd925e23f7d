"""`openprogram mcp serve --transport http` started for a test: its URL and token, read
from the line it prints once it listens."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.mcp_servers import ROOT, openprogram_command

READY = re.compile(r"listening at (?P<url>\S+); token in (?P<path>.+) \(send")


@dataclass
class Served:
    url: str
    token: str
    token_file: Path
    process: subprocess.Popen
    stderr: str  # what it printed up to its ready line

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/")[0])

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def wait_for_line(self, text: str, timeout: float = 60) -> str:
        """The next line of the server's standard error holding `text` (AssertionError
        when none comes within `timeout` seconds, or the server ends first)."""
        found: list[str] = []

        def read() -> None:
            for line in self.process.stderr:
                if text in line:
                    found.append(line)
                    return

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        reader.join(timeout)
        assert found, f"the server printed no line with {text!r}"
        return found[0]


@contextlib.contextmanager
def served(*arguments: str, env: dict[str, str] | None = None) -> Iterator[Served]:
    """`openprogram mcp serve ARGUMENTS --transport http --port 0`, once it says it listens."""
    argv = openprogram_command("mcp", "serve", *arguments, "--transport", "http", "--port", "0")
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        **(env or {}),
    }
    process = subprocess.Popen(argv, cwd=ROOT, env=environment, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    found: list[re.Match[str]] = []

    def read() -> None:  # until the ready line, or the end if there is none
        for line in process.stderr:
            lines.append(line)
            match = READY.search(line)
            if match:
                found.append(match)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(60)
    try:
        assert found, f"no ready line; stderr: {''.join(lines)!r}"
        path = Path(found[0]["path"])
        yield Served(found[0]["url"], path.read_text().strip(), path, process, "".join(lines))
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stderr.close()


def post_initialize(url: str, **headers: str) -> httpx.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "attacker", "version": "1"},
        },
    }
    accept = "application/json, text/event-stream"
    return httpx.post(url, json=body, headers={"Accept": accept, **headers}, timeout=10)
