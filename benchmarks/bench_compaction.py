"""Compaction (issue 26): prompt size on long runs, summaries per 100 steps, render cost.

    python benchmarks/bench_compaction.py [--steps 200] [--quick]

(a) A `steps`-step gui_agent run on a FakeDesktop with a scripted model, with
    `context_tokens=4000` and without: the largest plan prompt (text and images, counted
    as the budget counts them) and the summaries made per 100 steps.
(b) The cost of one planning step with `render_range={"tokens": 600}` inside a running
    loop after 10 and after 1000 prior steps (target: ratio <= 1.5).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


from benchmarks._common import machine
from benchmarks.bench_core import loop_samples as core_loop_samples
from gui_harness import FakeDesktop, gui_agent
from gui_harness.demo.policy import TASK
from openprogram import (
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    count_tokens,
    llm,
)
from openprogram.render.render import seen_by

BUDGET = 4000
RATIO_TARGET = 1.5


def reply(calls: dict[str, int]):
    def answer(request):
        calls[request.function] = calls.get(request.function, 0) + 1
        if request.function == "plan_next_action":
            step = calls["plan_next_action"]
            return {"goal": f"inspect the form, pass {step}", "action": {"type": "wait", "ms": 1}}
        if request.function == "verify_step":
            return {"success": True, "observation": "the form is unchanged", "task_complete": False}
        if request.function == "summarize_history":
            return "The agent waited on the form for many steps; nothing on it changed."
        return {"summary": "the form", "task_appears_complete": False}

    return answer


def prompt_tokens(messages) -> int:
    """A whole prompt as the budget counts it: text by the estimate, images by size."""
    return count_tokens(messages)


def gui_run(steps: int, context_tokens: int | None) -> dict[str, float]:
    calls: dict[str, int] = {}
    with Session() as session, Runtime(ScriptedModel(reply(calls))):
        gui_agent(
            TASK,
            max_steps=steps,
            desktop=FakeDesktop.demo_form(),
            settle_timeout=0.02,
            context_tokens=context_tokens,
        )
    plans = [n for n in session.dag.find(kind="llm") if n.name == "plan_next_action"]
    sizes = [prompt_tokens(seen_by(session.dag, node).messages) for node in plans]
    return {
        "plans": len(plans),
        "first": sizes[0],
        "max": max(sizes),
        "last": sizes[-1],
        "summaries_per_100": 100 * calls.get("summarize_history", 0) / len(plans),
    }


@agentic_function(render_range={"tokens": 600, "keep": 4})
def plan(i: int) -> str:
    return llm(f"plan step {i}")


def summary_reply(request) -> str:
    if request.function == "summarize_history":
        return "Earlier steps observed the screen and planned; nothing failed."
    return "ok"


def loop_samples(prior: int, steps: int) -> list[float]:
    """bench_core's GUI-shaped loop, its planner on a token budget."""
    return core_loop_samples(prior, steps, planner=plan, reply=summary_reply)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    steps = 40 if args.quick else args.steps
    print(machine())
    for budget in (None, BUDGET):
        result = gui_run(steps, budget)
        print(
            f"(a) gui_agent {steps} steps, context_tokens={budget}: plan prompt first "
            f"{result['first']}, max {result['max']}, last {result['last']} tokens; "
            f"{result['summaries_per_100']:.1f} summaries per 100 steps"
        )
    reps, timed = (1, 20) if args.quick else (3, 50)
    medians = {}
    for prior in (10, 1000):
        samples: list[float] = []
        for _ in range(reps):
            samples += loop_samples(prior, timed)
        medians[prior] = statistics.median(samples)
    ratio = medians[1000] / medians[10]
    print(
        f"(b) planning step with tokens=600: {medians[10]:.0f} us after 10 steps, "
        f"{medians[1000]:.0f} us after 1000 -> ratio {ratio:.2f} "
        f"({'meets' if ratio <= RATIO_TARGET else 'misses'} <= {RATIO_TARGET})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
