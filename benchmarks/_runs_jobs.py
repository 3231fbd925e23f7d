"""The run bench_runs.py queues: `calls` recorded steps and one `effect="once"` charge.

Workers import it as `_runs_jobs:bench_job` (bench_runs.py starts them in this folder).
Every body appends "KIND RUN I PID" to $OPENPROGRAM_BENCH_RUNS_LOG (one short append,
atomic), so the bench counts what really ran, not what was answered from a record.
"""

from __future__ import annotations

import os
import time

from openprogram import agentic_function

_LOG = os.environ.get("OPENPROGRAM_BENCH_RUNS_LOG")
_WORK_S = float(os.environ.get("OPENPROGRAM_BENCH_RUNS_WORK_S", "0.0015"))


def _log(line: str) -> None:
    if _LOG:
        descriptor = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, f"{line} {os.getpid()}\n".encode())
        finally:
            os.close(descriptor)


@agentic_function
def step(run: str, i: int) -> int:
    _log(f"step {run} {i}")
    time.sleep(_WORK_S)  # a call's work (a tool, a parse): 1 ms or more is committed at its end
    return i


@agentic_function(effect="once")
def charge(run: str) -> str:
    _log(f"charge {run} 0")
    time.sleep(_WORK_S)
    return f"charged {run}"


@agentic_function
def bench_job(run: str, calls: int) -> str:
    half = calls // 2
    total = sum(step(run, i) for i in range(half - 1))
    receipt = charge(run)
    total += sum(step(run, i) for i in range(half - 1, calls - 2))
    return f"{receipt} {total}"
