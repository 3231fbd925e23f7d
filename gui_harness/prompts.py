"""What the GUI agent asks its model: the prompts and the structured replies.

Owns the text of the three LLM leaves (verify_step, plan_next_action, conclusion) and
the pydantic models their replies must match. The loop itself is in agent.py.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "Conclusion",
    "Plan",
    "Verification",
    "conclusion_prompt",
    "plan_prompt",
    "reask_prompt",
    "verify_prompt",
]

ACTIONS_HELP = """Actions (JSON objects with a "type"):
  {"type": "click", "element": 3}  or  {"type": "click", "x": 120, "y": 40, "button": "left"}
  {"type": "double_click", "element": 3}      {"type": "move", "element": 3}
  {"type": "drag", "path": [[x1, y1], [x2, y2]]}
  {"type": "scroll", "element": 3, "scroll_y": 3}   (positive scrolls down)
  {"type": "type", "text": "hello"}           types into the focused field
  {"type": "keypress", "keys": ["ctrl", "a"]} one chord
  {"type": "wait", "ms": 500}
  {"type": "done", "reason": "..."}           only when the screen shows the task is complete
  {"type": "fail", "reason": "..."}           when the task cannot be done
Prefer "element" numbers from the list; coordinates are image pixels."""


class Verification(BaseModel):
    """verify_step's reply: did the previous action work, and is the task complete?"""

    success: bool = Field(description="the previous action had its intended effect")
    observation: str = Field(description="what the screen shows that supports the verdict")
    task_complete: bool = Field(
        default=False, description="the screen shows the whole task is complete"
    )


class Conclusion(BaseModel):
    """conclusion's reply: what the final screen shows, and whether the task looks done."""

    summary: str = Field(description="what the final screen visibly shows, quoting its text")
    task_appears_complete: bool = Field(description="the screen shows the task is done")


class Plan(BaseModel):
    """plan_next_action's reply: what the next action is for, and the action."""

    goal: str = Field(description="what this action is meant to achieve")
    action: dict[str, Any] = Field(description="one action object, see the list of actions")


def _screen(size: tuple[int, int], components: str) -> str:
    listing = components or "(no components detected)"
    return f"Screen: {size[0]}x{size[1]} image pixels. Numbered components:\n{listing}"


def verify_prompt(task: str, previous: Any, size: tuple[int, int], components: str) -> str:
    return (
        "You check whether the previous action on a computer screen worked.\n"
        f"Task: {task}\n"
        f"Previous step: {json.dumps(previous, ensure_ascii=False, default=str)}\n"
        f"{_screen(size, components)}\n"
        "The screenshot with numbered boxes follows. Judge only from what is visible."
    )


def plan_prompt(
    task: str, step: int, size: tuple[int, int], components: str, verification: Any
) -> str:
    verdict = json.dumps(verification, ensure_ascii=False) if verification else "none (first step)"
    return (
        f"You operate a computer to do this task: {task}\n"
        f"This is step {step}. Latest verification: {verdict}\n"
        f"{_screen(size, components)}\n"
        f"{ACTIONS_HELP}\n"
        "Choose exactly one next action; the history above shows the steps so far."
    )


def reask_prompt(problem: str) -> str:
    return (
        f"That action cannot be used: {problem}\nReply again with one valid action from the list."
    )


def conclusion_prompt(task: str, outcome: str, size: tuple[int, int], components: str) -> str:
    return (
        f"The agent worked on this task: {task}\nIt stopped because: {outcome}.\n"
        f"{_screen(size, components)}\n"
        "Describe in two or three sentences what the final screen visibly shows, quoting "
        "on-screen text, and whether the task appears complete."
    )
