"""Every Python block of the README and docs/*.md runs, in order per page, so the docs
cannot drift from the code.

Each page runs in a fresh interpreter in an empty folder, offline: litellm model strings
reach the local OpenAI-compatible server on 127.0.0.1 (openprogram.testing.OpenAIServer),
and the GUI agent gets its private Xvfb desktop as a user would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram.testing import OpenAIServer
from tests.support.mcp_servers import NPM_CACHE

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.DOTALL | re.MULTILINE)


def python_blocks(page: Path) -> list[tuple[str, str]]:
    """(label, source) of each ```python block; the label names the page and line."""
    text = page.read_text(encoding="utf-8")
    blocks = []
    for match in _FENCE.finditer(text):
        line = text.count("\n", 0, match.start(1)) + 1
        blocks.append((f"{page.relative_to(ROOT)}:{line}", match.group(1)))
    return blocks


def test_the_block_finder_sees_every_python_fence():
    sample = ROOT / "README.md"
    fences = sample.read_text(encoding="utf-8").count("```python")
    assert len(python_blocks(sample)) == fences >= 1


@pytest.mark.parametrize("page", [p for p in PAGES if python_blocks(p)], ids=lambda p: p.name)
def test_every_python_block_of_the_page_runs(page: Path, tmp_path: Path):
    blocks = tmp_path / "blocks.json"
    blocks.write_text(json.dumps(python_blocks(page)), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()
    with OpenAIServer(default_reply='{"answer": "ok"}') as server:
        env = {
            **os.environ,
            "OPENAI_API_BASE": server.url,
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-docs-test-key",
            "OPENPROGRAM_STORE": str(work / "openprogram.db"),
            "PYTHONPATH": str(ROOT),
        }
        env.pop("OPENPROGRAM_MODEL", None)
        filesystem = (
            NPM_CACHE / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
        )
        if shutil.which("node") and filesystem.is_file():  # docs/mcp.md starts it offline
            env["OPENPROGRAM_MCP_FILESYSTEM"] = f"node {filesystem}"
        result = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("_run_blocks.py")), str(blocks)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    assert result.returncode == 0, result.stderr[-4000:]
