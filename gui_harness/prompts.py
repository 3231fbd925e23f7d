"""What the GUI agent asks its model: the prompts and the structured replies.

Owns the text of the three LLM leaves (verify_step, plan_next_action, conclusion) as
public templates, `Prompts` (pass your own to `gui_agent(prompts=...)`), and the pydantic
models their replies must match. The leaves are in leaves.py, the loop in agent.py.
"""

from __future__ import annotations

import json
import string
from dataclasses import dataclass, fields
from typing import Any

from pydantic import BaseModel, Field

from openprogram.errors import UsageError

__all__ = [
    "ACTIONS_HELP",
    "CONCLUSION",
    "DEFAULT_PROMPTS",
    "PLAN",
    "REASK",
    "VERIFY",
    "Conclusion",
    "Plan",
    "Prompts",
    "Verification",
    "conclusion_prompt",
    "plan_prompt",
    "reask_prompt",
    "verify_prompt",
]

ACTIONS_HELP = """Actions (JSON objects with a "type"):
  {"type": "click", "element": 3}  or  {"type": "click", "x": 120, "y": 40, "button": "left"}
  {"type": "click", "element": 7, "cell": "B3"}  a cell of grid #7 (then type into it)
  {"type": "double_click", "element": 3}      {"type": "triple_click", "element": 3}
  "button": left, right, middle, back or forward; "modifiers": ["ctrl"] holds keys
  during a click, drag or scroll        {"type": "move", "element": 3}
  {"type": "drag", "path": [[x1, y1], [x2, y2]], "button": "left", "duration_ms": 800}
  {"type": "mouse_down", "element": 3}  then  {"type": "mouse_up", "x": 9, "y": 9}
  {"type": "scroll", "element": 3, "scroll_y": 3}   (positive scrolls down)
  {"type": "type", "text": "hello"}           types into the focused field
  {"type": "keypress", "keys": ["ctrl", "a"]} one chord ("hold_ms": 1000 holds it)
  {"type": "key_down", "keys": ["shift"]}  then  {"type": "key_up", "keys": ["shift"]}
  keys: a character or enter, tab, escape, backspace, delete, up, pageup, home, f1-f35,
  kp_0-kp_9, kp_enter, kp_add, caps_lock, num_lock, menu, print, or any X key name
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


VERIFY = (
    "You check whether the previous action on a computer screen worked.\n"
    "Task: {task}\n"
    "Previous step: {previous}\n"
    "{screen}\n"
    "The screenshot with numbered boxes follows. Judge only from what is visible."
)
"""verify_step's prompt. Fields: {task}, {previous} (the previous step's outcome as
JSON), {screen} (size and the numbered component list)."""

PLAN = (
    "You operate a computer to do this task: {task}\n"
    "This is step {step}. Latest verification: {verification}\n"
    "{screen}\n"
    "{actions}\n"
    "Choose exactly one next action; the history above shows the steps so far."
)
"""plan_next_action's prompt. Fields: {task}, {step}, {verification} (the latest
verdict as JSON), {screen}, {actions} (the action list, Prompts.actions)."""

REASK = "That action cannot be used: {problem}\nReply again with one valid action from the list."
"""The re-ask after an invalid action. Field: {problem}."""

CONCLUSION = (
    "The agent worked on this task: {task}\nIt stopped because: {outcome}.\n"
    "{screen}\n"
    "Describe in two or three sentences what the final screen visibly shows, quoting "
    "on-screen text, and whether the task appears complete."
)
"""conclusion's prompt. Fields: {task}, {outcome} (the stop reason), {screen}."""

_FIELDS = {
    "verify": {"task", "previous", "screen"},
    "plan": {"task", "step", "verification", "screen", "actions"},
    "reask": {"problem"},
    "conclusion": {"task", "outcome", "screen"},
}


@dataclass(frozen=True)
class Prompts:
    """The text of gui_agent's model calls: `str.format` templates (literal braces
    doubled: `{{`), and the action list the plan prompt shows.

    Change one with `Prompts(plan=MY_PLAN)` and pass it as `gui_agent(prompts=...)`;
    a replaced leaf reaches the run's prompts with `gui_harness.current_prompts()`.
    Raises UsageError for a template naming a field it does not get.
    """

    verify: str = VERIFY
    plan: str = PLAN
    reask: str = REASK
    conclusion: str = CONCLUSION
    actions: str = ACTIONS_HELP

    def __post_init__(self) -> None:
        for field in fields(self):
            value = getattr(self, field.name)
            if not isinstance(value, str):
                raise UsageError(f"Prompts({field.name}={value!r}) must be a string")
            allowed = _FIELDS.get(field.name)
            if allowed is None:
                continue
            try:
                named = {name for _, name, _, _ in string.Formatter().parse(value) if name}
            except ValueError as exc:
                raise UsageError(
                    f"Prompts({field.name}=...) is not a valid template ({exc}); write "
                    "literal braces as {{ and }}"
                ) from None
            unknown = sorted(named - allowed)
            if unknown:
                raise UsageError(
                    f"Prompts({field.name}=...) names the field {{{unknown[0]}}}, which it "
                    f"does not get; its fields are {sorted(allowed)!r} (write literal braces "
                    "as {{ and }})"
                )

    def verify_prompt(
        self, task: str, previous: Any, size: tuple[int, int], components: str
    ) -> str:
        return self.verify.format(
            task=task,
            previous=json.dumps(previous, ensure_ascii=False, default=str),
            screen=_screen(size, components),
        )

    def plan_prompt(
        self, task: str, step: int, size: tuple[int, int], components: str, verification: Any
    ) -> str:
        verdict = (
            json.dumps(verification, ensure_ascii=False) if verification else "none (first step)"
        )
        return self.plan.format(
            task=task,
            step=step,
            verification=verdict,
            screen=_screen(size, components),
            actions=self.actions,
        )

    def reask_prompt(self, problem: str) -> str:
        return self.reask.format(problem=problem)

    def conclusion_prompt(
        self, task: str, outcome: str, size: tuple[int, int], components: str
    ) -> str:
        return self.conclusion.format(task=task, outcome=outcome, screen=_screen(size, components))


DEFAULT_PROMPTS = Prompts()
"""The prompts gui_agent uses unless given others."""


def _screen(size: tuple[int, int], components: str) -> str:
    listing = components or "(no components detected)"
    return f"Screen: {size[0]}x{size[1]} image pixels. Numbered components:\n{listing}"


def verify_prompt(task: str, previous: Any, size: tuple[int, int], components: str) -> str:
    """The default verify_step prompt (DEFAULT_PROMPTS.verify_prompt)."""
    return DEFAULT_PROMPTS.verify_prompt(task, previous, size, components)


def plan_prompt(
    task: str, step: int, size: tuple[int, int], components: str, verification: Any
) -> str:
    """The default plan_next_action prompt (DEFAULT_PROMPTS.plan_prompt)."""
    return DEFAULT_PROMPTS.plan_prompt(task, step, size, components, verification)


def reask_prompt(problem: str) -> str:
    """The default re-ask after an invalid action (DEFAULT_PROMPTS.reask_prompt)."""
    return DEFAULT_PROMPTS.reask_prompt(problem)


def conclusion_prompt(task: str, outcome: str, size: tuple[int, int], components: str) -> str:
    """The default conclusion prompt (DEFAULT_PROMPTS.conclusion_prompt)."""
    return DEFAULT_PROMPTS.conclusion_prompt(task, outcome, size, components)
