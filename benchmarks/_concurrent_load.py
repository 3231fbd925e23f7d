"""The concurrent recording loads of bench_store.py (e): many writers, many sessions.

One session, many writers: 64 asyncio tasks and 16 threads (copied contexts), each a
top-level call making `calls` calls, every 10th an llm exchange with a scripted model.
Many sessions, one store: `sessions` sessions, each its own writer making the same
calls, as threads, as asyncio tasks, or spread over processes. Each load reports nodes
per second of wall clock and of the process's CPU time. Start at one_session().
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from typing import Any

from openprogram import Runtime, ScriptedModel, Session, agentic_function, allm, llm
from openprogram.agentic.threads import start_thread

__all__ = ["many_sessions", "one_session"]


@agentic_function
def work(i: int) -> int:
    return i


@agentic_function
def ask(i: int) -> str:
    return llm(f"question {i}")


@agentic_function
async def aask(i: int) -> str:
    return await allm(f"question {i}")


@agentic_function
def writer(number: int, calls: int) -> int:
    for i in range(calls):
        if i % 10 == 9:
            ask(i)
        else:
            work(i)
    return calls


@agentic_function
async def awriter(number: int, calls: int) -> int:
    for i in range(calls):
        if i % 10 == 9:
            await aask(i)
        else:
            work(i)
            if i % 10 == 4:  # a task that never awaits would run its 500 calls alone
                await asyncio.sleep(0)
    return calls


def _model() -> ScriptedModel:
    return ScriptedModel(lambda request: "ok")


def _timed(run: Callable[[], int]) -> dict[str, float]:
    """Run `run` (returns the nodes it recorded): nodes/s by wall clock and by CPU."""
    wall, cpu = time.perf_counter(), time.process_time()
    nodes = run()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {"nodes": nodes, "wall_s": wall, "cpu_s": cpu, "per_s": nodes / wall,
            "per_cpu_s": nodes / cpu}  # fmt: skip


def one_session(
    store: Any, *, tasks: int = 64, threads: int = 16, calls: int = 500
) -> dict[str, float]:
    """`tasks` asyncio tasks and `threads` threads record into one session of `store`."""

    def run() -> int:
        with Session(store) as session, Runtime(_model()):
            started = [start_thread(writer, n, calls) for n in range(threads)]

            async def gathered() -> None:
                await asyncio.gather(*(awriter(n, calls) for n in range(tasks)))

            asyncio.run(gathered())
            for thread in started:
                thread.join()
            session.flush()
            return len(session.dag)

    return _timed(run)


def _session_thread(store: Any, calls: int, barrier: threading.Barrier) -> None:
    with Session(store), Runtime(_model()):
        barrier.wait()
        writer(0, calls)


def _threads(store: Any, sessions: int, calls: int) -> int:
    barrier = threading.Barrier(sessions)
    started = [
        threading.Thread(target=_session_thread, args=(store, calls, barrier))
        for _ in range(sessions)
    ]
    for thread in started:
        thread.start()
    for thread in started:
        thread.join()
    return sessions * (1 + calls + calls // 10)


async def _session_task(store: Any, calls: int) -> None:
    with Session(store), Runtime(_model()):
        await awriter(0, calls)


def _tasks(store: Any, sessions: int, calls: int) -> int:
    async def gathered() -> None:
        await asyncio.gather(*(_session_task(store, calls) for _ in range(sessions)))

    asyncio.run(gathered())
    return sessions * (1 + calls + calls // 10)


def _process(store: str, sessions: int, calls: int) -> None:
    _threads(store, sessions, calls)


def _processes(store: str, sessions: int, calls: int, processes: int = 8) -> int:
    """`processes` spawned processes, each recording sessions/processes sessions on threads."""
    context = multiprocessing.get_context("spawn")
    each = max(1, sessions // processes)
    started = [
        context.Process(target=_process, args=(store, each, calls)) for _ in range(processes)
    ]
    for process in started:
        process.start()
    for process in started:
        process.join()
        assert process.exitcode == 0, process.exitcode
    return processes * each * (1 + calls + calls // 10)


def many_sessions(
    store: Callable[[], Any], shape: str, *, sessions: int = 64, calls: int = 500
) -> dict[str, float]:
    """`sessions` sessions in the one store `store()` names, recorded side by side as
    `shape` ("threads", "tasks" or "processes")."""
    spec = store()
    run = {"threads": _threads, "tasks": _tasks, "processes": _processes}[shape]
    if shape == "processes":
        before, wall = os.times(), time.perf_counter()
        nodes = run(spec, sessions, calls)
        after, wall = os.times(), time.perf_counter() - wall
        cpu = sum(after[2:4]) - sum(before[2:4])  # the children's user and system time
        return {"nodes": nodes, "wall_s": wall, "cpu_s": cpu, "per_s": nodes / wall,
                "per_cpu_s": nodes / cpu}  # fmt: skip
    return _timed(lambda: run(spec, sessions, calls))
