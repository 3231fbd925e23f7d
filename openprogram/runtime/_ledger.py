"""What a runtime's model requests cost: the Ledger of their usage and reservations.

Owns a request's reservation, held from the gates' yes until it is answered, failed,
abandoned or never sent (callbacks' `on_reserve` / `on_settle`: a BudgetManager counts
the calls on their way by it), the tally of an exchange (its usage on the llm node, in
the runtime's total, to `on_usage`), and what an exchange that ended without the
provider's usage is counted as. runtime.py and streaming.py use it. Start at Ledger.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol

from openprogram.callbacks.base import gate, notify
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.core.usage import Usage
from openprogram.errors import RunStopped
from openprogram.models.model import Model, ModelRequest
from openprogram.render._tokens import counter

__all__ = ["Ledger", "estimated_usage"]


class _Owner(Protocol):
    @property
    def callbacks(self) -> Sequence[Any]: ...


class Ledger:
    """The usage of one runtime's exchanges (`usage`) and the reservations of its
    requests on their way, by llm node id."""

    def __init__(self, owner: _Owner) -> None:
        self._owner = owner
        self.usage = Usage()
        self._lock = threading.Lock()
        self._held: dict[str, object] = {}
        self._prompts: dict[str, Callable[[], int]] = {}

    def reserve(self, frame: Node | None, node: Node, tokens: Callable[[], int]) -> None:
        """Once llm node `node`'s request is built, before it is sent: a reservation
        standing for it, held by the callbacks that count requests on their way
        (`on_reserve`, told the prompt's estimated `tokens()`) until it is settled.
        When one refuses (RunStopped, or its BudgetExceeded) the node is marked stopped
        and what the others hold goes back."""
        if any(hasattr(c, "delay") for c in self._owner.callbacks):
            self._prompts[node.id] = functools.cache(tokens)  # rate_waits() counts them too
        holders = [_Holder(c) for c in self._owner.callbacks if hasattr(c, "on_reserve")]
        if not holders:
            return
        hold = object()
        try:
            reason = gate(holders, hold, kind="llm", frame=frame, tokens=tokens())
            if reason is not None:
                raise RunStopped(reason)
        except BaseException as exc:
            self.release(hold, frame)
            if isinstance(exc, RunStopped):
                _context.current_session().dag.complete(
                    node, None, status="stopped", error=f"{type(exc).__name__}: {exc}"
                )
            raise
        self._held[node.id] = hold

    def rate_waits(self, node: Node) -> Iterator[float]:
        """The waits llm node `node`'s request owes its rate limits before it goes (each
        limit in turn; a limit counts the request when it says no more wait)."""
        limits = [c for c in self._owner.callbacks if hasattr(c, "delay")]
        tokens = self._prompts.get(node.id, lambda: 0)
        for limit in limits:
            while (wait := limit.delay(node, tokens())) > 0:
                yield wait

    def holds(self, node: Node) -> bool:
        return node.id in self._held

    def release(self, hold: object | None, frame: Node | None) -> None:
        """Give a reservation back (`on_settle`)."""
        if hold is not None:
            run = _context.current_session().dag.top_level_ancestor(frame) if frame else None
            notify(self._owner.callbacks, "on_settle", hold, record_on=run)

    def settle(self, node: Node) -> None:
        """Give back the reservation of `node`'s request (once)."""
        self._prompts.pop(node.id, None)
        hold = self._held.pop(node.id, None)
        if hold is not None:
            self.release(hold, node)

    def count(self, node: Node, usage: Usage) -> None:
        """Tally one exchange (its usage on the node, in `usage`, to on_usage), then give
        its reservation back."""
        node.usage = usage
        with self._lock:
            self.usage = self.usage + usage
        callbacks = self._owner.callbacks
        try:
            if callbacks:
                run = _context.current_session().dag.top_level_ancestor(node)
                notify(callbacks, "on_usage", node, usage, record_on=run)
        finally:
            self.settle(node)


class _Holder:
    """A callback's `on_reserve` asked as a gate, so its refusal is recorded as a gate's
    (gate() hands it the reservation where a gate gets the runtime)."""

    __slots__ = ("callback",)

    def __init__(self, callback: Any) -> None:
        self.callback = callback

    @property
    def stop_reason(self) -> str | None:
        return getattr(self.callback, "stop_reason", None)

    def on_run_continue(
        self, hold: object, *, frame: Node | None = None, tokens: int = 0, **_: Any
    ) -> bool:
        return self.callback.on_reserve(hold, frame=frame, tokens=tokens) is not False


def estimated_usage(model: Model, request: ModelRequest, text: str) -> Usage:
    """What an exchange that ended without the provider's usage (a stream stopped or
    broken off, a request cancelled on its way) is counted as: its request's tokens and
    those of the `text` received, counted as a token budget counts them, priced by
    litellm's cost map when it knows the model (else flagged as unpriced)."""
    # litellm's tokenizer only when litellm is loaded already: importing it for an
    # estimate would cost seconds (and a direct OpenAI-compatible model avoids it)
    loaded = "litellm" in sys.modules
    count = counter(str(getattr(model, "name", type(model).__name__)) if loaded else None)
    sent = sum(count.image(ref.width, ref.height) for ref in request.rendered.images())
    for message in request.messages:
        sent += count.message()
        content = message.get("content") or ""
        parts = content if isinstance(content, list) else [{"text": content}]
        sent += sum(count.text(str(p.get("text") or "")) for p in parts if isinstance(p, dict))
    received = count.text(text)
    # LiteLLMModel prices a stream's usage this way; other models have no price
    price = getattr(model, "_stream_cost", None)
    cost = price(_Tokens(sent, received)) if callable(price) else None
    return Usage(
        input_tokens=sent,
        output_tokens=received,
        cost_usd=cost or 0.0,
        cost_known=cost is not None,
        unpriced_calls=0 if cost is not None else 1,
        calls=1,
    )


class _Tokens:
    """A usage block as litellm's streams report it."""

    def __init__(self, prompt_tokens: int, completion_tokens: int) -> None:
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens
