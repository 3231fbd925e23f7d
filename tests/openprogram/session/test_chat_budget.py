"""`openprogram chat --max-cost USD`: a cost cap on the whole conversation, a SharedBudget
named after its session and kept in its store, so continuing the conversation in another
invocation (another process) continues the count; driven over a pipe against the local
OpenAI-compatible server."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from openprogram.testing import OpenAIServer
from tests.support.children import ROOT


def chat(server: OpenAIServer, lines: str, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "chat",
         "--model", "openai/gpt-4o-mini", "--api-base", server.url, *options],
        input=lines, capture_output=True, text=True, timeout=120,
        env={**os.environ, "OPENAI_API_KEY": "test", "PYTHONPATH": str(ROOT)},
    )  # fmt: skip


@pytest.mark.slow
def test_max_cost_stops_the_conversation_across_invocations(tmp_path: Path) -> None:
    store = ["--store", str(tmp_path / "chat.db")]
    with OpenAIServer() as server:
        for _ in range(3):  # $0.00075 each at gpt-4o-mini's price
            server.reply("Noted.", prompt_tokens=1000, completion_tokens=1000)
        first = chat(server, "one\ntwo\nthree\n", *store, "--max-cost", "0.001")
        session_id = re.search(r"session (\w+)", first.stderr).group(1)  # type: ignore[union-attr]
        again = first.stderr.split("continue it later with: ", 1)[1].splitlines()[0]
        second = chat(server, "four\n", *store, "--session", session_id, "--max-cost", "0.001")
        sent = len(server.requests)
    assert first.stdout == "Noted.\nNoted.\n\n"
    assert first.returncode == 1
    assert (
        f"budget reached: shared budget 'chat:{session_id}' max_cost=$0.0010; the runs sharing "
        f"it spent $0.0015 over 2 model call(s); stopped before the next llm (the conversation "
        f"so far is kept in session {session_id})"
    ) in first.stderr
    assert shlex.split(again)[-2:] == ["--max-cost", "0.001"]
    assert second.returncode == 1  # the next invocation continues the count: nothing sent
    assert f"shared budget 'chat:{session_id}' max_cost=$0.0010" in second.stderr
    assert sent == 2


@pytest.mark.parametrize("cap", ["-1", "nan", "inf"])
def test_a_bad_max_cost_is_refused_before_anything_is_recorded(tmp_path: Path, cap: str) -> None:
    from click.testing import CliRunner

    from openprogram.cli import cli

    store = tmp_path / "chat.db"
    result = CliRunner().invoke(
        cli, ["chat", "--model", "openai/x", "--store", str(store), "--max-cost", cap], input=""
    )
    assert result.exit_code == 1
    assert f"max_cost={float(cap)!r} must be a finite number of US dollars >= 0" in result.output
    assert not store.exists()
