"""The stock leaves of gui_agent: observe, verify_step, plan_next_action, conclusion.

Written only with public API (gui_harness.current, the prompts, llm), exactly as a
replacement passed to gui_agent(observe=..., plan_next_action=...) would be: copy one
to start your own. The loop that calls them is in agent.py.
"""

from __future__ import annotations

from typing import Any

from gui_harness.current import (
    ask_for_action,
    current_observation,
    current_prompts,
    latest_verification,
    look,
    observe_screen,
)
from gui_harness.prompts import Conclusion, Verification
from openprogram import agentic_function, llm

__all__ = ["conclusion", "observe", "plan_next_action", "verify_step"]


def _summary(seen: dict[str, Any]) -> dict[str, Any]:
    """What later calls see of an observation: all but the component list, which the
    planner already got as text with the screenshot."""
    return {key: value for key, value in seen.items() if key != "shown"}


@agentic_function(render_range={"callers": 0}, render_output=_summary)
def observe(step: int) -> dict[str, Any]:
    """Take a screenshot and find the numbered components on it."""
    return observe_screen(step)


@agentic_function(render_range={"callers": 0})
def verify_step(task: str, previous: dict[str, Any], step: int) -> dict[str, Any]:
    """Judge from the current screen whether the previous step's action worked."""
    observation = current_observation()
    prompt = current_prompts().verify_prompt(task, previous, observation.size, observation.text)
    verdict: Verification = llm([prompt, observation.marked], response_format=Verification)
    return verdict.model_dump()


@agentic_function
def plan_next_action(task: str, step: int) -> dict[str, Any]:
    """Choose the next action from the task, the screen and the steps so far."""
    observation = current_observation()
    prompt = current_prompts().plan_prompt(
        task, step, observation.size, observation.text, latest_verification()
    )
    return ask_for_action(prompt)


@agentic_function(render_range={"callers": 0})
def conclusion(task: str, outcome: str) -> str:
    """Describe what the final screen shows and whether the task looks done."""
    final = look()
    prompt = current_prompts().conclusion_prompt(task, outcome, final.size, final.text)
    said: Conclusion = llm([prompt, final.marked], response_format=Conclusion)
    return said.summary
