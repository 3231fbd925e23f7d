"""One CLI grammar for models: every command that talks to a model takes --model,
--api-base and --api-key-env (the key read from the variable named, never from the
command line, and sent as the request's bearer token)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram.cli import cli
from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[3]


MODEL_COMMANDS = [["chat"], ["mcp", "serve"], ["eval"], ["demo"], ["gui"], ["batch"],
                  ["bench", "miniwob"], ["bench", "desktop"]]  # fmt: skip


@pytest.mark.parametrize("command", MODEL_COMMANDS, ids=lambda words: " ".join(words))
def test_every_command_that_talks_to_a_model_takes_the_three_options(command):
    result = CliRunner().invoke(cli, [*command, "--help"])
    assert result.exit_code == 0, result.output
    for option in ("--model", "--api-base", "--api-key-env"):
        assert option in result.output, f"openprogram {' '.join(command)} lacks {option}"


def _chat(server: OpenAIServer, tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    return subprocess.run(
        [sys.executable, "-c", "from openprogram.cli import main; main()", "chat",
         "--model", "openai/local", "--api-base", server.url, "--api-key-env", "GATEWAY_KEY",
         "--store", str(tmp_path / "chat.db")],
        input="Hello?\n", capture_output=True, text=True, timeout=120,
        env={**environment, "PYTHONPATH": str(ROOT), **env},
    )  # fmt: skip


@pytest.mark.slow
def test_chat_sends_the_key_the_named_variable_holds_and_never_prints_it(tmp_path):
    key = "gw-" + os.urandom(8).hex()
    with OpenAIServer(["Hi there."]) as server:
        done = _chat(server, tmp_path, GATEWAY_KEY=key)
        (request,) = server.requests
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hi there.\n"
    assert request.headers["authorization"] == f"Bearer {key}"
    assert key not in done.stdout + done.stderr
    assert "--api-key-env GATEWAY_KEY" in done.stderr  # the continue command names it
    assert key.encode() not in (tmp_path / "chat.db").read_bytes()


@pytest.mark.slow
def test_an_unset_key_variable_is_an_error_before_anything_is_sent(tmp_path):
    with OpenAIServer(["never"]) as server:
        done = _chat(server, tmp_path)
        assert server.requests == []
    assert done.returncode != 0
    assert "--api-key-env GATEWAY_KEY: that environment variable is not set" in done.stderr


def test_a_huge_key_variable_name_is_echoed_cut_short():
    from openprogram.cli import provider_kwargs
    from openprogram.errors import UsageError

    with pytest.raises(UsageError) as refused:
        provider_kwargs(None, "K\u202e" * 100_000)
    assert len(str(refused.value)) < 1000 and "\u202e" not in str(refused.value)
