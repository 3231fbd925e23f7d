"""The functions the run tests queue; workers import them as tests.openprogram.runs.jobs:NAME.

Every body appends "NAME ARGS PID" to the file $OPENPROGRAM_TEST_RUNS_LOG, so a test
counts what really ran (not what was answered from the record). `pause(label)` blocks
while a FIFO named `label` exists in $OPENPROGRAM_TEST_RUNS_FIFOS: a test that opens it
for writing gets past its open exactly when a worker waits there, and lets the worker go
on by closing it (or kills the worker). Nothing here waits on a timer.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from openprogram import agentic_function, ask_user, idempotency_key

LOG = "OPENPROGRAM_TEST_RUNS_LOG"
FIFOS = "OPENPROGRAM_TEST_RUNS_FIFOS"


def log(line: str) -> None:
    path = os.environ.get(LOG)
    if path:
        with open(path, "a") as file:
            file.write(f"{line} {os.getpid()}\n")


def pause(label: str) -> None:
    folder = os.environ.get(FIFOS)
    if not folder:
        return
    fifo = Path(folder) / label
    try:
        with open(fifo) as file:  # blocks until the test opens it for writing
            file.read()  # returns when the test closes it
    except FileNotFoundError:
        return


def work() -> None:
    """A call's work: 2 ms, so its record is committed when it returns (a call of 1 ms
    or more is a durable point: docs/sessions.md#durability)."""
    time.sleep(0.002)


@agentic_function
def step(run: str, i: int) -> int:
    log(f"step {run} {i}")
    work()
    return i * i


@agentic_function(effect="once")
def charge(run: str) -> str:
    log(f"charge {run}")
    pause(f"charge-{run}")
    work()
    return f"charged {run}"


@agentic_function
def job(run: str, calls: int = 20) -> int:
    """`calls` recorded steps; before step i it pauses at "RUN-i"."""
    total = 0
    for i in range(calls):
        pause(f"{run}-{i}")
        total += step(run, i)
    return total


@agentic_function
def paying(run: str, calls: int = 4) -> str:
    """Steps, a once call (pausing inside it at "charge-RUN"), then more steps."""
    before = sum(step(run, i) for i in range(calls))
    receipt = charge(run)
    pause(f"{run}-after")
    after = sum(step(run, calls + i) for i in range(calls))
    return f"{receipt} {before + after}"


@agentic_function
def asking(run: str) -> str:
    answer = ask_user(f"approve {run}?", choices=["yes", "no"])
    log(f"asked {run} {answer}")
    return f"{run}: {answer}"


@agentic_function
def failing(run: str) -> None:
    log(f"failing {run}")
    raise ValueError(f"{run} cannot be done")


def plain(a: int, b: int = 1) -> dict[str, int]:
    """A function that is no agentic_function: its run records nothing but runs."""
    log(f"plain {a} {b}")
    return {"sum": a + b}


async def coroutine(run: str) -> str:
    return f"{run} awaited {step(run, 3)}"


@agentic_function(effect="idempotent")
def send(run: str) -> str:
    key = idempotency_key()
    log(f"send {run} {key}")
    pause(f"send-{run}")
    return key


@agentic_function
def sending(run: str) -> str:
    step(run, 0)
    return send(run)
