"""Where the test suite's CPU goes, test by test: a pytest plugin and its summary.

The plugin adds up, for each test's whole run (setup, call, teardown), the CPU of the
process that runs it and of the child processes it waited for (getrusage's SELF and
CHILDREN), and appends one JSON line per test to SUITE_CPU_OUT (default
suite-cpu.jsonl), with the xdist worker's name and the time the test ended. A
module-scoped fixture's set-up counts in the module's first test. Children nobody waits
for (daemons, a Ray cluster's helpers, apps killed by their process group) are not in
it: /usr/bin/time around the whole run, or a process sampler, sees those.

    PYTHONPATH=benchmarks scripts/test.sh -n auto --dist loadgroup -p suite_cpu
    python benchmarks/suite_cpu.py suite-cpu.jsonl [--top 40]

A tool for docs/performance.md's suite measures, not a test: results go there by hand,
with the machine, the date and the load.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    waited = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, waited.ru_utime + waited.ru_stime


def _write(record: dict[str, Any]) -> None:
    record["worker"] = os.environ.get("PYTEST_XDIST_WORKER", "")
    record["ended"] = round(time.time(), 1)
    with open(os.environ.get("SUITE_CPU_OUT", "suite-cpu.jsonl"), "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    own, waited = _cpu()
    started = time.monotonic()
    yield
    own_after, waited_after = _cpu()
    _write({"test": item.nodeid, "own": round(own_after - own, 3),
            "children": round(waited_after - waited, 3),
            "wall": round(time.monotonic() - started, 2)})  # fmt: skip


def pytest_sessionfinish(session: pytest.Session) -> None:
    own, waited = _cpu()  # the whole process: start-up and collection included
    _write({"test": "<process>", "own": round(own, 3), "children": round(waited, 3)})


def summary(path: Path, top: int) -> str:
    """The totals, the costliest tests and the costliest modules of one run's lines."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    tests = [r for r in records if r["test"] != "<process>"]
    processes = [r for r in records if r["test"] == "<process>"]
    cost = {id(r): r["own"] + r["children"] for r in tests}
    lines = [
        f"{len(tests)} tests: {sum(r['own'] for r in tests):.0f} s of CPU in the pytest "
        f"processes, {sum(r['children'] for r in tests):.0f} s in children they waited for",
        "pytest processes, whole (start-up and collection included): "
        + ", ".join(f"{r['worker'] or 'main'} {r['own']:.0f} s" for r in processes),
        f"\n{'CPU s':>7} {'own':>7} {'children':>8} {'wall s':>7}  test",
    ]
    for r in sorted(tests, key=lambda r: -cost[id(r)])[:top]:
        lines.append(
            f"{cost[id(r)]:7.1f} {r['own']:7.1f} {r['children']:8.1f} {r['wall']:7.1f}  "
            f"{r['test'].split('@')[0]}"
        )
    modules: Counter[str] = Counter()
    for r in tests:
        modules[r["test"].split("::")[0]] += cost[id(r)]
    lines.append(f"\n{'CPU s':>7}  module")
    lines += [f"{seconds:7.1f}  {module}" for module, seconds in modules.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("lines", type=Path, help="the JSON lines the plugin wrote")
    parser.add_argument("--top", type=int, default=40, help="rows of each table")
    arguments = parser.parse_args()
    print(summary(arguments.lines, arguments.top))


if __name__ == "__main__":
    main()
