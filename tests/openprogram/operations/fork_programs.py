"""Programs the fork tests run in child processes: a parent session whose background
operation is running when it is killed, its fork, and the parent resumed.

`python -m tests.openprogram.operations.fork_programs parent|fork|resume STORE LOG`
"""

from __future__ import annotations

import json
import sys
import time

from openprogram import Session
from openprogram.operations import Operation, operation_tool
from openprogram.operations.tracker import tracker
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


@operation_tool(background=True)
def charge(log: str) -> Operation:
    """Charge the card (logs "start charge", then takes a minute)."""
    return Operation("test.append_once", {"log": log, "name": "charge", "sleep_s": 60})


def _states(session: Session) -> list[list[object]]:
    return [[r.id, r.state, r.attempts] for r in session.operations()]


def parent(store: str, log: str) -> None:
    with Session.open(store, "p", create=True):
        print(json.dumps(charge(log=log)), flush=True)
        time.sleep(120)  # killed meanwhile


def fork(store: str, log: str) -> None:
    with Session.open(store, "f", resume=True) as session:
        handle = charge(log=log)  # replayed from the shared history: no new operation
        (waited,) = tracker(session).wait([handle["operation"]], timeout_s=30)
        print(json.dumps({"handle": handle, "states": _states(session), "waited": waited.state}))


def resume(store: str, log: str) -> None:
    with Session.open(store, "p", resume=True) as session:
        charge(log=log)  # replayed
        operations = tracker(session)
        operations.pick_up_background(None)  # by the effect rule: a once one is unknown
        operations.wait([r.id for r in operations.records()])
        print(json.dumps(_states(session)))


if __name__ == "__main__":
    {"parent": parent, "fork": fork, "resume": resume}[sys.argv[1]](sys.argv[2], sys.argv[3])
