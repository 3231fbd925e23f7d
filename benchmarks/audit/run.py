"""The perception audit (issue 41), run by hand: every installed app of apps.py on its
own 1280×800 VirtualDesktop, its menus and dialogs opened from its own tree, every screen
checked against the invariants (gui_harness/bench/audit); one report per app, per
toolkit, held out against tuned, per invariant and failure class.

    bash benchmarks/audit/setup.sh                      once: installs the apps
    .venv/bin/python benchmarks/audit/run.py            all installed apps
    .venv/bin/python benchmarks/audit/run.py gitk idle  some of them
    ... run.py --held-out | --tuned | --budget 90

Each app runs in a child process killed at its budget plus a minute (an app that does
not start, hangs or crashes is a row of the report, never the end of it). Results go to
.cache/audit/<time>/ (results.json, report.md); the report is printed. Exits 1 when an
invariant is below 97 % on some toolkit (issue 41's target).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path[:0] = [str(ROOT), str(HERE), str(ROOT / "benchmarks")]

from _common import machine  # noqa: E402
from apps import APPS  # noqa: E402

from gui_harness.bench.audit import audit_app, summarise  # noqa: E402
from gui_harness.bench.audit.report import rates  # noqa: E402


def run_one(name: str, budget: float, out: Path) -> None:
    spec = next(a for a in APPS if a.name == name)
    result = audit_app(spec.name, spec.toolkit, spec.start, held_out=spec.held_out,
                       budget_s=budget)  # fmt: skip
    out.write_text(json.dumps(result.to_dict()))


def run_child(name: str, budget: float, folder: Path) -> dict:
    spec = next(a for a in APPS if a.name == name)
    out = folder / f"{name}.json"
    log = folder / f"{name}.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    with log.open("w") as sink:
        child = subprocess.Popen(
            [sys.executable, __file__, "--one", name, "--budget", str(budget), "--out", str(out)],
            stdout=sink, stderr=subprocess.STDOUT, env=env, start_new_session=True,
        )  # fmt: skip
        try:
            child.wait(timeout=budget + 60)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    if out.exists():
        return json.loads(out.read_text())
    tail = log.read_text()[-300:].strip().replace("\n", " ")
    status = "hung" if child.returncode == -signal.SIGKILL else "crashed"
    return {
        "name": name, "toolkit": spec.toolkit, "held_out": spec.held_out, "status": status,
        "detail": f"exit {child.returncode} after {time.monotonic() - started:.0f}s: {tail}",
        "first_look_ms": None, "later_ms": None, "screens": [], "notes": [], "seconds": 0,
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("apps", nargs="*", help="names from apps.py (default: all installed)")
    parser.add_argument("--budget", type=float, default=90.0, help="seconds per app")
    parser.add_argument("--held-out", action="store_true", help="only the held-out apps")
    parser.add_argument("--tuned", action="store_true", help="only the tuned apps")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        run_one(args.one, args.budget, Path(args.out))
        return 0
    chosen = [a for a in APPS if not args.apps or a.name in args.apps]
    if args.held_out:
        chosen = [a for a in chosen if a.held_out]
    if args.tuned:
        chosen = [a for a in chosen if not a.held_out]
    folder = ROOT / ".cache/audit" / time.strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True)
    about = machine()
    results = []
    for spec in chosen:
        if not spec.installed():
            results.append({
                "name": spec.name, "toolkit": spec.toolkit, "held_out": spec.held_out,
                "status": "not installed", "detail": f"{spec.program} (benchmarks/audit/setup.sh)",
                "first_look_ms": None, "later_ms": None, "screens": [], "notes": [], "seconds": 0,
            })  # fmt: skip
            continue
        row = run_child(spec.name, args.budget, folder)
        results.append(row)
        r = rates([row])
        print(f"{spec.name:22} {row['status']:8} {row.get('seconds', 0):5.0f}s "
              + " ".join(f"{k}={c - b}/{c}" for k, (c, b) in r.items()), flush=True)  # fmt: skip
    (folder / "results.json").write_text(json.dumps(results, indent=1))
    report = summarise(results, f"{about}; total {sum(r.get('seconds', 0) for r in results):.0f} s")
    (folder / "report.md").write_text(report)
    print(report)
    print(f"results in {folder}")
    missed = False
    for toolkit in {a["toolkit"] for a in results}:
        for checked, bad in rates(a for a in results if a["toolkit"] == toolkit).values():
            missed |= checked > 0 and bad > 0.03 * checked
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
