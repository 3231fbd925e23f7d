"""A child process asking a model, in one way, until a shared budget stops it.

    python -m tests.openprogram.callbacks.shared_child STORE NAME MAX_REQUESTS WAY API_BASE

WAY is how it asks the local OpenAI-compatible server at API_BASE (through litellm):
"llm" (sync calls), "gather" (allm calls gathered at once), "stream" (sync streams read
to the end), "astream-abandoned" (async streams left after their first chunk) or
"tools" (one sync tool loop). It opens a session of its own in STORE, says "ready",
waits for "go" (so that every child starts at once), then asks until the shared budget
`NAME` (max_requests=MAX_REQUESTS, counted in STORE) stops it and prints what its run
counted as JSON: {"calls", "tokens", "cost_usd", "tool_calls", "reason"}.
"""

from __future__ import annotations

import asyncio
import json
import sys

from openprogram import (
    BudgetManager,
    RunStopped,
    Runtime,
    Session,
    SharedBudget,
    agentic_function,
    allm,
    llm,
)
from tests.support.children import ready

MODEL = "openai/gpt-4o-mini"
"""A model litellm's cost map prices, so every call has a known cost."""


def look(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@agentic_function
def asking(way: str, times: int) -> None:
    """Ask `times` times in `way` (RunStopped once the budget is reached)."""
    if way == "llm":
        for _ in range(times):
            llm("go")
    elif way == "stream":
        for _ in range(times):
            "".join(llm("go", stream=True))
    elif way == "tools":
        llm("look it up, again and again", tools=[look])
    else:
        asyncio.run(_asking(way, times))


async def _asking(way: str, times: int) -> None:
    if way == "gather":
        answers = await asyncio.gather(*(allm("go") for _ in range(times)), return_exceptions=True)
        refused = [a for a in answers if not isinstance(a, str)]
        if refused:
            raise refused[0]
        return
    for _ in range(times):  # astream-abandoned
        stream = await allm("go", stream=True)
        async for _chunk in stream:
            break
        await stream.aclose()


def main(store: str, name: str, limit: int, way: str, api_base: str) -> None:
    budget = BudgetManager(shared=SharedBudget(name, max_requests=limit))
    runtime = Runtime(MODEL, api_base=api_base, api_key="test", callbacks=[budget])
    with Session(store) as session, runtime:
        session.store.budget_tally(name, "")  # connected: the race starts at the line
        if not ready():
            return
        reason = None
        try:
            asking(way, limit * 2)
        except RunStopped as stopped:
            reason = str(stopped)
    counted = {
        "calls": budget.calls,
        "tokens": budget.tokens,
        "cost_usd": budget.spent,
        "tool_calls": budget.tool_calls,
        "reason": reason,
    }
    print(json.dumps(counted), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])
