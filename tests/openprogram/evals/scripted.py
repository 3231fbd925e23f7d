"""Functions for `openprogram eval` tests: the agent with its scripted model built in."""

from __future__ import annotations

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
