"""Peers side by side: what one model step costs as history grows, in openprogram and in
pydantic-ai, LangGraph and ell, each with an instant fake model.

The workload: a loop of steps, each asking the model once and carrying the history the
framework's own way; after `prior` steps, `steps` more are timed. What a step costs is
the framework's own work (recording, rendering or assembling the history, checkpointing)
plus what its fake model does with the messages:

* openprogram: `@agentic_function def step(i): return llm(...)`, top-level steps, the
  default (full) render_range, in a memory and in a SQLite session; and with
  render_range={"callers": 20}. `ScriptedModel` gets the rendered messages.
* pydantic-ai: `Agent(TestModel())`, `run_sync(prompt, message_history=history)`, the
  history growing by `result.all_messages()`.
* LangGraph: a `MessagesState` graph (`add_messages`) with one model node that turns the
  whole history into OpenAI messages (`convert_to_openai_messages`), as a real chat-model
  call does; checkpointed with `InMemorySaver` and with `SqliteSaver`.
* ell: `@ell.simple` with a SQLite store and an OpenAI client whose HTTP transport
  answers in-process (httpx.MockTransport). ell passes no history: each call is alone.

The peers are installed by this script into their own virtual environment (default
benchmarks/.peers-venv; never the project's), and every measurement runs in a fresh
child process: ours with this interpreter, the peers with theirs. Rounds alternate the
frameworks so that drift in machine load touches all alike. Times are CPU time of the
child process (time.process_time), medians over the rounds.

    python benchmarks/peers.py [--history 10 200 1000] [--steps 20] [--rounds 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import machine  # benchmarks/ is on sys.path when a script runs

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEER_PACKAGES = ["pydantic-ai-slim", "langgraph", "langgraph-checkpoint-sqlite", "ell-ai[sqlite]"]

OURS = ("openprogram (memory)", "openprogram (SQLite)", "openprogram (window 20)")
PEERS = ("pydantic-ai", "LangGraph (InMemorySaver)", "LangGraph (SqliteSaver)", "ell (SQLite)")


# -- the workers: one framework, one history length, in a child process --------------------


def _prompt(i: int) -> str:
    return f"Step {i}: the screen shows a form with a name field and a Save button. Next?"


def _ours(kind: str, prior: int, steps: int, folder: str) -> list[float]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    sys.path.insert(0, str(ROOT))
    from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm

    window = {"callers": 20} if kind == "openprogram (window 20)" else None

    @agentic_function(render_range=window)
    def step(i: int) -> str:
        return llm(_prompt(i))

    store = str(Path(folder) / "ours.db") if kind == "openprogram (SQLite)" else None
    samples = []
    with Session(store), Runtime(ScriptedModel(lambda request: "click 2")):
        for i in range(prior):
            step(i)
        for i in range(prior, prior + steps):
            started = time.process_time()
            step(i)
            samples.append(time.process_time() - started)
    return samples


def _pydantic_ai(prior: int, steps: int) -> list[float]:
    from pydantic_ai import Agent
    from pydantic_ai.models.test import TestModel

    agent = Agent(TestModel(custom_output_text="click 2"))
    history: list[Any] = []
    samples = []
    for i in range(prior + steps):
        started = time.process_time()
        result = agent.run_sync(_prompt(i), message_history=history)
        history = result.all_messages()
        if i >= prior:
            samples.append(time.process_time() - started)
    return samples


def _langgraph(kind: str, prior: int, steps: int, folder: str) -> list[float]:
    import sqlite3

    from langchain_core.messages import AIMessage, HumanMessage, convert_to_openai_messages
    from langgraph.graph import START, MessagesState, StateGraph

    def model(state: MessagesState) -> dict[str, Any]:
        convert_to_openai_messages(state["messages"])  # what a chat model sends
        return {"messages": [AIMessage("click 2")]}

    builder = StateGraph(MessagesState)
    builder.add_node("model", model)
    builder.add_edge(START, "model")
    if kind == "LangGraph (SqliteSaver)":
        from langgraph.checkpoint.sqlite import SqliteSaver

        connection = sqlite3.connect(Path(folder) / "langgraph.db", check_same_thread=False)
        saver: Any = SqliteSaver(connection)
    else:
        from langgraph.checkpoint.memory import InMemorySaver

        saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config = {"configurable": {"thread_id": "bench"}}
    samples = []
    for i in range(prior + steps):
        started = time.process_time()
        graph.invoke({"messages": [HumanMessage(_prompt(i))]}, config)
        if i >= prior:
            samples.append(time.process_time() - started)
    return samples


def _ell(prior: int, steps: int, folder: str) -> list[float]:
    import ell
    import httpx
    import openai

    reply = {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 0,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "click 2"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
    }
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json=reply))
    client = openai.OpenAI(
        api_key="sk-bench",
        base_url="http://fake.invalid/v1",
        http_client=httpx.Client(transport=transport),
    )
    ell.init(store=folder, autocommit=False, verbose=False)

    @ell.simple(model="gpt-4o-mini", client=client)
    def step(i: int) -> str:
        return _prompt(i)

    samples = []
    for i in range(prior + steps):
        started = time.process_time()
        step(i)
        if i >= prior:
            samples.append(time.process_time() - started)
    return samples


def worker(name: str, prior: int, steps: int) -> None:
    with tempfile.TemporaryDirectory(prefix="peers-") as folder:
        if name in OURS:
            samples = _ours(name, prior, steps, folder)
        elif name == "pydantic-ai":
            samples = _pydantic_ai(prior, steps)
        elif name.startswith("LangGraph"):
            samples = _langgraph(name, prior, steps, folder)
        elif name == "ell (SQLite)":
            samples = _ell(prior, steps, folder)
        else:
            raise SystemExit(f"unknown framework {name!r}")
    print(json.dumps({"ms": statistics.median(samples) * 1000}))


# -- the orchestrator ------------------------------------------------------------------------


def peers_python(venv: Path) -> Path:
    """The peers' interpreter, creating their virtual environment on first use."""
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if not stamp.exists():
        print(f"installing {', '.join(PEER_PACKAGES)} into {venv} (once)…", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *PEER_PACKAGES], check=True)
        stamp.write_text(" ".join(PEER_PACKAGES))
    return python


def measure(python: Path, name: str, prior: int, steps: int) -> float | None:
    result = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--worker", name, str(prior), str(steps)],
        capture_output=True,
        text=True,
        timeout=1800,
        cwd=ROOT,
    )
    if result.returncode != 0:
        print(f"  {name} at {prior} failed:\n{result.stderr[-1500:]}", file=sys.stderr)
        return None
    return float(json.loads(result.stdout.strip().splitlines()[-1])["ms"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, nargs="+", default=[10, 200, 1000])
    parser.add_argument("--steps", type=int, default=20, help="timed steps per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="one round of 5 steps")
    parser.add_argument("--venv", type=Path, default=HERE / ".peers-venv")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.steps = 1, 5
    peers = peers_python(args.venv)
    print(f"peers on {machine()}, {time.strftime('%Y-%m-%d')}; CPU ms per step, median")
    pythons = {name: Path(sys.executable) for name in OURS} | {name: peers for name in PEERS}
    results: dict[tuple[str, int], list[float]] = {}
    for prior in args.history:
        for _ in range(args.rounds):
            for name, python in pythons.items():
                value = measure(python, name, prior, args.steps)
                if value is not None:
                    results.setdefault((name, prior), []).append(value)
    header = f"{'framework':<28}" + "".join(f"{f'after {p}':>16}" for p in args.history)
    print(header)
    base = {p: statistics.median(results.get((OURS[0], p), [float("nan")])) for p in args.history}
    for name in pythons:
        cells = []
        for prior in args.history:
            values = results.get((name, prior))
            if not values:
                cells.append(f"{'failed':>16}")
                continue
            ms = statistics.median(values)
            cells.append(f"{ms:>8.3f} ({ms / base[prior]:>4.1f}×)")
        print(f"{name:<28}" + "".join(cells))
    print("(×: the row's time over openprogram (memory) at the same history)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        sys.exit(main())
