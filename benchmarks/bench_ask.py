"""Human-in-the-loop benchmarks: what asking costs, and what a suspended run costs to go on.

(a) one ask_user answered at once by the runtime's asker, against a plain agentic call,
    in a memory session and on SQLite (median of many, wall time);
(b) an agent of N steps (a code call and a scripted llm exchange each) that asks at the
    end, on SQLite: the first run up to the question, answering it from a reopened
    session, and the resumed run (N steps replayed from the record, then the rest live),
    beside the same N steps run live.

A plain script, not a test: `python benchmarks/bench_ask.py [--steps N]`. Results go
into docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

from openprogram import (
    Runtime,
    RunWaiting,
    ScriptedModel,
    Session,
    agentic_function,
    ask_user,
    llm,
)


@agentic_function
def plain(i: int) -> int:
    return i


@agentic_function
def asks(i: int) -> str:
    return ask_user(f"Go on with {i}?", choices=["yes", "no"])


@agentic_function
def observe(i: int) -> int:
    return i * i


@agentic_function
def step(i: int) -> str:
    observe(i)
    return llm(f"plan step {i}")


@agentic_function
def agent(steps: int) -> str:
    for i in range(steps):
        step(i)
    return ask_user("Submit the result?", choices=["yes", "no"])


def median_us(call: Callable[[int], object], count: int) -> float:
    times = []
    for i in range(count):
        started = time.perf_counter()
        call(i)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1e6


def per_call(store: object, count: int) -> tuple[float, float]:
    runtime = Runtime(ScriptedModel(lambda request: "ok"), ask=lambda question: "yes")
    with Session(store), runtime:
        base = median_us(plain, count)
        asked = median_us(asks, count)
    return base, asked


def suspended(folder: Path, steps: int) -> dict[str, float]:
    path = folder / "ask.db"
    model = ScriptedModel(lambda request: "ok")
    started = time.perf_counter()
    try:
        with Session(path, id="run") as session, Runtime(model):
            agent(steps)
    except RunWaiting:
        pass
    first = time.perf_counter() - started

    started = time.perf_counter()
    answering = Session.open(path, "run")
    (question,) = answering.pending()
    answering.answer(question.id, "yes")
    answering.close()
    answer = time.perf_counter() - started

    calls: list[str] = []

    def counted(request: object) -> str:
        calls.append("llm")
        return "ok"

    started = time.perf_counter()
    with Session.open(path, "run", resume=True), Runtime(ScriptedModel(counted)):
        assert agent(steps) == "yes"
    resumed = time.perf_counter() - started
    assert calls == [], "a resumed run asked the model again"

    started = time.perf_counter()
    with Session(folder / "live.db"), Runtime(model, ask=lambda question: "yes"):
        agent(steps)
    live = time.perf_counter() - started
    del session
    return {"first": first, "answer": answer, "resumed": resumed, "live": live}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args()
    print(machine())
    with tempfile.TemporaryDirectory() as folder:
        for label, store in (("memory", None), ("SQLite", Path(folder) / "calls.db")):
            base, asked = per_call(store, args.count)
            print(f"(a) {label}: plain call {base:.1f} us, ask_user answered {asked:.1f} us")
        figures = suspended(Path(folder), args.steps)
    print(f"(b) {args.steps} steps on SQLite:")
    for name, seconds in figures.items():
        print(f"    {name:8} {seconds * 1000:9.1f} ms")


if __name__ == "__main__":
    main()
