"""What importing openprogram costs: `import openprogram` and the first names a script
looks up, each in a fresh interpreter.

(a) a bare interpreter (`python -c pass`), the floor every row stands on;
(b) `python -c 'import openprogram'`, the whole process, and the import alone timed
    inside it;
(c) the first lookups a script makes: an error class alone, the decorator, and
    `agentic_function, llm, Session` together (the package root resolves names on first
    use, PEP 562, so each row pays only for what it names).
Best of --runs, each run its own process; the 1-minute load average before and after,
since other work on the machine moves every number. Target (issue 42): (b)'s import
≤ 0.25 s (the time bench_first_reply.py reports as `import openprogram`).

Bytecode caches are used (PYTHONDONTWRITEBYTECODE is dropped for the children; with
it set, every module is compiled again on each run, which no installed user sees): one
warm-up run writes them first.

A plain script, not a test: `python benchmarks/bench_import.py [--runs N]`. Results go
into docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

ROOT = Path(__file__).resolve().parents[1]

_TIMED = """
import sys, time
started = time.perf_counter()
{statement}
print(time.perf_counter() - started, len(sys.modules),
      ",".join(m for m in {heavy!r} if m in sys.modules) or "-")
"""

_HEAVY = ("pydantic", "networkx", "litellm", "openai", "jinja2", "sqlite3", "asyncio")

_ROWS = (
    ("import openprogram", "import openprogram"),
    ("from openprogram import OpenProgramError", "from openprogram import OpenProgramError"),
    ("from openprogram import agentic_function", "from openprogram import agentic_function"),
    (
        "from openprogram import agentic_function, llm, Session",
        "from openprogram import agentic_function, llm, Session",
    ),
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return env


def _process(code: str) -> float:
    """Wall time of one fresh interpreter running `code`."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, env=_env())
    return time.perf_counter() - started


def _inside(statement: str) -> tuple[float, int, str]:
    """`statement` timed inside one fresh interpreter: seconds, modules loaded, and which
    of the heavy dependencies it loaded."""
    code = _TIMED.format(statement=statement, heavy=_HEAVY)
    output = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
        env=_env(),
    ).stdout.split()  # fmt: skip
    return float(output[0]), int(output[1]), output[2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(machine())
    _inside("from openprogram import agentic_function, llm, Session, ContextDAG")  # warm-up
    floor = min(_process("pass") for _ in range(args.runs))
    whole = min(_process("import openprogram") for _ in range(args.runs))
    print(f"{'python -c pass':56} {floor:6.3f} s (whole process)")
    print(f"{'python -c import openprogram':56} {whole:6.3f} s (whole process)")
    bests = {}
    for label, statement in _ROWS:
        runs = [_inside(statement) for _ in range(args.runs)]
        best, modules, heavy = min(runs)
        bests[label] = best
        print(f"{label:56} {best:6.3f} s inside   {modules} modules; loads: {heavy}")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    met = bests["import openprogram"] <= 0.25
    print("target (import openprogram ≤ 0.25 s inside, best of runs):", "met" if met else "MISSED")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
