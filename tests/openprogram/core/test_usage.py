"""Usage: one normalised record from every provider's shape, rolled up per frame and run."""

from __future__ import annotations

import os

import pytest

from openprogram import Runtime, Session, Usage, agentic_function, llm
from openprogram.core.usage import frame_usage, usage_from_response
from tests.support.priced import PricedModel

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

# Captured usage payloads, trimmed to their usage parts.
OPENAI = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "usage": {
        "prompt_tokens": 1200,
        "completion_tokens": 300,
        "total_tokens": 1500,
        "prompt_tokens_details": {"cached_tokens": 1024, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 192, "audio_tokens": 0},
    },
}
OPENAI_RESPONSES = {
    "usage": {
        "input_tokens": 1200,
        "input_tokens_details": {"cached_tokens": 1024},
        "output_tokens": 300,
        "output_tokens_details": {"reasoning_tokens": 192},
    }
}
ANTHROPIC = {
    "id": "msg_1",
    "type": "message",
    "usage": {
        "input_tokens": 50,
        "cache_creation_input_tokens": 5,
        "cache_read_input_tokens": 30,
        "output_tokens": 20,
    },
}
GEMINI = {
    "candidates": [],
    "usageMetadata": {
        "promptTokenCount": 120,
        "candidatesTokenCount": 30,
        "thoughtsTokenCount": 12,
        "cachedContentTokenCount": 64,
        "totalTokenCount": 162,
    },
}


def tokens(usage: Usage) -> tuple[int, int, int, int]:
    return (usage.input_tokens, usage.output_tokens, usage.cached_tokens, usage.reasoning_tokens)


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        (OPENAI, (1200, 300, 1024, 192)),
        (OPENAI_RESPONSES, (1200, 300, 1024, 192)),
        (ANTHROPIC, (85, 20, 30, 0)),  # input counts the cache reads and writes too
        (GEMINI, (120, 42, 64, 12)),  # output counts the thoughts too
    ],
    ids=["openai", "openai-responses", "anthropic", "gemini"],
)
def test_provider_payloads_normalise_to_one_record(payload, expected):
    usage = usage_from_response(payload, cost_usd=0.0123, latency_s=1.5)
    assert tokens(usage) == expected
    assert (usage.cost_usd, usage.cost_known, usage.latency_s, usage.calls) == (
        0.0123,
        True,
        1.5,
        1,
    )
    assert (
        tokens(usage_from_response(payload["usage" if "usage" in payload else "usageMetadata"]))
        == expected
    )


def test_litellm_model_responses_of_each_provider_normalise_the_same_way():
    import litellm
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.llms.vertex_ai.gemini.vertex_and_google_ai_studio_gemini import VertexGeminiConfig

    def response(usage):
        return litellm.ModelResponse(
            choices=[{"message": {"role": "assistant", "content": "hi"}}], usage=usage
        )

    openai = response(litellm.Usage(**OPENAI["usage"]))
    anthropic = response(AnthropicConfig().calculate_usage(ANTHROPIC["usage"], None))
    gemini = response(VertexGeminiConfig._calculate_usage(GEMINI))
    assert tokens(usage_from_response(openai)) == (1200, 300, 1024, 192)
    assert tokens(usage_from_response(anthropic)) == (85, 20, 30, 0)
    assert tokens(usage_from_response(gemini)) == (120, 42, 64, 12)


def test_an_unknown_price_is_flagged_not_free():
    usage = usage_from_response(OPENAI, cost_usd=None)
    assert (usage.cost_usd, usage.cost_known, usage.unpriced_calls) == (0.0, False, 1)
    total = usage + usage_from_response(OPENAI, cost_usd=0.5)
    assert (total.cost_usd, total.cost_known, total.unpriced_calls, total.calls) == (
        0.5,
        False,
        1,
        2,
    )


def test_missing_usage_gives_zeros():
    assert tokens(usage_from_response(None)) == (0, 0, 0, 0)
    assert tokens(usage_from_response({"choices": []})) == (0, 0, 0, 0)


def test_usage_rolls_up_per_frame_and_per_run():
    @agentic_function
    def leaf() -> str:
        return llm("x")

    @agentic_function
    def branch() -> str:
        return leaf() + llm("y")

    @agentic_function
    def root() -> str:
        return branch() + leaf()

    runtime = Runtime(PricedModel(cost=0.01))
    with Session() as session, runtime:
        root()
        llm("top level")
    dag = session.dag
    assert frame_usage(dag, dag.find(name="root")[0].id).calls == 3
    branch_usage = frame_usage(dag, dag.find(name="branch")[0].id)
    assert (branch_usage.calls, branch_usage.input_tokens) == (2, 200)
    assert branch_usage.cost_usd == pytest.approx(0.02)
    assert frame_usage(dag, dag.find(name="leaf")[0].id).calls == 1
    assert frame_usage(dag, dag.find(kind="llm")[0].id).calls == 1
    assert frame_usage(dag).calls == 4  # the whole session
    assert runtime.usage.calls == 4 and runtime.usage.cost_usd == pytest.approx(0.04)
