"""Run every benchmarks/bench_*.py script in turn (what `make bench` calls).

Each script runs in its own process with this interpreter, so one benchmark's imports
and heap never skew the next. Arguments (e.g. --quick) are passed to every script.
Exits non-zero when any script does (a missed target or a crash), after running all.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    scripts = sorted(HERE.glob("bench_*.py"))
    if not scripts:
        print(f"no bench_*.py scripts in {HERE}", file=sys.stderr)
        return 1
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *argv], cwd=HERE.parent)
        print(f"== {script.name}: exit {code} in {time.perf_counter() - started:.0f} s\n")
        if code != 0:
            failed.append(script.name)
    if failed:
        print(f"missed a target or failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
