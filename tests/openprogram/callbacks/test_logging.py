"""LoggingCallback: one line per call start and end, model exchange, action and run end."""

from __future__ import annotations

import logging

import pytest

from openprogram import (
    BudgetManager,
    LoggingCallback,
    RunStopped,
    Runtime,
    Session,
    agentic_function,
    llm,
)
from tests.support.priced import PricedModel


@agentic_function
def outer() -> str:
    return inner()


@agentic_function
def inner() -> str:
    return llm("hi")


def messages(caplog, name="openprogram.run"):
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == name]


def test_calls_usage_and_the_run_end_are_logged_one_line_each(caplog):
    caplog.set_level(logging.INFO, "openprogram.run")
    with Session(), Runtime(PricedModel(cost=0.002), callbacks=[LoggingCallback()]):
        outer()
    lines = messages(caplog)
    assert [text.split(" ")[0:2] for _, text in lines] == [
        ["call", "start"],
        ["call", "start"],
        ["llm", "inner"],
        ["call", "end"],
        ["call", "end"],
        ["run", "end"],
    ]
    assert lines[0] == ("INFO", "call start outer #1")
    assert lines[2][1] == (
        "llm inner #1: 100 in / 10 out tokens (40 cached, 3 reasoning), $0.0020, 0.50s"
    )
    assert lines[3][1].startswith("call end inner #1 completed in ")
    assert lines[5][1].startswith("run end outer #1 completed in ")
    assert lines[5][1].endswith(
        ": 1 llm call(s), 100 in / 10 out tokens (40 cached, 3 reasoning), $0.0020"
    )


def test_failures_and_stops_are_visible_and_failures_are_warnings(caplog):
    caplog.set_level(logging.DEBUG, "app")

    @agentic_function
    def crash() -> None:
        raise ValueError("boom")

    callback = LoggingCallback("app", level=logging.DEBUG)
    with Session():
        with Runtime(PricedModel(cost=None), callbacks=[callback]), pytest.raises(ValueError):
            crash()
        budget = BudgetManager(0.0)
        with Runtime(PricedModel(), callbacks=[budget, callback]), pytest.raises(RunStopped):
            outer()
    lines = messages(caplog, "app")
    assert ("WARNING", lines[1][1]) == lines[1]
    assert "call end crash #1 error: ValueError: boom" in lines[1][1]
    assert lines[-1][0] == "DEBUG" and "run end outer #1 stopped (budget reached" in lines[-1][1]


def test_actions_are_logged(caplog):
    caplog.set_level(logging.INFO, "openprogram.run")
    callback = LoggingCallback()
    callback.on_action_start({"type": "click", "x": 3, "y": 4, "element": None})
    callback.on_action_end({"type": "click", "x": 3, "y": 4}, "outside the screen")
    assert messages(caplog) == [
        ("INFO", "action start click(x=3, y=4)"),
        ("WARNING", "action end click(x=3, y=4) failed: outside the screen"),
    ]


def test_unknown_costs_are_flagged_in_the_usage_line(caplog):
    caplog.set_level(logging.INFO, "openprogram.run")
    with Session(), Runtime(PricedModel(cost=None), callbacks=[LoggingCallback()]):
        llm("top level")
    (line,) = messages(caplog)
    assert "$0.0000 (+1 call(s) of unknown cost)" in line[1]


def test_huge_actions_errors_and_store_urls_are_logged_bounded(caplog):
    caplog.set_level(logging.INFO, "openprogram.run")
    callback = LoggingCallback()
    callback.on_action_start({"type": "type", "text": "t" * 10_000_000})
    callback.on_action_end({"type": "open", "url": "postgresql://bob:S3cretPassw0rd!@h/db"},
                           "e" * 10_000_000)  # fmt: skip

    @agentic_function
    def crash() -> None:
        raise ValueError("v" * 10_000_000)

    with Session(), Runtime(PricedModel(), callbacks=[callback]), pytest.raises(ValueError):
        crash()
    lines = [text for _, text in messages(caplog)]
    assert [len(text) < 1_000 for text in lines] == [True] * len(lines)
    assert "…[cut 9 999 700 of 10 000 000 characters]" in lines[0]
    assert "S3cret" not in lines[1] and "bob:***@h/db" in lines[1]
    assert "call end crash #1 error: ValueError: vvv" in lines[-2]
