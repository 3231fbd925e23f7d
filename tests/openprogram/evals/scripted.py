"""Functions for `openprogram eval` tests: the agent with its scripted model built in."""

from __future__ import annotations

import os

from openprogram import Runtime, ScriptedModel, agentic_function
from tests.openprogram.evals import agents


@agentic_function
def write(product: str) -> str:
    with Runtime(ScriptedModel(agents.reply)):
        return agents.write(product)


@agentic_function
def write_all(product: str) -> str:
    with Runtime(
        ScriptedModel(
            lambda request: "approve" if request.function == "review" else f"Smart {product}."
        )
    ):
        return agents.write(product)


@agentic_function
def write_where(product: str) -> dict[str, object]:
    """write, the process it ran in (a Ray worker's under engine='ray') and the
    environment's OPENPROGRAM_EVAL_MARK (set by a runtime_env)."""
    mark = os.environ.get("OPENPROGRAM_EVAL_MARK")
    return {"tagline": write(product), "pid": os.getpid(), "mark": mark}


def tagline(case: object, output: dict[str, object]) -> bool:
    """Whether write_where's tagline is the case's expected one."""
    return output["tagline"] == getattr(case, "expected", None)


# products `write` approves (its review passes drafts about coffee) and ones it rejects
COFFEES = ("coffee", "iced coffee", "coffee beans", "coffee cake", "coffee mug")
OTHERS = ("tea", "cocoa", "juice", "water", "cola")
