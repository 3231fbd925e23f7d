"""SharedBudget: limits that hold across runs and processes, counted in the store
(issue 36.5); and the cost-limit warning for models without a price."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from typing import Any

import pytest

from openprogram import (
    BudgetExceeded,
    BudgetManager,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    SharedBudget,
    UsageError,
    agentic_function,
    llm,
)
from openprogram.callbacks import BudgetTally, budget_shared
from openprogram.store import FORMAT_VERSION, MemoryStore
from tests.support.priced import PricedModel, spend


def run(store: Any, budget: BudgetManager, times: int, model: Any = None) -> str | None:
    """spend(times) in a session of `store` under `budget`: the stop reason, or None."""
    with Session(store), Runtime(model or ScriptedModel(["ok"] * times), callbacks=[budget]):
        try:
            spend(times)
        except RunStopped as stopped:
            if isinstance(stopped, BudgetExceeded):  # raise_error=True
                raise
            return str(stopped)
    return None


def test_runs_of_one_store_share_the_counts_and_the_stop_names_the_shared_limit(durable_store):
    tenant = SharedBudget("tenant-42", max_requests=5)
    assert run(durable_store, BudgetManager(shared=tenant), 3) is None
    reason = run(durable_store, BudgetManager(shared=tenant), 3)
    assert reason == (
        "budget reached: shared budget 'tenant-42' max_requests=5; the runs sharing it made "
        "5 model call(s); stopped before the next llm"
    )
    assert SharedBudget("tenant-42", max_requests=5, store=durable_store).tally().requests == 5
    # a new process's BudgetManager (a new object, same name and store) sees the counts
    assert run(durable_store, BudgetManager(shared=SharedBudget("tenant-42", max_requests=5)), 1)


def test_a_shared_cost_limit_counts_what_calls_spent_and_names_it(durable_store):
    day = SharedBudget("tenant-7", max_cost=0.025, period="day", store=durable_store)
    budget = BudgetManager(max_cost=1.0, shared=day, raise_error=True)
    with pytest.raises(BudgetExceeded) as exceeded:
        run(None, budget, 10, PricedModel(cost=0.01))  # sessions in memory, budget in the store
    assert "shared budget 'tenant-7' max_cost=$0.0250" in str(exceeded.value)
    assert "spent $0.0300 over 3 model call(s) this day (" in str(exceeded.value)
    tally = day.tally()
    assert (tally.requests, tally.tokens) == (3, 330)
    assert tally.cost_usd == pytest.approx(0.03)


def test_the_counts_start_again_in_the_next_period(monkeypatch, tmp_path):
    store = str(tmp_path / "s.db")
    day = SharedBudget("daily", max_requests=2, period="day", store=store)
    monkeypatch.setattr(budget_shared, "_clock", lambda: 1_796_256_000.0)  # 2026-12-03 00:00
    assert day.span() == "day:2026-12-03"
    assert "this day (2026-12-03 UTC)" in (run(None, BudgetManager(shared=day), 3) or "")
    monkeypatch.setattr(budget_shared, "_clock", lambda: 1_796_256_000.0 + 86_400)
    assert day.tally() == BudgetTally()
    assert run(None, BudgetManager(shared=day), 2) is None
    labels = {
        period: SharedBudget("x", max_requests=1, period=period).span(1_796_256_000.0 + 3600)
        for period in ("hour", "day", "week", "month")
    }
    assert labels == {
        "hour": "hour:2026-12-03T01",
        "day": "day:2026-12-03",
        "week": "week:2026-W49",
        "month": "month:2026-12",
    }


def test_a_refused_request_is_given_back_to_the_budgets_that_counted_it():
    roomy = SharedBudget("roomy", max_requests=100)
    tight = SharedBudget("tight", max_requests=2)
    budget = BudgetManager(shared=[roomy, tight])
    with Session(MemoryStore()) as session, Runtime(ScriptedModel(["ok"] * 5), callbacks=[budget]):
        with pytest.raises(RunStopped):
            spend(5)
        assert (roomy.tally().requests, tight.tally().requests) == (2, 2)
    assert "shared budget 'tight'" in session.dag.find(name="spend")[0].meta["stop_reason"]


def test_the_shared_tool_call_limit_stops_before_the_round_that_passes_it():
    def look(query: str) -> str:
        """Look something up."""
        return "found"

    @agentic_function
    def agent() -> str:
        return llm("find it", tools=[look])

    calls = [{"name": "look", "arguments": {"query": "a"}}]
    script = [{"tool_calls": calls}, {"tool_calls": calls * 2}, "done"]
    budget = BudgetManager(shared=SharedBudget("tools", max_tool_calls=2))
    with (
        Session(),
        Runtime(ScriptedModel(script), callbacks=[budget]),
        pytest.raises(RunStopped, match="max_tool_calls=2; the runs sharing it"),
    ):
        agent()


def test_a_version_8_store_is_migrated_and_counts_shared_budgets(tmp_path):
    path = tmp_path / "v8.db"
    with Session(path, id="old") as session:
        session.submit("hello")
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("DROP TABLE openprogram_budgets")
        connection.execute("UPDATE openprogram_meta SET value = '8'")
    assert run(path, BudgetManager(shared=SharedBudget("after", max_requests=1)), 2)
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("SELECT value FROM openprogram_meta").fetchall() == [("9",)]
        found = connection.execute("SELECT name, requests FROM openprogram_budgets").fetchall()
    assert found == [("after", 1)] and FORMAT_VERSION == 9
    assert [n.input for n in Session.open(path, "old").dag.find(kind="user")] == ["hello"]


def test_a_cost_limit_warns_for_a_model_without_a_price(recwarn):
    assert run(None, BudgetManager(0.5), 2) is None
    (warning,) = [w for w in recwarn if "cannot be enforced" in str(w.message)]
    assert "for 'scripted': its calls report a cost of $0" in str(warning.message)
    assert "max_tokens= or max_requests=" in str(warning.message)
    shared = BudgetManager(shared=SharedBudget("free", max_cost=1.0))
    with pytest.warns(UserWarning, match=r"SharedBudget\('free', max_cost=\$1.0000\)"):
        run(None, shared, 1)


def test_no_price_warning_without_a_cost_limit(recwarn):
    run(None, BudgetManager(max_requests=5, shared=SharedBudget("n", max_tokens=10**6)), 2)
    assert not [w for w in recwarn if "cannot be enforced" in str(w.message)]


def test_shared_must_be_shared_budgets():
    with pytest.raises(UsageError, match="must be a SharedBudget or a list of them"):
        BudgetManager(shared=["tenant-42"])  # type: ignore[list-item]


def test_a_zero_shared_limit_allows_no_call_and_says_so():
    reason = run(None, BudgetManager(shared=SharedBudget("none", max_cost=0)), 1)
    assert reason == (
        "budget reached: shared budget 'none' max_cost=$0.0000 allows no model call; "
        "stopped before the next llm"
    )


def test_a_request_whose_on_llm_start_fails_is_never_counted():
    class Broken:
        def on_llm_start(self, messages: list[Any]) -> list[Any]:
            raise ValueError("redactor down")

    tenant = SharedBudget("tenant-9", max_requests=5)
    budget = BudgetManager(shared=tenant)
    with Session(MemoryStore()), Runtime(ScriptedModel(["ok"]), callbacks=[budget, Broken()]):
        with pytest.raises(ValueError, match="redactor down"):
            spend(1)
        assert tenant.tally().requests == 0  # the request was never sent
