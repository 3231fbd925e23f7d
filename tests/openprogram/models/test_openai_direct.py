"""The openai SDK path for `openai/<name>` at an api_base: no litellm import, and the same
requests, prices and errors as through litellm (real HTTP to a local server)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel

from openprogram import ModelAuthError, Runtime, Session, agentic_function, llm
from openprogram.models._litellm import LiteLLMModel, import_litellm
from openprogram.models._openai import OpenAICompatibleModel
from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[3]


@agentic_function
def greet(name: str) -> str:
    return llm(f"Say hello to {name}.")


@pytest.mark.slow
def test_a_first_call_to_an_openai_compatible_server_does_not_import_litellm():
    child = (
        "import sys\n"
        "from openprogram import Runtime, Session, agentic_function, llm\n"
        "from openprogram.testing import OpenAIServer\n"
        "@agentic_function\n"
        "def greet(name: str) -> str:\n"
        "    return llm(f'Say hello to {name}.')\n"
        "with OpenAIServer(['Hello, Ada!']) as server, Session(), "
        "Runtime('openai/local', api_base=server.url, api_key='k'):\n"
        "    print(greet('Ada'), 'litellm' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "Hello, Ada! False"


def test_the_runtime_picks_the_sdk_path_only_where_it_serves_exactly(monkeypatch):
    direct = Runtime("openai/local", api_base="http://127.0.0.1:9", api_key="k")
    assert isinstance(direct._resolve_model(None), OpenAICompatibleModel)
    for runtime in (
        Runtime("openai/local", api_base="http://127.0.0.1:9", api_key="k", drop_params=True),
        Runtime("openai/gpt-4o-mini", api_key="k"),  # no api_base: OpenAI itself, via litellm
    ):
        model = runtime._resolve_model(None)
        assert type(model) is LiteLLMModel
    monkeypatch.setenv("OPENPROGRAM_LITELLM", "always")
    forced = Runtime("openai/local", api_base="http://127.0.0.1:9", api_key="k")
    assert type(forced._resolve_model(None)) is LiteLLMModel


@pytest.mark.slow
def test_a_priced_model_costs_what_litellm_says_and_an_unknown_one_is_unpriced():
    with OpenAIServer() as server:
        server.reply("Hello!", prompt_tokens=1200, completion_tokens=300)
        server.reply("Hi.", prompt_tokens=10, completion_tokens=2)
        with Session() as session:
            with Runtime("openai/gpt-4o-mini", api_base=server.url, api_key="k"):
                greet("Ada")
            with Runtime("openai/my-local-model", api_base=server.url, api_key="k"):
                greet("Bo")
    priced, unpriced = [node.usage for node in session.dag.find(kind="llm")]
    prompt, completion = import_litellm().cost_per_token(
        model="gpt-4o-mini", prompt_tokens=1200, completion_tokens=300
    )
    assert priced.cost_usd == pytest.approx(prompt + completion)
    assert priced.cost_known and not unpriced.cost_known


class Booking(BaseModel):
    hotel: str
    nights: int


@pytest.mark.slow
def test_a_structured_reply_sends_the_strict_schema_litellm_would():
    with OpenAIServer() as server:
        server.reply(json.dumps({"hotel": "Lisboa", "nights": 2}))
        with Session(), Runtime("openai/gpt-4o-mini", api_base=server.url, api_key="k"):
            booked = llm("Book two nights.", response_format=Booking)
        (request,) = server.requests
    assert booked == Booking(hotel="Lisboa", nights=2)
    sent = request.body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "Booking"
    assert sent["json_schema"]["schema"]["required"] == ["hotel", "nights"]
    assert sent["json_schema"]["strict"] is True


def test_no_key_is_an_auth_error_before_anything_is_sent(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with OpenAIServer() as server:
        with (
            Session(),
            Runtime("openai/local", api_base=server.url),
            pytest.raises(ModelAuthError, match="OPENAI_API_KEY is not set"),
        ):
            greet("Ada")
        assert server.requests == []


@pytest.mark.slow
def test_a_runtime_that_names_a_litellm_only_model_starts_its_import_in_the_background():
    """The first reply through litellm paid its import (6-8 s under load) after llm() was
    called; now it starts when the Runtime is made, and only where litellm serves."""
    child = (
        "import sys\n"
        "from openprogram import Runtime\n"
        "from openprogram.render import _tokens\n"
        "Runtime('openai/local', api_base='http://127.0.0.1:9', api_key='k')\n"
        "print(_tokens._preload is None, 'litellm' in sys.modules)\n"
        "Runtime('anthropic/claude-sonnet-4-5')\n"
        "_tokens._preload.join(120)\n"
        "print(_tokens._preload.name, 'litellm' in sys.modules, _tokens._litellm is not None)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, cwd=ROOT, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[:2] == ["True False", "openprogram-litellm-import True True"]
