"""SharedBudget given hostile values: a name, limits, a period or a store it cannot keep
is a UsageError when it is made (naming the value, never quoting a huge one whole); a
name it can keep is stored and read back exactly, in SQLite and PostgreSQL."""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from openprogram import (
    BudgetManager,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    SharedBudget,
    UsageError,
)
from tests.support.priced import spend

HUGE = "x" * (1 << 20)


def stopped(budget: SharedBudget, times: int) -> str:
    """The stop message of spend(times) under `budget` (it must stop)."""
    manager = BudgetManager(shared=budget)
    with (
        Session(),
        Runtime(ScriptedModel(["ok"] * times), callbacks=[manager]),
        pytest.raises(RunStopped) as stop,
    ):
        spend(times)
    return str(stop.value)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("", "must be a str of 1 to 200 characters"),
        (HUGE, "must be a str of 1 to 200 characters"),
        ("x" * 201, "must be a str of 1 to 200 characters"),
        (b"tenant", "must be a str of 1 to 200 characters"),
        (None, "must be a str of 1 to 200 characters"),
        ("a\x00b", r"holds '\\x00': a name may not hold control characters"),
        ("tenant\ud800", r"holds '\\ud800'.* or lone surrogates"),
        ("tenant\n42", r"holds '\\n'"),
        ("\x1b]0;owned\x07", r"holds '\\x1b'"),
    ],
)
def test_a_name_no_store_can_keep_is_a_usage_error(name: Any, message: str) -> None:
    with pytest.raises(UsageError, match=message) as refused:
        SharedBudget(name, max_requests=1)
    assert len(str(refused.value)) < 500  # a 1 MB name is not quoted whole


@pytest.mark.parametrize(
    ("limits", "message"),
    [
        ({"max_cost": -0.01}, r"max_cost=-0\.01 must be a finite number of US dollars >= 0"),
        ({"max_cost": math.nan}, "max_cost=nan must be a finite number"),
        ({"max_cost": math.inf}, "max_cost=inf must be a finite number"),
        ({"max_cost": 10**400}, "max_cost=1000.* must be a finite number"),
        ({"max_cost": True}, "max_cost=True must be a finite number"),
        ({"max_cost": "5"}, "max_cost='5' must be a finite number"),
        ({"max_cost": Decimal("5")}, r"max_cost=Decimal\('5'\) must be a finite number"),
        ({"max_requests": -1}, "max_requests=-1 must be an int >= 0"),
        ({"max_requests": False}, "max_requests=False must be an int >= 0"),
        ({"max_requests": 2**63}, r"max_requests=9223372036854775808 must be an int >= 0 \(at"),
        ({"max_tokens": math.inf}, "max_tokens=inf must be an int >= 0"),
        ({"max_tokens": 1.0}, r"max_tokens=1\.0 must be an int >= 0"),
        ({"max_tool_calls": math.nan}, "max_tool_calls=nan must be an int >= 0"),
    ],
)
def test_a_bad_limit_is_a_usage_error_naming_it(limits: dict[str, Any], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        SharedBudget("tenant", **limits)
    with pytest.raises(UsageError, match=message):  # the run's own limits are checked alike
        BudgetManager(**limits)


@pytest.mark.parametrize("period", ["year", "", "Day", "day\x00", b"day", 1, [], {"day": 1}])
def test_a_bad_period_is_a_usage_error(period: Any) -> None:
    with pytest.raises(UsageError, match="is not one of 'hour', 'day', 'week', 'month'"):
        SharedBudget("tenant", max_requests=1, period=period)


@pytest.mark.parametrize("store", [123, object(), ["sessions.db"], b"sessions.db"])
def test_a_store_that_is_no_store_is_a_usage_error_at_once(store: Any) -> None:
    with pytest.raises(UsageError, match="is not a store"):
        SharedBudget("tenant", max_requests=1, store=store)


ODD_NAMES = [
    "'; DROP TABLE openprogram_budgets; --",
    "tenant' OR '1'='1",
    "%s %(name)s ? $1 \\",
    "租户-42",
    "\U0001f9d1\u200d\U0001f4bb",  # one emoji made of three code points
    "\u202egnp.exe",  # a right-to-left override
    "e\u0301",  # e and a combining accent: not the same name as "é"
    "é",
    "\U0001d518" * 200,  # 200 characters of 4 bytes each
]


def test_odd_names_are_stored_and_read_back_exactly(durable_store: str) -> None:
    budgets = [SharedBudget(name, max_requests=1, store=durable_store) for name in ODD_NAMES]
    for name, budget in zip(ODD_NAMES, budgets, strict=True):
        assert f"shared budget {name!r} max_requests=1" in stopped(budget, 2)
    for name in ODD_NAMES:  # new objects, as another process would make them
        assert SharedBudget(name, max_requests=1, store=durable_store).tally().requests == 1
    store = budgets[0]._counters()
    found = store._connect().execute("SELECT name FROM openprogram_budgets").fetchall()
    assert sorted(row[0] for row in found) == sorted(ODD_NAMES)


def test_the_largest_limits_reach_the_database_and_hold(durable_store: str) -> None:
    most = SharedBudget(
        "most",
        max_cost=1e308,
        max_tokens=2**63 - 1,
        max_requests=2**63 - 1,
        max_tool_calls=2**63 - 1,
        store=durable_store,
    )
    with Session(), Runtime(ScriptedModel(["ok"] * 3), callbacks=[BudgetManager(shared=most)]):
        assert spend(3) == 3
    assert most.tally().requests == 3


def test_the_stop_message_shows_an_odd_name_escaped(tmp_path: Path) -> None:
    tricky = SharedBudget("\u202egnp.exe", max_requests=0, store=str(tmp_path / "b.db"))
    assert "shared budget '\\u202egnp.exe' max_requests=0" in stopped(tricky, 1)
