"""The programs the store tests record, kill, resume and fork.

Imported by the tests, and run as a child process by the kill tests:
    python programs.py agent STORE SESSION KILL_AT   (blocks at KILL_AT until killed)
    python programs.py hang STORE SESSION   (one fast call, then a call that waits to be killed)
    python programs.py loop STORE SESSION CALLS [flush]
                       (prints each finished call; with "flush", once it is durable)
    python programs.py ledger STORE SESSION STEPS
                       (ledger(STEPS): prints "paid I" as each exchange returns and
                       "settled I" as each slow call does, then waits to be killed)
    python programs.py exit STORE SESSION CALLS
                       (records CALLS calls and exits without closing the session)
    python programs.py writer STORE SESSION NAME CALLS pause|run
                       (records tagged(NAME, i) into the existing SESSION; "pause" stops
                       after the first call, saying "holding", until a line arrives;
                       exits 3 when refused as a second writer)
The child says "ready" on stdout when it reaches KILL_AT, so the parent kills it at a
known point without sleeping.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

if __name__ == "__main__":  # a child process: import openprogram from this checkout
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from pydantic import BaseModel

from openprogram import (
    ModelRequest,
    Runtime,
    ScriptedModel,
    Session,
    SessionLocked,
    agentic_function,
    llm,
)
from openprogram.store.recorder import SLOW_CALL_S
from tests.support.children import ready

executed: list[str] = []
"""What the decorated functions below really ran, in order (not what was replayed)."""
asked: list[str] = []
"""The llm() contents the model was really asked."""


def _no_stop(label: str) -> None:
    return None


checkpoint: Callable[[str], None] = _no_stop
"""Called at labelled points ("tool 2", "plan 2 thought", "llm: plan step 2"); tests
replace it to stop the program there."""


class Plan(BaseModel):
    action: str
    step: int


@agentic_function
def tool(i: int) -> int:
    """Observe: a side effect that must not be repeated."""
    executed.append(f"tool {i}")
    checkpoint(f"tool {i}")
    return i * i


@agentic_function
def plan(i: int, observation: int) -> Plan:
    """Think, then plan: two llm exchanges."""
    executed.append(f"plan {i}")
    thought = llm(f"think about step {i}")
    checkpoint(f"plan {i} thought")
    return llm(f"plan step {i} after {thought}", response_format=Plan)


@agentic_function
def step(i: int) -> dict:
    observation = tool(i)
    return {"observation": observation, "plan": plan(i, observation).model_dump()}


@agentic_function
def agent(task: str, steps: int = 4) -> list[dict]:
    return [step(i) for i in range(steps)]


def reply(request: ModelRequest) -> str:
    """The scripted model of these programs (answers depend only on the question)."""
    text = request.text
    asked.append(text.splitlines()[0])
    checkpoint(f"llm: {text.splitlines()[0]}")
    number = int(re.search(r"step (\d+)", text).group(1))  # type: ignore[union-attr]
    if text.startswith("think"):
        return f"thought {number}"
    return json.dumps({"action": f"act {number}", "step": number})


def model() -> ScriptedModel:
    return ScriptedModel(reply)


EXPECTED = [{"observation": i * i, "plan": {"action": f"act {i}", "step": i}} for i in range(4)]
"""agent("task") when nothing goes wrong."""


@agentic_function
def count(i: int) -> int:
    return i


@agentic_function
def hang() -> None:
    """Says "ready" and waits for the parent to kill it, recording nothing more."""
    print("ready", flush=True)
    sys.stdin.read()


@agentic_function
def tagged(writer: str, i: int) -> str:
    return f"{writer} {i}"


@agentic_function
def tick(i: int) -> int:
    """A fast call (microseconds): it waits in a batch until the next durable point."""
    executed.append(f"tick {i}")
    return i


@agentic_function
def settle(i: int) -> int:
    """A call of a few milliseconds (like a GUI action waiting for the screen)."""
    executed.append(f"settle {i}")
    time.sleep(SLOW_CALL_S * 3)
    return i


PAID_EVERY = 7
"""ledger() asks the model after every PAID_EVERY-th tick."""
SLOW_EVERY = 11
"""ledger() settles after every SLOW_EVERY-th tick."""


@agentic_function
def ledger(steps: int) -> list[str]:
    """Fast calls with a paid exchange after every PAID_EVERY of them and a slow call
    after every SLOW_EVERY of them."""
    replies = []
    for i in range(steps):
        tick(i)
        if i % PAID_EVERY == PAID_EVERY - 1:
            replies.append(llm(f"think about step {i}"))
            checkpoint(f"paid {i}")
        if i % SLOW_EVERY == SLOW_EVERY - 1:
            settle(i)
            checkpoint(f"settled {i}")
    return replies


def _writer(store: str, session_id: str, name: str, calls: int, pause: bool) -> None:
    session = Session.open(store, session_id)
    if not ready():
        return
    try:
        with session:
            for i in range(calls):
                tagged(name, i)
                if i == 0 and pause:
                    session.flush()
                    print("holding", flush=True)
                    sys.stdin.readline()
    except SessionLocked as exc:
        print(f"refused: {exc}", file=sys.stderr, flush=True)
        raise SystemExit(3) from None
    if session.failed_writes:
        raise SystemExit(f"{session.failed_writes} records failed")


def _say(label: str) -> None:
    print(label, flush=True)


def _block_at(label: str) -> Callable[[str], None]:
    def stop(reached: str) -> None:
        if reached == label:
            print("ready", flush=True)
            sys.stdin.read()  # the parent kills us here

    return stop


def main(argv: list[str]) -> None:
    mode, store, session = argv[:3]
    global checkpoint
    if mode == "agent":
        checkpoint = _block_at(argv[3])
        with Session(store, id=session), Runtime(model()):
            agent("task")
    elif mode == "loop":
        if not ready():
            return
        flush = argv[4:] == ["flush"]
        with Session(store, id=session) as recording:
            for i in range(int(argv[3])):
                count(i)
                if flush:
                    recording.flush()
                print(i, flush=True)
    elif mode == "ledger":
        if not ready():
            return
        checkpoint = _say
        with Session(store, id=session), Runtime(model()):
            ledger(int(argv[3]))
        sys.stdin.read()  # the parent kills us here, or earlier
    elif mode == "hang":
        with Session(store, id=session):
            count(0)
            hang()
    elif mode == "exit":
        recording = Session(store, id=session).__enter__()
        for i in range(int(argv[3])):
            count(i)
        print(f"{recording.id} recorded", flush=True)  # and exits with the session open
    elif mode == "writer":
        _writer(store, session, argv[3], int(argv[4]), argv[5] == "pause")
    else:
        raise SystemExit(f"unknown mode {mode!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
