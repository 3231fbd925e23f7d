"""The scripted demo policy: a stand-in model that fills the demo form from what it sees.

Owns `demo_policy`, a ScriptedModel callable answering verify_step, plan_next_action,
conclusion and summarize_history (a budgeted run's summaries). It plans from the
numbered components in its prompt (kinds, boxes, labels) and from the steps so far in
its rendered history, exactly what a real model gets.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from gui_harness.demo.app import COLOURS, COUNTRIES
from gui_harness.perception.marks import read_description
from openprogram import ModelRequest

__all__ = ["BASIC_TASK", "COLOUR", "COUNTRY", "NAME", "TASK", "demo_policy"]

NAME = "Alice"
COLOUR = "green"
COUNTRY = "Canada"
TASK = (
    f"Type {NAME} in the Name field, tick Subscribe, choose the colour {COLOUR.capitalize()},"
    f" choose {COUNTRY} as the country and press Save"
)
BASIC_TASK = f"Type {NAME} in the Name field, tick Subscribe and press Save"
"""The task without the colour and the country: all that FakeDesktop's form offers."""

_GOAL = re.compile(r'"goal": "([^"]*)"[^\n]*"status": "acted"')
_PREVIOUS = re.compile(r"^Previous step: (.*)$", re.M)
_TASK = re.compile(r"(?:^Task: |do this task: )(.*)$", re.M)

_MAX_WAITS = 4
_WAIT_MS = 500
_STEPS = (
    "click the Name field",
    f"type {NAME}",
    "tick Subscribe",
    f"choose {COLOUR.capitalize()}",
    "open the Country list",
    f"pick {COUNTRY}",
    "press Save",
)
_COLOUR_STEPS = (f"choose {COLOUR.capitalize()}",)
_COUNTRY_STEPS = ("open the Country list", f"pick {COUNTRY}")


@dataclass(frozen=True)
class _Seen:
    index: int
    kind: str
    x: int
    y: int
    w: int
    h: int
    label: str
    caption: str = ""


def _components(text: str) -> list[_Seen]:
    return [_Seen(c.index, c.kind, *c.box, c.label, c.caption) for c in read_description(text)]


def _labelled(components: list[_Seen], word: str) -> _Seen | None:
    for component in components:
        if word.lower() in component.label.lower():
            return component
    return None


def _captioned(components: list[_Seen], word: str) -> _Seen | None:
    for component in components:
        if word.lower() in component.caption.lower():
            return component
    return None


def _target(goal: str, components: list[_Seen]) -> _Seen | None:
    """The component a goal is about: by its label when OCR or memory named it, else by
    the form's shape (the widest field; the first checkbox; the lowest button)."""
    if goal == "click the Name field":
        captioned = _captioned([c for c in components if c.kind == "field"], "name")
        if captioned is not None:
            return captioned
        label = _labelled([c for c in components if c.kind == "text"], "name")
        if label is not None:  # the box on the label's row, right of it
            row = [
                c
                for c in components
                if c.kind in ("field", "button")
                and c.x > label.x + label.w
                and c.y <= label.y + label.h / 2 <= c.y + c.h
            ]
            if row:
                return min(row, key=lambda c: c.x)
        boxes = [c for c in components if c.kind == "field"] or [
            c for c in components if c.kind == "button"
        ]
        return max(boxes, key=lambda c: c.w, default=None)
    if goal == "tick Subscribe":
        boxes = [c for c in components if c.kind == "checkbox"]
        named = _labelled(boxes, "subscribe")
        return named or min(boxes, key=lambda c: (c.y, c.x), default=None)
    if goal == f"choose {COLOUR.capitalize()}":
        radios = [c for c in components if c.kind == "radio"]
        named = _labelled(radios, COLOUR)
        if named is not None or len(radios) < len(COLOURS):
            return named
        row = sorted(radios, key=lambda c: (c.y, c.x))[: len(COLOURS)]
        return sorted(row, key=lambda c: c.x)[COLOURS.index(COLOUR)]
    if goal == "open the Country list":
        choosers = [c for c in components if c.kind == "dropdown"]
        captioned = _captioned(choosers, "country")
        if captioned is not None:
            return captioned
        label = _labelled([c for c in components if c.kind == "text"], "country")
        if label is not None:  # the chooser on the label's row, right of it
            row = [
                c for c in choosers if c.x > label.x and c.y <= label.y + label.h / 2 <= c.y + c.h
            ]
            if row:
                return min(row, key=lambda c: c.x)
        # the lowest: a window manager's title bar, above the form, looks like one too
        return _labelled(choosers, "country") or max(choosers, key=lambda c: c.y, default=None)
    if goal == f"pick {COUNTRY}":
        return _list_item(components)
    if goal == "press Save":
        buttons = [c for c in components if c.kind == "button"]
        named = _labelled(buttons, "save")
        return named or max(buttons, key=lambda c: (c.y, -c.x), default=None)
    return None


def _list_item(components: list[_Seen]) -> _Seen | None:
    """The line for COUNTRY in the open drop-down list: by its label when OCR read one,
    else by its place: the list opens below the chooser at its top, one country a line
    in COUNTRIES order, so it is the line at (position + 1/2) line pitches down. With
    the list open the chooser may look like a field or a button: the lowest one with
    three lines or more stacked right under it is the one."""
    texts = [c for c in components if c.kind == "text"]
    named = _labelled(texts, COUNTRY)
    if named is not None:
        return named
    choosers = [c for c in components if c.kind in ("dropdown", "field", "button")]
    for chooser in sorted(choosers, key=lambda c: (c.kind != "dropdown", -c.y)):
        top = chooser.y + chooser.h
        lines = sorted(
            (
                c
                for c in texts
                if top - 2 <= c.y <= top + 30 * chooser.h and chooser.x - 4 <= c.x <= chooser.x + 20
            ),
            key=lambda c: c.y,
        )
        if len(lines) < 3 or lines[0].y - top > chooser.h:  # not a list opened from it
            continue
        steps = sorted(b.y + b.h / 2 - (a.y + a.h / 2) for a, b in pairwise(lines))
        pitch = steps[len(steps) // 2]
        wanted = top + (COUNTRIES.index(COUNTRY) + 0.5) * pitch
        return min(lines, key=lambda c: abs(c.y + c.h / 2 - wanted))
    return None


def _steps_for(task: str) -> tuple[str, ...]:
    """The steps a task asks for: the colour and country steps only when it names them,
    so the policy also fills a form without them (FakeDesktop's demo form)."""
    words = task.lower()
    return tuple(
        goal
        for goal in _STEPS
        if not (goal in _COLOUR_STEPS and "colour" not in words)
        and not (goal in _COUNTRY_STEPS and "country" not in words)
    )


def _plan(request: ModelRequest) -> dict[str, Any]:
    done = set(_GOAL.findall(request.history))
    task = _TASK.search(request.text)
    wanted = _STEPS if task is None else _steps_for(task.group(1))
    pending = [goal for goal in wanted if goal not in done]
    if not pending:
        return {"goal": "finish", "action": {"type": "done", "reason": "the form is saved"}}
    goal = pending[0]
    if goal == f"type {NAME}":
        return {"goal": goal, "action": {"type": "type", "text": NAME}}
    target = _target(goal, _components(request.text))
    if target is None:
        # OCR labels a new screen in the background: look again before giving up
        waiting = f"wait for labels to {goal}"
        if request.history.count(f'"goal": "{waiting}"') < _MAX_WAITS:
            return {"goal": waiting, "action": {"type": "wait", "ms": _WAIT_MS}}
        return {"goal": goal, "action": {"type": "fail", "reason": f"cannot see where to {goal}"}}
    return {"goal": goal, "action": {"type": "click", "element": target.index}}


def _summary(text: str) -> str:
    """What a model's summary of earlier steps keeps: each goal that was acted on, one a
    line in the shape the planner reads its history in."""
    done = dict.fromkeys(_GOAL.findall(text))
    lines = [f'{{"goal": "{goal}", "status": "acted"}}' for goal in done]
    return "Steps done so far:\n" + "\n".join(lines) if lines else "Nothing done yet."


def _verify(request: ModelRequest) -> dict[str, Any]:
    match = _PREVIOUS.search(request.text)
    previous = json.loads(match.group(1)) if match else {}
    acted = previous.get("status") == "acted"
    saved = acted and previous.get("goal") == "press Save"
    return {
        "success": acted,
        "observation": "the form looks saved" if saved else f"after: {previous.get('goal')}",
        "task_complete": saved,
    }


def demo_policy(request: ModelRequest) -> dict[str, Any] | str:
    """Answer one of the GUI agent's model calls (see the module docstring)."""
    if request.function == "plan_next_action":
        return _plan(request)
    if request.function == "verify_step":
        return _verify(request)
    if request.function == "conclusion":
        count = len(_components(request.text))
        summary = f"The demo form is on screen with {count} detected components; it was saved."
        return {"summary": summary, "task_appears_complete": True}
    if request.function == "summarize_history":  # compaction (gui_agent context_tokens)
        return _summary(request.text)
    raise ValueError(f"the demo policy does not answer {request.function!r}")
