"""How long a new user waits for the first reply: a fresh interpreter that imports
openprogram and asks a local OpenAI-compatible server once.

(a) `import openprogram`, then the first `llm()` under `Runtime("openai/<name>",
    api_base=URL)` — the openai SDK path (no litellm import);
(b) the same first call forced through litellm (a litellm-only option), for comparison.
Each in its own process (the server runs in this one), median of --runs; the time from
the end of the import to the reply printed. Target (issue 36): (a) ≤ 1.0 s.

A plain script, not a test: `python benchmarks/bench_first_reply.py [--runs N]`. Results
go into docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs

from openprogram.testing import OpenAIServer

ROOT = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys, time
started = time.perf_counter()
import openprogram
imported = time.perf_counter()
from openprogram import Runtime, Session, agentic_function, llm
options = json.loads(sys.argv[2])
@agentic_function
def greet(name: str) -> str:
    return llm(f"Say hello to {name}.")
with Session(), Runtime("openai/local-model", api_base=sys.argv[1], api_key="k", **options):
    reply = greet("Ada")
done = time.perf_counter()
print(json.dumps({"import": imported - started, "reply": done - imported,
                  "litellm": "litellm" in sys.modules, "text": reply}))
"""


def _once(url: str, options: dict[str, object]) -> dict[str, object]:
    output = subprocess.run(
        [sys.executable, "-c", _CHILD, url, json.dumps(options)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    ).stdout  # fmt: skip
    return json.loads(output.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    print(machine())
    ok = True
    with OpenAIServer(lambda request: "Hello, Ada!") as server:
        for label, options in (
            ("openai SDK (default)", {}),
            ("through litellm", {"drop_params": True}),
        ):
            runs = [_once(server.url, options) for _ in range(args.runs)]
            imports = statistics.median(float(r["import"]) for r in runs)  # type: ignore[arg-type]
            replies = statistics.median(float(r["reply"]) for r in runs)  # type: ignore[arg-type]
            litellm = {bool(r["litellm"]) for r in runs}
            print(
                f"{label:22} import openprogram {imports:5.2f} s   first reply {replies:5.2f} s"
                f"   litellm imported: {sorted(litellm)}"
            )
            if not options:
                ok = ok and replies <= 1.0
    print("target (first reply ≤ 1.0 s on the SDK path):", "met" if ok else "MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
