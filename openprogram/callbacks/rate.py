"""RateLimit: requests and tokens per minute, shared by every call of a process that names it.

Owns the sliding one-minute windows and how long a request must wait for room in them.
A provider's own limits (say 500 requests and 200 000 tokens a minute) are the model: a
gather of 50 calls queues behind the limit instead of failing on the provider's 429.
The runtime asks `delay()` before each attempt and sleeps (or awaits) what it says.
Start at RateLimit.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Iterable

from openprogram.callbacks.base import Callback
from openprogram.core.dag import Node
from openprogram.core.usage import Usage
from openprogram.echo import echo
from openprogram.errors import UsageError

__all__ = ["RateLimit"]

_WINDOW_S = 60.0
_NAME_LIMIT = 200


def _clock() -> float:
    """Now, in seconds (monotonic; the tests move it instead of waiting)."""
    return time.monotonic()


class _Window:
    """One name's last minute of requests and tokens, shared by its RateLimits."""

    def __init__(self, requests: int | None, tokens: int | None) -> None:
        self.limits = (requests, tokens)
        self.sent: deque[float] = deque()  # when each request of the last minute was let go
        self.spent: deque[tuple[float, int]] = deque()  # (when, tokens) of the last minute
        self.lock = threading.Lock()

    def _forget(self, now: float) -> None:
        while self.sent and self.sent[0] <= now - _WINDOW_S:
            self.sent.popleft()
        while self.spent and self.spent[0][0] <= now - _WINDOW_S:
            self.spent.popleft()

    def take(self, tokens: int, now: float) -> float:
        """0.0 when a request of about `tokens` prompt tokens may go now (it is counted),
        else the seconds until the window has room for it (nothing is counted)."""
        requests, per_minute = self.limits
        with self.lock:
            self._forget(now)
            waits = [0.0]
            if requests is not None and len(self.sent) >= requests:
                waits.append(self.sent[len(self.sent) - requests] + _WINDOW_S - now)
            if per_minute is not None and self.spent:
                used = sum(count for _, count in self.spent)
                # a request bigger than the whole limit goes alone, in an empty window
                excess = used + min(tokens, per_minute) - per_minute
                if excess > 0:
                    for when, count in self.spent:
                        excess -= count
                        if excess <= 0:
                            waits.append(when + _WINDOW_S - now)
                            break
            wait = max(waits)
            if wait > 0:
                return wait
            self.sent.append(now)
            if tokens:
                self.spent.append((now, tokens))
            return 0.0

    def add(self, tokens: int, now: float) -> None:
        if tokens > 0:
            with self.lock:
                self.spent.append((now, tokens))


_WINDOWS: dict[str, _Window] = {}
_WINDOWS_LOCK = threading.Lock()


class RateLimit(Callback):
    """Hold model requests to at most `requests_per_minute` and `tokens_per_minute`.

    name: what the limit is for ("openai", "tenant-42"): every RateLimit of this process
    with the same name shares one window, whichever runtime or thread it is on, so a
    provider's limits hold across the whole program. requests_per_minute: requests let
    go in any 60 seconds. tokens_per_minute: tokens (the prompt's estimate when a request
    goes, its output when the reply comes) in any 60 seconds; a request larger than the
    limit waits for an empty window and goes alone.
    A request over a limit waits (llm() sleeps, allm() awaits: gathered calls queue) and
    is never refused; retries wait the same way. The wait is recorded on the llm node as
    `meta["rate_waits"]` (seconds). Counts are per process: processes sharing a provider
    account each need their share of its limits.
    """

    def __init__(
        self,
        name: str = "default",
        *,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
    ) -> None:
        if not isinstance(name, str) or not name or len(name) > _NAME_LIMIT:
            raise UsageError(
                f"RateLimit name {echo(name)} must be a non-empty string of at most "
                f"{_NAME_LIMIT} characters, e.g. RateLimit('openai', requests_per_minute=500)"
            )
        for label, value in (
            ("requests_per_minute", requests_per_minute),
            ("tokens_per_minute", tokens_per_minute),
        ):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 1
            ):
                raise UsageError(f"{label}={value!r} must be a whole number >= 1 or None")
        if requests_per_minute is None and tokens_per_minute is None:
            raise UsageError(
                "RateLimit needs requests_per_minute=, tokens_per_minute= or both, "
                "e.g. RateLimit('openai', requests_per_minute=500)"
            )
        limits = (requests_per_minute, tokens_per_minute)
        with _WINDOWS_LOCK:
            window = _WINDOWS.get(name)
            if window is None:
                window = _WINDOWS[name] = _Window(*limits)
            elif window.limits != limits:
                raise UsageError(
                    f"RateLimit {echo(name)} exists in this process with requests_per_minute="
                    f"{window.limits[0]!r}, tokens_per_minute={window.limits[1]!r}: one name "
                    "has one set of limits (give this one another name)"
                )
        self.name = name
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self._window = window

    def __repr__(self) -> str:
        return (
            f"RateLimit({self.name!r}, requests_per_minute={self.requests_per_minute!r}, "
            f"tokens_per_minute={self.tokens_per_minute!r})"
        )

    def delay(self, node: Node, tokens: int) -> float:
        """Seconds llm node `node`'s request must wait before it goes (0.0: it goes now,
        and is counted)."""
        wait = self._window.take(max(0, int(tokens)), _clock())
        if wait > 0:
            waits = node.meta.setdefault("rate_waits", [])
            if len(waits) < 100:
                waits.append(round(wait, 3))
        return math.ceil(wait * 1000) / 1000 if wait > 0 else 0.0

    def on_usage(self, node: Node, usage: Usage) -> None:
        self._window.add(usage.output_tokens, _clock())


def _forget_all() -> None:  # the tests' fresh process state
    with _WINDOWS_LOCK:
        _WINDOWS.clear()


def limits_of(callbacks: Iterable[object]) -> list[RateLimit]:
    """The RateLimits among a runtime's callbacks."""
    return [callback for callback in callbacks if isinstance(callback, RateLimit)]
