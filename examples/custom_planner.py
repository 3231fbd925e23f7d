"""A gui_agent with your own planner and your own perception, on the bundled demo form.

The planner first asks a reflection call that reads only the last few steps (its own
render_range), then plans with that note; the perception adds what the app's authors
know about their form to what the pixels show. Runs offline on a private Xvfb display
with the scripted demo policy standing in for a model (needs Xvfb and Tk).
"""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from gui_harness import (
    Observation,
    Perception,
    VirtualDesktop,
    ask_for_action,
    current_observation,
    current_prompts,
    gui_agent,
    latest_verification,
)
from gui_harness.demo.app import demo_app, read_state
from gui_harness.demo.policy import TASK, demo_policy
from gui_harness.demo.run import check_saved_state
from gui_harness.perception import describe
from openprogram import ModelRequest, Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.render import seen_by

# -- a perception that knows the app ---------------------------------------------------------


class DemoFormKnowledge(Perception):
    """Perception plus what the demo form's authors know: its one wide entry field is
    the Name field and its lowest button saves the form."""

    def perceive(self, image: Any) -> Observation:
        seen = super().perceive(image)
        components = list(seen.components)
        fields = [c for c in components if c.kind == "field"]
        buttons = [c for c in components if c.kind == "button"]
        known: dict[int, str] = {}
        if fields:
            known[max(fields, key=lambda c: c.box[2]).index] = "Name field"
        if buttons:
            known[max(buttons, key=lambda c: c.box[1]).index] = "Save (stores the form)"
        components = [
            replace(c, label=known[c.index]) if c.index in known else c for c in components
        ]
        return Observation(seen.image, tuple(components), describe(components))


# -- a planner that reflects first -----------------------------------------------------------


@agentic_function(render_range={"callers": 5})
def reflect(task: str, step: int) -> str:
    """Say in one sentence what the last steps achieved and what is left."""
    return llm(f"Task: {task}\nIn one sentence: what have the last steps achieved?")


@agentic_function
def plan_next_action(task: str, step: int) -> dict[str, Any]:
    """Plan the next action with a reflection on the recent steps in the prompt."""
    note = reflect(task, step) if step > 1 else "nothing done yet"
    observation = current_observation()
    prompt = current_prompts().plan_prompt(
        task, step, observation.size, observation.text, latest_verification()
    )
    return ask_for_action(f"{prompt}\nYour note on the recent steps: {note}")


def model(request: ModelRequest) -> Any:
    """The scripted demo policy, plus answers for the reflection calls."""
    if request.function == "reflect":
        acted = request.history.count('"status": "acted"')
        return f"{acted} of the recent steps acted on the form."
    return demo_policy(request)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="custom-planner-") as workdir:
        state_path = Path(workdir) / "state.json"
        with (
            VirtualDesktop((1280, 800), apps=[demo_app(state_path)]) as desktop,
            Session() as session,
            Runtime(ScriptedModel(model)),
        ):
            result = gui_agent(
                TASK,
                max_steps=10,
                desktop=desktop,
                plan_next_action=plan_next_action,
                perception=DemoFormKnowledge(),
            )
        state = read_state(state_path)
    dag = session.dag
    for step in result.steps:
        print(f"step {step['step']}: {step['goal']} -> {step.get('target', '-')}")
    print(f"result: {result.stop_reason}, success={result.success}")
    first_plan = dag.find(name="plan_next_action", kind="llm")[0]
    listing = [line for line in first_plan.input[0]["text"].splitlines() if line[:1] == "#"]
    print("the planner saw:", *listing, sep="\n  ")
    last_reflection = dag.find(name="reflect", kind="llm")[-1]
    print(f"what reflect #{dag.ordinal(last_reflection)} read (render_range callers=5):")
    print(seen_by(dag, last_reflection).text())
    problem = check_saved_state(state)
    print("the app saved the form" if problem is None else f"the demo failed: {problem}")
    return 0 if problem is None and result.success else 1


if __name__ == "__main__":
    raise SystemExit(main())
