"""SharedBudget: limits that hold across runs and processes, counted in a store.

Owns a shared budget's name, period and limits, where its counter lives (a given store,
else the session's store, else this process) and the stop message of a limit reached.
The counter itself is store/_budgets.py's; BudgetManager(shared=...) asks it before
every model call and tells it what each call spent. Start at SharedBudget.
"""

from __future__ import annotations

import math
import os
import threading
import time
import unicodedata
from typing import Any, Literal

from openprogram.core import _context, _secrets
from openprogram.echo import echo
from openprogram.errors import UsageError
from openprogram.store._budgets import BudgetLimits, BudgetTally, LocalBudgets
from openprogram.store.base import Store
from openprogram.store.open import open_store

__all__ = ["BudgetTally", "Period", "SharedBudget"]

Period = Literal["hour", "day", "week", "month"]
"""How often a shared budget starts again from zero, at the start of each UTC hour, day,
ISO week or month; None: never."""

_FORMATS: dict[str, str] = {
    "hour": "%Y-%m-%dT%H",
    "day": "%Y-%m-%d",
    "week": "%G-W%V",
    "month": "%Y-%m",
}
_NAME_LIMIT = 200
_MAX_COUNT = 2**63 - 1  # what SQLite's and PostgreSQL's integer columns hold
_PROCESS = LocalBudgets()  # the counters of budgets kept in no store: this process's


def _clock() -> float:
    """Now, in seconds since the epoch (the tests move it to the next period)."""
    return time.time()


class SharedBudget:
    """Limits shared by every run that counts against `name`, in any process.

    name: what the budget is for ("tenant-42", f"chat:{session.id}"); runs whose
    BudgetManagers share a name (and a store) share the counts. period: "hour", "day",
    "week" or "month" starts the counts again at each UTC period (None: they never
    reset). The limits are BudgetManager's (any of them): max_cost in US dollars,
    max_tokens (input plus output), max_requests (model calls), max_tool_calls (tool
    calls the model asked for).
    store: where the counter lives, shared by every process using it: a store spec
    (a file path, "sqlite:///…", "postgresql://…") or a Store. None: the store of the
    session the run records into, or, for a session kept in no store, this process
    only. Counting a request is one atomic statement in SQLite and PostgreSQL: it is
    counted only while the counts are under every limit, so processes never pass
    max_requests together; cost and tokens are counted when a call is answered, so
    calls on their way at once may end past max_cost or max_tokens.
    """

    def __init__(
        self,
        name: str,
        *,
        max_cost: float | None = None,
        max_tokens: int | None = None,
        max_requests: int | None = None,
        max_tool_calls: int | None = None,
        period: Period | None = None,
        store: object = None,
    ) -> None:
        _check_name(name)
        if period is not None and (not isinstance(period, str) or period not in _FORMATS):
            raise UsageError(
                f"period={echo(period)} is not one of 'hour', 'day', 'week', 'month' (or "
                "None: the counts never reset)"
            )
        if store is not None and not isinstance(store, (str, os.PathLike, Store)):
            raise UsageError(
                f"SharedBudget store={echo(store)} is not a store: pass a file path, "
                "'sqlite:///file.db', 'postgresql://...', a Store, or None (the session's)"
            )
        check_limits(max_cost, max_tokens, max_requests, max_tool_calls)
        if (max_cost, max_tokens, max_requests, max_tool_calls) == (None, None, None, None):
            raise UsageError(
                f"SharedBudget({name!r}) has no limit: give max_cost=, max_tokens=, "
                "max_requests= or max_tool_calls="
            )
        self.name = name
        self.period = period
        self.max_cost = None if max_cost is None else float(max_cost)
        self.max_tokens = max_tokens
        self.max_requests = max_requests
        self.max_tool_calls = max_tool_calls
        self._spec = store
        self._store: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        limits = "".join(
            f", {name}={value!r}"
            for name, value in (
                ("max_cost", self.max_cost),
                ("max_tokens", self.max_tokens),
                ("max_requests", self.max_requests),
                ("max_tool_calls", self.max_tool_calls),
                ("period", self.period),
            )
            if value is not None
        )
        return f"SharedBudget({self.name!r}{limits})"

    def span(self, at: float | None = None) -> str:
        """The label of the period holding `at` (seconds since the epoch; default now),
        e.g. "day:2026-12-03"; "" without a period."""
        if self.period is None:
            return ""
        moment = time.gmtime(_clock() if at is None else at)
        return f"{self.period}:{time.strftime(_FORMATS[self.period], moment)}"

    def tally(self) -> BudgetTally:
        """What the runs sharing this budget spent in the current period. Without a
        `store=`, the counts read are the current session's store's (outside any session:
        this process's), so read them inside the session, or give the budget a store."""
        tally: BudgetTally = self._counters().budget_tally(self.name, self.span())
        return tally

    # -- what BudgetManager asks ---------------------------------------------------------
    def reached(self, kind: str) -> str | None:
        """The stop message of the first limit the current period's counts reached,
        before a `kind` ("llm", "tool_calls", "gui_step", ...); None: go on."""
        zero = self._zero()
        if zero is not None and kind != "tool_calls":
            return self._message(zero, BudgetTally(), kind)
        return self._reached(self.tally(), kind)

    def charge(self, span: str) -> str | None:
        """Count one model request in period `span` (this budget's span() when the
        request was let through), atomically, if the counts are under the limits: None
        when counted, else the stop message naming the limit reached."""
        zero = self._zero()
        if zero is not None:
            return self._message(zero, BudgetTally(), "llm")
        limits = BudgetLimits(self.max_cost, self.max_tokens, self.max_requests)
        refused = self._counters().charge_budget(self.name, span, limits)
        if refused is None:
            return None
        return self._reached(refused, "llm") or self._message("max_requests", refused, "llm")

    def spend(
        self, cost_usd: float, tokens: int, tool_calls: int, unpriced: int, span: str
    ) -> None:
        """Add what one answered model call spent to period `span`: the period its
        request was counted in by charge(), so a call answered after midnight settles in
        the day it was let through."""
        spent = BudgetTally(cost_usd, tokens, 0, tool_calls, unpriced)
        self._counters().spend_budget(self.name, span, spent)

    def refund(self, span: str) -> None:
        """Give back a request charge(span) counted that was not sent after all."""
        self._counters().spend_budget(self.name, span, BudgetTally(requests=-1))

    # -- helpers -------------------------------------------------------------------------
    def _zero(self) -> str | None:
        """The limit set to 0 (which allows no model call), if any."""
        for name in ("max_cost", "max_tokens", "max_requests"):
            if getattr(self, name) == 0:
                return name
        return None

    def _reached(self, tally: BudgetTally, kind: str) -> str | None:
        if self.max_tool_calls is not None and tally.tool_calls > self.max_tool_calls:
            return self._message("max_tool_calls", tally, kind)
        if kind == "tool_calls":
            return None
        for name, value in (
            ("max_cost", tally.cost_usd),
            ("max_tokens", tally.tokens),
            ("max_requests", tally.requests),
        ):
            limit = getattr(self, name)
            if limit is not None and value >= limit:
                return self._message(name, tally, kind)
        return None

    def _message(self, limit: str, tally: BudgetTally, kind: str) -> str:
        value = getattr(self, limit)
        setting = f"max_cost=${value:.4f}" if limit == "max_cost" else f"{limit}={value}"
        label = self.span().partition(":")[2]
        when = f" this {self.period} ({label} UTC)" if self.period else ""
        unpriced = (
            f" (plus {tally.unpriced_calls} call(s) of unknown cost)"
            if tally.unpriced_calls
            else ""
        )
        spent = {
            "max_cost": f"spent ${tally.cost_usd:.4f} over {tally.requests} model call(s)"
            + unpriced,
            "max_tokens": f"used {tally.tokens} tokens over {tally.requests} model call(s)",
            "max_requests": f"made {tally.requests} model call(s)",
            "max_tool_calls": f"the model asked for {tally.tool_calls} tool call(s)",
        }[limit]
        stop = (
            "stopped before running the last round"
            if kind == "tool_calls"
            else f"stopped before the next {kind}"
        )
        if value == 0 and limit != "max_tool_calls":
            return (
                f"budget reached: shared budget {self.name!r} {setting} allows no model call; "
                f"{stop}"
            )
        return (
            f"budget reached: shared budget {self.name!r} {setting}; the runs sharing it "
            f"{spent}{when}; {stop}"
        )

    def _counters(self) -> Any:
        """The store (or process) keeping this budget's counts."""
        if self._spec is None:
            store = getattr(_context.current_session(), "store", None)  # Session's
            return _PROCESS if store is None else _counting(store)
        with self._lock:
            if self._store is None:
                store, _ = open_store(self._spec)
                self._store = _PROCESS if store is None else _counting(store)
            return self._store


def _counting(store: Any) -> Any:
    if not callable(getattr(store, "charge_budget", None)):
        raise UsageError(
            f"the store {getattr(store, 'url', store)!r} keeps no shared budgets (it has no "
            "charge_budget method); give the SharedBudget a SQLite or PostgreSQL store="
        )
    return store


def _check_name(name: Any) -> None:
    """Raise UsageError unless `name` is a str of 1 to 200 characters that every store
    keeps exactly: no control characters (NUL among them) and no lone surrogates."""
    if not isinstance(name, str) or not name or len(name) > _NAME_LIMIT:
        raise UsageError(
            f"SharedBudget name={echo(name)} must be a str of 1 to {_NAME_LIMIT} characters"
        )
    for character in name:
        if unicodedata.category(character) in ("Cc", "Cs"):
            raise UsageError(
                f"SharedBudget name={echo(name)} holds {character!a}: a name may not "
                "hold control characters (NUL, newline, escape) or lone surrogates"
            )
    if _secrets.scrub(name, patterns=False) != name:  # a key: the store would keep it
        raise UsageError(
            f"SharedBudget name={_secrets.scrub(echo(name), patterns=False)} holds a secret "
            "value (an API key, token or password): name a budget by what it is for"
        )


def check_limits(
    max_cost: object, max_tokens: object, max_requests: object, max_tool_calls: object
) -> None:
    """Raise UsageError naming the first limit that is not a finite number >= 0 (or None);
    a count's limit is at most what a store's 64-bit integer column holds."""
    if max_cost is not None and not _dollars(max_cost):
        raise UsageError(
            f"max_cost={echo(max_cost)} must be a finite number of US dollars >= 0, "
            "or None for no limit"
        )
    for name, value in (
        ("max_tokens", max_tokens),
        ("max_requests", max_requests),
        ("max_tool_calls", max_tool_calls),
    ):
        if value is not None and (
            not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= _MAX_COUNT
        ):
            raise UsageError(
                f"{name}={echo(value)} must be an int >= 0 (at most 2**63 - 1), or None for "
                "no limit"
            )


def _dollars(value: Any) -> bool:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return 0 <= float(value) < math.inf
    except OverflowError:  # an int past the largest float
        return False
