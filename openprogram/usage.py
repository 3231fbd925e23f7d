"""Token and cost accounting: one normalised `Usage` record per model exchange.

Owns `Usage` and its extraction from the usage block of provider responses (OpenAI,
Anthropic and Gemini shapes as litellm returns them). Roll-ups are plain additions.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

__all__ = ["Usage", "usage_from_response"]


class Usage(BaseModel):
    """Tokens, cost in USD and latency in seconds of one exchange, or a sum of several.

    `cost_known` is False when at least one exchange's price was unknown to litellm's
    cost map: its cost counts as 0 and `unpriced_calls` says how many such calls there were.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    reasoning_tokens: int = 0
    cost_usd: float = 0.0
    cost_known: bool = True
    unpriced_calls: int = 0
    latency_s: float = 0.0
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cost_usd=self.cost_usd + other.cost_usd,
            cost_known=self.cost_known and other.cost_known,
            unpriced_calls=self.unpriced_calls + other.unpriced_calls,
            latency_s=self.latency_s + other.latency_s,
            calls=self.calls + other.calls,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


def _get(block: Any, key: str) -> Any:
    if block is None:
        return None
    if isinstance(block, Mapping):
        return block.get(key)
    return getattr(block, key, None)


def _first_int(block: Any, *keys: str) -> int:
    for key in keys:
        value = _get(block, key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return int(value)
    return 0


def usage_from_response(
    usage_block: Any, *, cost_usd: float | None, latency_s: float = 0.0
) -> Usage:
    """Normalise a response's usage block; `cost_usd=None` means the price is unknown.

    Understands OpenAI (`prompt_tokens`, `prompt_tokens_details.cached_tokens`,
    `completion_tokens_details.reasoning_tokens`), Anthropic (`input_tokens`,
    `cache_read_input_tokens`) and Gemini (`promptTokenCount`, `candidatesTokenCount`,
    `cachedContentTokenCount`, `thoughtsTokenCount`) shapes.
    """
    prompt_details = _get(usage_block, "prompt_tokens_details")
    completion_details = _get(usage_block, "completion_tokens_details")
    cached = _first_int(prompt_details, "cached_tokens") or _first_int(
        usage_block, "cache_read_input_tokens", "cachedContentTokenCount"
    )
    reasoning = _first_int(completion_details, "reasoning_tokens") or _first_int(
        usage_block, "reasoning_tokens", "thoughtsTokenCount"
    )
    return Usage(
        input_tokens=_first_int(usage_block, "prompt_tokens", "input_tokens", "promptTokenCount"),
        output_tokens=_first_int(
            usage_block, "completion_tokens", "output_tokens", "candidatesTokenCount"
        ),
        cached_tokens=cached,
        reasoning_tokens=reasoning,
        cost_usd=cost_usd or 0.0,
        cost_known=cost_usd is not None,
        unpriced_calls=0 if cost_usd is not None else 1,
        latency_s=latency_s,
        calls=1,
    )
