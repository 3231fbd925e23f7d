"""Shared budgets as stored: one counter row per budget and period, changed atomically.

Owns the `openprogram_budgets` table (what a budget's runs spent in one period: cost,
tokens, requests, tool calls) and the SQL both backends share, plus LocalBudgets, the
same counters in this process (MemoryStore, and no store at all). The limits and their
meaning are callbacks/budget_shared.py's. Start at SQLBudgets.charge_budget().
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

__all__ = ["BUDGETS_VERSION", "BudgetLimits", "BudgetTally", "LocalBudgets", "SQLBudgets", "tables"]

BUDGETS_VERSION = 9
"""The format_version that added the budgets table."""

_COLUMNS = "cost_usd, tokens, requests, tool_calls, unpriced_calls"


class BudgetTally(NamedTuple):
    """What the runs counted against one shared budget spent in one period."""

    cost_usd: float = 0.0
    tokens: int = 0
    """Input plus output tokens of the model calls."""
    requests: int = 0
    """Model requests let through (counted when sent, answered or not)."""
    tool_calls: int = 0
    unpriced_calls: int = 0
    """Calls whose price was unknown, counted as $0."""


class BudgetLimits(NamedTuple):
    """The limits a request is let through under (None: no limit); each > 0."""

    max_cost: float | None = None
    max_tokens: int | None = None
    max_requests: int | None = None


def tables(real: str, integer: str) -> tuple[str, ...]:
    """The CREATE statement of the table, with the backend's column types."""
    return (
        "CREATE TABLE IF NOT EXISTS openprogram_budgets (name TEXT NOT NULL, "
        f"span TEXT NOT NULL, cost_usd {real} NOT NULL, tokens {integer} NOT NULL, "
        f"requests {integer} NOT NULL, tool_calls {integer} NOT NULL, "
        f"unpriced_calls {integer} NOT NULL, updated_at {real} NOT NULL, "
        "PRIMARY KEY (name, span))",
    )


class SQLBudgets:
    """The budget methods of SQLStore (a mixin: it uses SQLStore's connection, lock and
    error translation). Each change is one statement, atomic in either database: a
    request is counted only if the row, as it stands when the database changes it, is
    under every limit (a compare-and-set), so processes sharing a budget never pass
    max_requests together."""

    _lock: Any
    placeholder: ClassVar[str] = "?"

    if TYPE_CHECKING:  # SQLStore's

        def _connect(self) -> Any: ...
        def _translate(self, action: str) -> Any: ...
        def _check_writable(self, action: str) -> None: ...

    def charge_budget(self, name: str, span: str, limits: BudgetLimits) -> BudgetTally | None:
        """Count one request against budget `name` in period `span` if its tally is under
        every one of `limits`: None when counted, else the tally that refused it."""
        p = self.placeholder
        under = " AND ".join(
            f"openprogram_budgets.{column} < {p}"
            for column, limit in zip(("cost_usd", "tokens", "requests"), limits, strict=True)
            if limit is not None
        )
        charge = (
            f"INSERT INTO openprogram_budgets (name, span, {_COLUMNS}, updated_at) "
            f"VALUES ({p}, {p}, 0, 0, 1, 0, 0, {p}) ON CONFLICT (name, span) DO UPDATE "
            "SET requests = openprogram_budgets.requests + 1, updated_at = excluded.updated_at"
            + (f" WHERE {under}" if under else "")
        )
        values = [limit for limit in limits if limit is not None]
        self._check_writable(f"count a request against the budget {name!r}")
        with self._lock, self._translate(f"count a request against the budget {name!r}"):
            connection = self._connect()
            if connection.execute(charge, (name, span, time.time(), *values)).rowcount:
                return None
        return self.budget_tally(name, span)

    def spend_budget(self, name: str, span: str, spent: BudgetTally) -> None:
        """Add `spent` (its requests too: usually 0, counted by charge_budget) to budget
        `name` in period `span`."""
        p = self.placeholder
        add = (
            f"INSERT INTO openprogram_budgets (name, span, {_COLUMNS}, updated_at) "
            f"VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p}, {p}) ON CONFLICT (name, span) "
            "DO UPDATE SET "
            + ", ".join(
                f"{c} = openprogram_budgets.{c} + excluded.{c}" for c in BudgetTally._fields
            )
            + ", updated_at = excluded.updated_at"
        )
        self._check_writable(f"count spending against the budget {name!r}")
        with self._lock, self._translate(f"count spending against the budget {name!r}"):
            self._connect().execute(add, (name, span, *spent, time.time()))

    def budget_tally(self, name: str, span: str) -> BudgetTally:
        """What budget `name` counted in period `span` (zeros when nothing yet)."""
        p = self.placeholder
        with self._lock, self._translate(f"read the budget {name!r}"):
            found = (
                self._connect()
                .execute(
                    f"SELECT {_COLUMNS} FROM openprogram_budgets WHERE name = {p} AND span = {p}",
                    (name, span),
                )
                .fetchone()
            )
        return BudgetTally() if found is None else _tally(found)


def _tally(values: Any) -> BudgetTally:
    cost, tokens, requests, tool_calls, unpriced = values
    return BudgetTally(float(cost), int(tokens), int(requests), int(tool_calls), int(unpriced))


class LocalBudgets:
    """The same counters in this process only: a MemoryStore's, or the process's when
    sessions are kept in no store."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies: dict[tuple[str, str], BudgetTally] = {}

    def charge_budget(self, name: str, span: str, limits: BudgetLimits) -> BudgetTally | None:
        with self._lock:
            tally = self._tallies.get((name, span), BudgetTally())
            under = all(
                limit is None or value < limit
                for value, limit in zip(tally[:3], limits, strict=True)
            )
            if not under:
                return tally
            self._tallies[(name, span)] = tally._replace(requests=tally.requests + 1)
            return None

    def spend_budget(self, name: str, span: str, spent: BudgetTally) -> None:
        with self._lock:
            tally = self._tallies.get((name, span), BudgetTally())
            self._tallies[(name, span)] = BudgetTally(
                tally.cost_usd + spent.cost_usd,
                tally.tokens + spent.tokens,
                tally.requests + spent.requests,
                tally.tool_calls + spent.tool_calls,
                tally.unpriced_calls + spent.unpriced_calls,
            )

    def budget_tally(self, name: str, span: str) -> BudgetTally:
        with self._lock:
            return self._tallies.get((name, span), BudgetTally())
