"""Token and cost accounting: one normalised `Usage` record per model exchange.

Owns `Usage`, its extraction from provider responses (OpenAI, Anthropic and Gemini
shapes, raw or as litellm returns them) and the per-frame roll-up `frame_usage`. The
per-run total is `Runtime.usage`. Start at usage_from_response().
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from pydantic import BaseModel

__all__ = ["Usage", "frame_usage", "usage_from_response"]


class Usage(BaseModel):
    """Tokens, cost in USD and latency in seconds of one exchange, or a sum of several.

    `input_tokens` counts every prompt token, cached ones included (`cached_tokens` says
    how many were read from a cache); `output_tokens` counts every generated token,
    reasoning included (`reasoning_tokens` says how many). `cost_known` is False when at
    least one exchange's price was unknown to litellm's cost map: its cost counts as 0
    and `unpriced_calls` says how many such calls there were.
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


def _int(block: Any, key: str) -> int | None:
    value = _get(block, key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    return None


def _first(block: Any, *keys: str) -> int | None:
    for key in keys:
        value = _int(block, key)
        if value is not None:
            return value
    return None


def _usage_block(response: Any) -> Any:
    """The usage part of a whole response (`usage`, Gemini's `usageMetadata`), or the
    value itself when it already is one."""
    for key in ("usage", "usageMetadata", "usage_metadata"):
        block = _get(response, key)
        if block is not None and not isinstance(block, (int, float, str)):
            return block
    return response


def usage_from_response(
    response: object, *, cost_usd: float | None = None, latency_s: float = 0.0
) -> Usage:
    """Normalise a response, or just its usage block, into one `Usage`.

    Accepts dicts or objects (litellm's ModelResponse and Usage) in the shapes of OpenAI
    (`prompt_tokens`, `prompt_tokens_details.cached_tokens`,
    `completion_tokens_details.reasoning_tokens`; Responses API `input_tokens_details`),
    Anthropic (`input_tokens` without the cache: `cache_read_input_tokens` and
    `cache_creation_input_tokens` are added to it) and Gemini (`usageMetadata` with
    `promptTokenCount`, `candidatesTokenCount`, `thoughtsTokenCount`,
    `cachedContentTokenCount`; thoughts count as output). `cost_usd=None` means the
    price is unknown: the record says `cost_known=False`, `unpriced_calls=1`.
    """
    block = _usage_block(response)
    cached = (
        _int(_get(block, "prompt_tokens_details"), "cached_tokens")
        or _int(_get(block, "input_tokens_details"), "cached_tokens")
        or _first(block, "cache_read_input_tokens", "cachedContentTokenCount")
        or 0
    )
    reasoning = (
        _int(_get(block, "completion_tokens_details"), "reasoning_tokens")
        or _int(_get(block, "output_tokens_details"), "reasoning_tokens")
        or _first(block, "reasoning_tokens", "thoughtsTokenCount")
        or 0
    )
    input_tokens = _first(block, "prompt_tokens", "promptTokenCount")
    if input_tokens is None:
        input_tokens = (_int(block, "input_tokens") or 0) + sum(
            _int(block, key) or 0
            for key in ("cache_read_input_tokens", "cache_creation_input_tokens")
        )
    output_tokens = _int(block, "completion_tokens")
    if output_tokens is None:
        candidates = _int(block, "candidatesTokenCount")
        if candidates is not None:
            output_tokens = candidates + (_int(block, "thoughtsTokenCount") or 0)
        else:
            output_tokens = _int(block, "output_tokens") or 0
    return Usage(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_tokens=cached,
        reasoning_tokens=reasoning,
        cost_usd=cost_usd or 0.0,
        cost_known=cost_usd is not None,
        unpriced_calls=0 if cost_usd is not None else 1,
        latency_s=latency_s,
        calls=1,
    )


class _Exchange(Protocol):
    """What frame_usage reads of a node (dag.py's Node, a layer above)."""

    @property
    def id(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def usage(self) -> Usage | None: ...


class _Frames(Protocol):
    """What frame_usage reads of a ContextDAG."""

    def node(self, node_id: str) -> _Exchange: ...

    def children(self, node_id: str | None) -> Sequence[_Exchange]: ...


def frame_usage(dag: _Frames, node_id: str | None = None) -> Usage:
    """The summed usage of every llm exchange inside frame `node_id`, at any depth.

    `node_id=None` sums the whole session (every top-level subtree); an llm node's own
    id gives its own usage.
    """
    total = Usage()
    if node_id is not None:
        node = dag.node(node_id)
        if node.kind == "llm":
            return total + node.usage if node.usage is not None else total
    pending: list[str | None] = [node_id]
    while pending:
        for child in dag.children(pending.pop()):
            if child.kind == "llm" and child.usage is not None:
                total = total + child.usage
            pending.append(child.id)
    return total
