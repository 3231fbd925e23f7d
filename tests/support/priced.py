"""The budget tests' model and program: PricedModel, whose every reply has a known (or
unknown) price, and spend(times), a run asking the model `times` times.

Used by the callbacks tests in this process and by their child processes
(tests/openprogram/callbacks/shared_child.py).
"""

from __future__ import annotations

from collections.abc import Iterable

from openprogram import agentic_function, llm
from openprogram.core.usage import Usage
from openprogram.models.model import ModelReply, ModelRequest

__all__ = ["PricedModel", "spend"]


@agentic_function
def spend(times: int) -> int:
    """Ask the model `times` times (a BudgetManager may stop it first)."""
    for _ in range(times):
        llm("go")
    return times


class PricedModel:
    """Replies `reply` (or the next of `replies`) and charges `cost` USD per call;
    `cost=None` marks the price as unknown, like a model missing from litellm's map."""

    name = "priced/test"

    def __init__(
        self, cost: float | None = 0.01, replies: Iterable[str] = (), reply: str = "ok"
    ) -> None:
        self.cost = cost
        self.replies = list(replies)
        self.reply = reply
        self.requests: list[ModelRequest] = []

    def complete(self, request: ModelRequest) -> ModelReply:
        self.requests.append(request)
        text = self.replies.pop(0) if self.replies else self.reply
        usage = Usage(
            input_tokens=100,
            output_tokens=10,
            cached_tokens=40,
            reasoning_tokens=3,
            cost_usd=self.cost or 0.0,
            cost_known=self.cost is not None,
            unpriced_calls=0 if self.cost is not None else 1,
            latency_s=0.5,
            calls=1,
        )
        return ModelReply(text=text, usage=usage)

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        return self.complete(request)
