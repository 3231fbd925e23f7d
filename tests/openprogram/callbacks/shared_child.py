"""A child process counting its model calls against a shared budget (test_budget_shared).

    python shared_child.py STORE NAME MAX_REQUESTS

Opens a session of its own in STORE, says "ready", waits for a line on stdin (so that
every child starts at once), then calls the model until the shared budget stops it and
prints {"requests": ..., "reason": ...} as JSON.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

if __name__ == "__main__":  # a child process: import openprogram from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from openprogram import (
    BudgetManager,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    SharedBudget,
    agentic_function,
    llm,
)


@agentic_function
def spend(times: int) -> int:
    for _ in range(times):
        llm("go")
    return times


def main(store: str, name: str, limit: int) -> None:
    model = ScriptedModel(["ok"] * (limit + 5))
    budget = BudgetManager(shared=SharedBudget(name, max_requests=limit))
    with Session(store) as session, Runtime(model, callbacks=[budget]):
        session.store.budget_tally(name, "")  # connected: the race starts at the line
        print("ready", flush=True)
        sys.stdin.readline()
        reason = None
        try:
            spend(limit + 5)
        except RunStopped as stopped:
            reason = str(stopped)
    print(json.dumps({"requests": len(model.requests), "reason": reason}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
