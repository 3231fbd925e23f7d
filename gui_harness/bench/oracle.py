"""The oracle planner: a test double that knows a MiniWoB++ goal from the page's DOM.

Owns `Oracle`, a ScriptedModel callable answering gui_agent's three model calls. It
reads what to do from the DOM (bench/_solvers.py) but acts only through the numbered
components of the observation in its prompt — never DOM coordinates — so its success
rate is the ceiling the harness's perception and input allow.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gui_harness._aim import Aim, aim, area, differs
from gui_harness.bench._solvers import SOLVERS, Click, Key, Step, Type
from gui_harness.bench.miniwob import MiniWobPage
from gui_harness.current import current_observation, latest_outcome, screen_part
from openprogram import ModelRequest
from openprogram.errors import UsageError

__all__ = ["ORACLE_TASKS", "Oracle"]

ORACLE_TASKS: tuple[str, ...] = tuple(sorted(SOLVERS))
"""The MiniWoB++ tasks the oracle can solve."""

_COMPONENT = re.compile(r"^#(\d+) \w+ at \((\d+), (\d+), (\d+)x(\d+)\)", re.M)
_SCREEN = re.compile(r"^Screen: (\d+)x(\d+) image pixels", re.M)

Box = tuple[int, int, int, int]
_MAX_WAITS = 20  # looks a click waits for a still page (100 ms apart), then it goes ahead


def pick_component(target: Box, components: dict[int, Box]) -> int | None:
    """The component to click for a DOM element at `target` (same pixel space): one whose
    centre lies inside the element, the one covering most of it first; None when no
    component's centre does (clicking any of them would miss)."""
    x, y, w, h = target
    best, best_score = None, -1.0
    for index, (cx, cy, cw, ch) in components.items():
        centre_x, centre_y = cx + cw / 2, cy + ch / 2
        if not (x <= centre_x <= x + w and y <= centre_y <= y + h):
            continue
        overlap_w = max(0, min(x + w, cx + cw) - max(x, cx))
        overlap_h = max(0, min(y + h, cy + ch) - max(y, cy))
        union = w * h + cw * ch - overlap_w * overlap_h
        score = overlap_w * overlap_h / union if union else 0.0
        if score > best_score:
            best, best_score = index, score
    return best


class Oracle:
    """Answers verify_step, plan_next_action and conclusion for one MiniWobPage.

    Raises UsageError for a task it has no solver for (see ORACLE_TASKS).
    """

    def __init__(self, page: MiniWobPage) -> None:
        solver = SOLVERS.get(page.task)
        if solver is None:
            raise UsageError(
                f"the oracle cannot solve MiniWoB++ task {page.task!r}; it knows "
                f"{', '.join(ORACLE_TASKS)}"
            )
        self.page = page
        self._steps: Iterator[Step] = solver(page)
        self._clicked: Click | None = None  # the latest click planned, taken again if refused
        self._pending: Step | None = None  # a click put off until the page holds still
        self._waits = 0

    def __call__(self, request: ModelRequest) -> dict[str, Any] | str:
        if request.function == "plan_next_action":
            return self._plan(request.text)
        if request.function == "verify_step":
            finished = self.page.done and self.page.reward() > 0
            return {
                "success": True,
                "observation": f"page done={self.page.done}",
                "task_complete": finished,
            }
        if request.function == "conclusion":
            summary = f"{self.page.utterance} — the page says done={self.page.done}"
            return {"summary": summary, "task_appears_complete": self.page.done}
        if request.function == "summarize_history":  # compaction (gui_agent context_tokens)
            return f"Working on: {self.page.utterance}. The page says done={self.page.done}."
        raise UsageError(f"the oracle does not answer {request.function!r}")

    def _plan(self, text: str) -> dict[str, Any]:
        if self.page.done:
            reward = self.page.reward()
            if reward > 0:
                return {"goal": "finish", "action": {"type": "done", "reason": "page rewarded"}}
            return _fail(f"the page ended the episode with reward {reward}")
        outcome = latest_outcome()
        redo, self._clicked = self._clicked, None
        pending, self._pending = self._pending, None
        step: Step
        try:
            if pending is not None:
                step = pending  # planned on a screen that was still changing
            elif redo is not None and outcome is not None and outcome.get("status") == "rejected":
                step = redo  # refused (the page was still drawing): click it on this screen
            else:
                step = next(self._steps)
        except StopIteration:
            return _fail("every step was taken but the page did not end the episode")
        except LookupError as exc:
            return _fail(str(exc))
        if isinstance(step, Type):
            return {"goal": f"type {step.text!r}", "action": {"type": "type", "text": step.text}}
        if isinstance(step, Key):
            return {
                "goal": "press " + "+".join(step.keys),
                "action": {"type": "keypress", "keys": list(step.keys)},
            }
        self._clicked = step
        return self._click(step, text)

    def _click(self, step: Click, text: str) -> dict[str, Any]:
        screen = _SCREEN.search(text)
        scale = 1.0
        if screen is not None and int(screen.group(1)):
            scale = self.page.desktop.size[0] / int(screen.group(1))
        x, y, w, h = self.page.box(step.element)
        target = (round(x / scale), round(y / scale), round(w / scale), round(h / scale))
        components = {
            int(i): (int(cx), int(cy), int(cw), int(ch))
            for i, cx, cy, cw, ch in _COMPONENT.findall(text)
        }
        index = pick_component(target, components)
        goal = f"click {step.what}"
        if self._waits < _MAX_WAITS and _changed_since_seen(index):
            # the DOM is read now, the screen was seen before: while the page moves (an
            # accordion opening), the two disagree; look again once it holds still
            self._waits += 1
            self._pending, self._clicked = step, None
            return {
                "goal": "wait for the page to hold still",
                "action": {"type": "wait", "ms": 100},
            }
        self._waits = 0
        if index is None:
            return _fail(f"no component on the screen lies over {step.what} at {target}")
        return {"goal": goal, "action": {"type": "click", "element": index}}


def _changed_since_seen(index: int | None) -> bool:
    """Whether the screen around component `index` (None: anywhere) changed since the
    observation: only that part of the screen is grabbed, nothing is perceived again."""
    seen = current_observation()
    if index is None:
        return differs(seen.image, screen_part((0, 0, *seen.size)))
    component = seen.component(index)
    part = area(component.center, component.box, seen.size)
    return aim(seen.image, screen_part(part), component.center, component.box) != Aim()


def _fail(reason: str) -> dict[str, Any]:
    return {"goal": "give up", "action": {"type": "fail", "reason": reason}}
