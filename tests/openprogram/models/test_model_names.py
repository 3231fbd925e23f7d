"""Unknown model names are caught before anything is sent, with litellm's closest names
suggested; provider/model strings litellm routes keep working (_litellm.check_model_name)."""

from __future__ import annotations

import pytest

from openprogram import ConfigError, Runtime, Session, llm
from openprogram.testing import OpenAIServer


@pytest.mark.parametrize(
    ("name", "suggestion"),
    [
        ("gpt4o-mini", "Did you mean 'gpt-4o-mini'"),
        ("opnai/gpt-4o-mini", "Did you mean 'openai/gpt-4o-mini'"),
        ("antropic/claude-x", "Did you mean 'anthropic/claude-x'"),
    ],
)
def test_a_misspelt_model_is_refused_before_sending_with_a_suggestion(name, suggestion):
    with OpenAIServer() as server:
        runtime = Runtime(name, api_base=server.url, api_key="test")
        with Session() as session, runtime, pytest.raises(ConfigError) as caught:
            llm("hello")
        assert server.requests == []
    assert suggestion in str(caught.value)
    assert "nothing was sent" in str(caught.value)
    assert len(session.dag) == 0


def test_a_name_without_a_provider_and_no_close_match_says_how_to_write_one():
    with Session(), Runtime("my-local-model"), pytest.raises(ConfigError) as caught:
        llm("hello")
    assert "Did you mean" not in str(caught.value)
    assert "'openai/my-model', api_base=URL" in str(caught.value)


@pytest.mark.parametrize("name", ["openai/any-name", "openai/gpt-4o-mini", "gpt-4o-mini"])
@pytest.mark.slow
def test_names_litellm_routes_reach_the_server(name):
    with OpenAIServer(["fine"]) as server:
        with Session(), Runtime(name, api_base=server.url, api_key="test"):
            assert llm("hello") == "fine"
        assert len(server.requests) == 1


@pytest.mark.slow
def test_a_custom_provider_given_explicitly_is_not_second_guessed():
    with OpenAIServer(["fine"]) as server:
        runtime = Runtime(
            "my-model", api_base=server.url, api_key="test", custom_llm_provider="openai"
        )
        with Session(), runtime:
            assert llm("hello") == "fine"
