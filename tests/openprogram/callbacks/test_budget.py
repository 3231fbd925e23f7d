"""BudgetManager: a per-run cost cap gating model calls and GUI steps."""

from __future__ import annotations

import asyncio
import logging

import pytest

from openprogram import (
    BudgetExceeded,
    BudgetManager,
    RunStopped,
    Runtime,
    Session,
    UsageError,
    agentic_function,
    allm,
    llm,
)
from openprogram.callbacks import gate
from tests.support.priced import PricedModel, spend


def test_the_run_stops_cleanly_at_the_cap_with_the_reason_recorded():
    model = PricedModel(cost=0.01)
    budget = BudgetManager(0.025)
    with (
        Session() as session,
        Runtime(model, callbacks=[budget]),
        pytest.raises(RunStopped) as stopped,
    ):
        spend(10)
    assert type(stopped.value) is RunStopped
    assert len(model.requests) == 3  # $0.00, $0.01, $0.02 are under the cap; $0.03 is not
    assert budget.spent == pytest.approx(0.03) and budget.calls == 3
    run = session.dag.find(name="spend")[0]
    assert "budget reached" in run.meta["stop_reason"]
    assert "max_cost=$0.0250" in run.meta["stop_reason"]
    assert budget.stop_reason == run.meta["stop_reason"]


def test_raise_error_raises_budget_exceeded():
    budget = BudgetManager(0.01, raise_error=True)
    with (
        Session() as session,
        Runtime(PricedModel(cost=0.01), callbacks=[budget]),
        pytest.raises(BudgetExceeded, match="budget reached"),
    ):
        spend(5)
    assert "budget reached" in session.dag.find(name="spend")[0].meta["stop_reason"]


def test_spend_resets_for_every_run():
    model = PricedModel(cost=0.01)
    budget = BudgetManager(0.02)
    with Session(), Runtime(model, callbacks=[budget]):
        assert spend(2) == 2
        assert spend(2) == 2
        with pytest.raises(RunStopped):
            spend(3)
    assert len(model.requests) == 6
    assert budget.spent == pytest.approx(0.02)


def test_concurrent_runs_each_get_their_own_cap():
    model = PricedModel(cost=0.01)
    budget = BudgetManager(0.015)

    @agentic_function
    async def worker(name: str) -> int:
        done = 0
        try:
            for _ in range(5):
                await allm(name)
                done += 1
                await asyncio.sleep(0)
        except RunStopped:
            pass
        return done

    async def both():
        return await asyncio.gather(worker("a"), worker("b"))

    with Session(), Runtime(model, callbacks=[budget]):
        assert asyncio.run(both()) == [2, 2]


def test_calls_of_unknown_cost_are_counted_and_warned_about(caplog):
    caplog.set_level(logging.INFO, "openprogram.callbacks")
    budget = BudgetManager(max_requests=5)
    seen = {}

    @agentic_function
    def ask() -> None:
        llm("a")
        llm("b")
        seen.update(spent=budget.spent, unpriced=budget.unpriced_calls, calls=budget.calls)

    with Session() as session, Runtime(PricedModel(cost=None), callbacks=[budget]):
        ask()
    assert seen == {"spent": 0.0, "unpriced": 2, "calls": 2}
    assert "cost of llm call" in caplog.text and "unknown" in caplog.text
    assert all(node.meta["cost_unknown"] for node in session.dag.find(kind="llm"))


def test_the_stop_reason_mentions_calls_of_unknown_cost():
    unpriced, priced = PricedModel(cost=None), PricedModel(cost=0.01)

    @agentic_function
    def mixed() -> None:
        llm("a", model=unpriced)
        llm("b", model=priced)
        llm("c", model=priced)

    with (
        Session(),
        Runtime(priced, callbacks=[BudgetManager(0.01)]),
        pytest.raises(RunStopped, match=r"\$0\.0100 over 2 model call\(s\) \(plus 1 call"),
        pytest.warns(UserWarning, match="cannot be enforced"),
    ):
        mixed()
    assert len(priced.requests) == 1


def test_the_gate_also_answers_for_gui_steps():
    budget = BudgetManager(0.01)
    runtime = Runtime(PricedModel(cost=0.02), callbacks=[budget])
    answers = []

    @agentic_function
    def gui_step(index: int) -> None:
        frame = session.dag.find(name="gui_step")[-1]
        answers.append(gate(runtime.callbacks, runtime, kind="gui_step", frame=frame))
        if answers[-1] is None:
            llm("plan")

    @agentic_function
    def gui_agent() -> None:
        for index in range(3):
            gui_step(index)
            if answers[-1] is not None:
                return

    with Session() as session, runtime:
        gui_agent()
    assert answers[0] is None
    assert "stopped before the next gui_step" in answers[1]
    assert len(answers) == 2
    assert "budget reached" in session.dag.find(name="gui_agent")[0].meta["stop_reason"]


def test_invalid_caps_are_rejected():
    with pytest.raises(UsageError, match="max_cost=-1"):
        BudgetManager(-1)
    assert BudgetManager(0.5).remaining == 0.5


def test_a_cost_limit_over_an_unpriced_model_warns_once_that_it_cannot_be_enforced():
    budget = BudgetManager(0.01)
    with (
        Session(),
        Runtime(PricedModel(cost=None), callbacks=[budget]),
        pytest.warns(UserWarning, match=r"cannot be enforced for 'priced/test'") as caught,
    ):
        spend(3)
        spend(2)
    assert len([w for w in caught if "cannot be enforced" in str(w.message)]) == 1
    assert budget.unpriced_calls == 2


def test_no_warning_without_a_cost_limit(recwarn):
    with Session(), Runtime(PricedModel(cost=None), callbacks=[BudgetManager(max_requests=9)]):
        spend(2)
    assert not [w for w in recwarn if "cannot be enforced" in str(w.message)]


@pytest.mark.parametrize(
    ("limits", "requests", "message"),
    [
        (
            {"max_requests": 2},
            2,
            "max_requests=2; made 2 model call(s); stopped before the next llm",
        ),
        ({"max_tokens": 250}, 3, "max_tokens=250; used 330 tokens over 3 model call(s)"),
        ({"max_cost": 0}, 0, "max_cost=$0 allows no model call"),
    ],
)
def test_each_limit_stops_the_run_naming_the_limit_and_the_count(limits, requests, message):
    model = PricedModel(cost=None)  # 110 tokens a call, of unknown price
    budget = BudgetManager(**limits)
    with (
        Session() as session,
        Runtime(model, callbacks=[budget]),
        pytest.raises(RunStopped) as stopped,
    ):
        spend(10)
    assert len(model.requests) == requests
    assert message in str(stopped.value)
    assert "$0.0000" not in str(stopped.value)
    assert message in session.dag.find(name="spend")[0].meta["stop_reason"]


def test_max_tool_calls_stops_before_a_round_that_would_pass_it():
    from openprogram import ScriptedModel

    ran = []

    def note(text: str) -> str:
        ran.append(text)
        return "noted"

    def asks(*texts: str) -> dict:
        return {"tool_calls": [{"name": "note", "arguments": {"text": t}} for t in texts]}

    model = ScriptedModel([asks("a", "b"), asks("c", "d"), "done"])
    budget = BudgetManager(max_tool_calls=3, raise_error=True)
    with (
        Session() as session,
        Runtime(model, callbacks=[budget]),
        pytest.raises(BudgetExceeded, match=r"max_tool_calls=3; the model asked for 4 tool"),
    ):
        llm("take notes", tools=[note])
    assert ran == ["a", "b"]
    assert budget.tool_calls == 4
    assert len(session.dag.find(name="note", kind="code")) == 2


def test_limits_must_be_whole_numbers():
    with pytest.raises(UsageError, match=r"max_tokens=1\.5 must be an int >= 0"):
        BudgetManager(max_tokens=1.5)  # type: ignore[arg-type]
    assert BudgetManager(max_requests=3).remaining is None
    assert "max_requests=3" in repr(BudgetManager(max_requests=3))
