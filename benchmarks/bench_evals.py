"""Eval benchmark: the framework's overhead of Dataset.evaluate.

1 000 cases x 3 scorers (equals, contains, a DAG scorer that rebuilds what the nested
call saw), the function an agentic function with one scripted llm() exchange and one
nested call with its own; each case its own session, in memory and on SQLite. Target
(issue 34): <= 10 s in memory on this machine. Also: rescoring the stored report, and
comparing two reports.

A plain script, not a test: `python benchmarks/bench_evals.py [--cases N]`. Results go
into docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

from openprogram import ScriptedModel, agentic_function, llm
from openprogram.evals import Case, Dataset, contains, equals


@agentic_function(render_range={"callers": 0})
def review(draft: str) -> str:
    return llm(f"Approve or reject: {draft}")


@agentic_function
def write(product: str) -> str:
    draft = llm(f"Write a tagline for {product}.")
    return draft if review(draft) == "approve" else "rejected"


def fake(request):
    return "approve" if request.function == "review" else "Smart coffee."


def private(case, output, run) -> bool:
    return not run.saw("review", contains="tagline")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=1)
    options = parser.parse_args()
    print(machine())
    dataset = Dataset(
        cases=[
            Case(inputs={"product": f"p{i}"}, expected="Smart coffee.")
            for i in range(options.cases)
        ]
    )
    scorers = [equals, contains("coffee"), private]
    for store in (None, "sqlite"):
        with tempfile.TemporaryDirectory() as folder:
            spec = None if store is None else os.path.join(folder, "evals.db")
            start = time.perf_counter()
            report = dataset.evaluate(
                write,
                scorers,
                model=ScriptedModel(fake),
                store=spec,
                concurrency=options.concurrency,
            )
            took = time.perf_counter() - start
            assert not report.errors and report.summary()["equals"].mean == 1.0, report.table()
            print(
                f"evaluate, {options.cases} cases x 3 scorers, store={store or 'memory'}: "
                f"{took:.2f} s ({took / options.cases * 1e3:.2f} ms a case)"
            )
            start = time.perf_counter()
            again = report.rescore(scorers)
            print(f"  rescore: {time.perf_counter() - start:.2f} s")
            start = time.perf_counter()
            report.compare(again).table()
            print(f"  compare: {time.perf_counter() - start:.2f} s")


if __name__ == "__main__":
    main()
