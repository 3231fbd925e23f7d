"""The MCP servers the tests start: the npm reference servers and our fault server.

scripts/setup.sh --dev installs the npm servers (pinned) into .cache/npm-mcp, so no test
needs the network. Tests skip only when node is absent; a checkout without the servers
fails, saying to run setup.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NPM_CACHE = ROOT / ".cache" / "npm-mcp"
FAULT_SERVER = Path(__file__).with_name("mcp_fault_server.py")


def node() -> str:
    """The node program; skips the test when node is not installed."""
    found = shutil.which("node")
    if found is None:
        pytest.skip("node is not installed (scripts/setup.sh --dev installs it)")
    return found


def npm_server(package: str) -> list[str]:
    """argv starting an npm reference server, e.g. npm_server("server-everything")."""
    script = NPM_CACHE / "node_modules" / "@modelcontextprotocol" / package / "dist" / "index.js"
    program = node()
    if not script.is_file():
        pytest.fail(
            f"{script} is missing: run scripts/setup.sh --dev (it installs the MCP reference "
            "servers into .cache/npm-mcp)"
        )
    return [program, str(script)]


def fault_server(mode: str = "serve") -> list[str]:
    """argv starting tests/support/mcp_fault_server.py."""
    return [sys.executable, str(FAULT_SERVER), mode]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen, timeout: float = 30.0) -> None:
    """Return once 127.0.0.1:`port` accepts connections; fail if `process` exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited with code {process.returncode} before listening")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)  # nothing to wait on: the port opens when the server is up
    pytest.fail(f"nothing listened on port {port} within {timeout} s")


def openprogram_command(*arguments: str) -> list[str]:
    """argv running the `openprogram` command of this checkout."""
    return [sys.executable, "-c", "from openprogram.cli import main; main()", *arguments]
