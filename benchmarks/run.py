"""Run every benchmarks/bench_*.py script in turn (what `make bench` calls).

    python benchmarks/run.py                    all scripts
    python benchmarks/run.py core store         only bench_core.py and bench_store.py
    python benchmarks/run.py core -- --quick    arguments after `--` go to each script

Each script runs in its own process with this interpreter, so one benchmark's imports
and heap never skew the next. Exits non-zero when any script does (a missed target or a
crash), after running them all.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    names, script_args = argv, []
    if "--" in argv:
        split = argv.index("--")
        names, script_args = argv[:split], argv[split + 1 :]
    available = sorted(HERE.glob("bench_*.py"))
    scripts = [s for s in available if not names or s.stem.removeprefix("bench_") in names]
    if not scripts:
        known = [s.stem.removeprefix("bench_") for s in available]
        print(f"no benchmark matches {names!r}; there are {known!r}", file=sys.stderr)
        return 2
    failed = []
    for script in scripts:
        print(f"== {script.name}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, str(script), *script_args], cwd=HERE.parent)
        elapsed = time.perf_counter() - started
        print(f"== {script.name}: exit {code} after {elapsed:.0f} s\n", flush=True)
        if code != 0:
            failed.append(script.name)
    if failed:
        print(f"missed a target or failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
