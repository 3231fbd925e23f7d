"""The desktop oracle: a test double that plays a desktop task's own `oracle` steps.

Owns `DesktopOracle`, a ScriptedModel callable answering gui_agent's model calls. It
knows the steps (click the component labelled X or a cell of a grid, turn the wheel over
one, press keys, type)
from the task file, but finds each component in the observation gui_agent made and acts
only through its number, the cell's name, keys and typing — never through coordinates —
so its success rate is the ceiling the harness's perception and input allow on real apps.
Quicker than any person or model, it takes its first step, and a key after a click, only
once the screen holds still (an app just started may lay its window out again; one may
answer a click in a later burst, enabling the command the key calls then), and clicks
once more when a click left the screen as it was even then (the app did not take it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from gui_harness._aim import shows_change
from gui_harness.bench._desktop_eval import folded, names
from gui_harness.bench.desktop_spec import (
    ClickStep,
    DesktopTask,
    KeysStep,
    ScrollStep,
    Target,
    TypeStep,
    WaitStep,
)
from gui_harness.current import current_observation, latest_outcome
from openprogram import ModelRequest
from openprogram.echo import echo
from openprogram.errors import UsageError

__all__ = ["DesktopOracle", "find_target"]

MAX_WAITS = 40
"""Observations a step waits for its component before the oracle gives up."""
_WAIT_MS = 300
STILL_MS = 500
"""The first step, and a key or typing step after a click, wait until two looks this far
apart show the same screen. An app just started may lay its window out again (a click
on its first screen's button hit another one). An app may answer a click twice, the
second time after a pause longer than the harness's settle (pcmanfm-qt enables Rename,
F2, in a signal sent 200 ms after the selection changed, later on a loaded machine), and
a key before that is ignored. A click that left the screen unchanged is judged not
taken, and taken again, only once the screen stayed the same over two such waits (a GTK
4 popover may show after the harness's settle)."""
MAX_STILL = 10
"""Looks a step waits for the screen to hold still (a spinner never does)."""


def find_target(target: Target, components: Any, windows: Sequence[Any] = ()) -> Any:
    """The component `target` names among `components` (in reading order), or None: by
    its label, or by the caption beside it (a drop-down Qt names by its current option,
    captioned "Look in:", matches "Look in:" and "Look in"; "Save As..." matches a menu
    item GTK draws "Save As…"). With the desktop's `windows` (bottom to top, boxes in
    the components' pixels), only the matches in the topmost window that holds any
    count: a dialog's "Save", not the toolbar's "Save" of the window under it."""
    label = folded(target.label) if target.label is not None else None
    part = folded(target.label_contains) if target.label_contains is not None else None
    matches = [
        c
        for c in components
        if (target.kind is None or c.kind == target.kind)
        and (label is None or label in names(c))
        and (part is None or any(part in name for name in names(c)))
    ]
    if len(matches) > 1 and windows:
        ranks = [_window_of(c, windows) for c in matches]
        top = max(ranks)
        matches = [c for c, rank in zip(matches, ranks, strict=True) if rank == top]
    return matches[target.nth] if len(matches) > target.nth else None


def _window_of(component: Any, windows: Sequence[Any]) -> int:
    """The stacking rank of the topmost of `windows` holding `component`'s centre (-1:
    none, a window manager's title bar)."""
    x, y = component.center
    for rank in range(len(windows) - 1, -1, -1):
        window = windows[rank]
        if window.x <= x < window.x + window.width and window.y <= y < window.y + window.height:
            return rank
    return -1


def _windows(seen: Any) -> Sequence[Any]:
    """The desktop's windows as `seen`'s tree query listed them, in its picture's
    pixels (none without a tree, or when the picture is scaled)."""
    snapshot = getattr(seen, "accessibility", None)
    if snapshot is None or tuple(snapshot.screen) != tuple(seen.image.size):
        return ()
    return tuple(snapshot.windows)


class DesktopOracle:
    """Answers verify_step, plan_next_action and conclusion for one DesktopTask.

    `expand` fills the task's placeholders ("{workdir}") in the text it types. Raises
    UsageError for a task without oracle steps.
    """

    def __init__(self, task: DesktopTask, expand: Callable[[str], str] = str) -> None:
        if not task.oracle:
            raise UsageError(
                f"task {task.id!r} has no \"oracle\" steps, so model 'oracle' cannot plan it; "
                "give it a real model"
            )
        self.task = task
        self._expand = expand
        self.done = 0
        """How many oracle steps were taken."""
        self._waits = 0
        self._clicked: int | None = None  # the click step planned last, taken again if refused
        self._planned_on: Any = None  # the observation the latest plan was made on
        self._planned: int | None = None  # the step it planned, taken again on a re-ask
        self._pointed = False  # a click was planned since the last key or typing step
        self._started = False  # the first screen held still (the app laid out)
        self._still: Any = None  # the screen a step waits to see again unchanged
        self._looks = 0  # looks that step waited for the screen to hold still
        self._calm = 0  # waits in a row over which the screen stayed the same
        self._clicked_on: Any = None  # the screen the latest click was planned on
        self._doubted: tuple[int, Any] | None = None  # a click that changed nothing, its screen
        self._retried: set[int] = set()  # click steps taken twice
        self._again: int | None = None  # the click step being taken again, if any

    @property
    def finished(self) -> bool:
        """Whether every step was taken."""
        return self.done >= len(self.task.oracle)

    def __call__(self, request: ModelRequest) -> dict[str, Any] | str:
        if request.function == "plan_next_action":
            return self._plan()
        if request.function == "verify_step":
            return {
                "success": True,
                "observation": f"oracle step {self.done} of {len(self.task.oracle)}",
                "task_complete": self.finished,
            }
        if request.function == "conclusion":
            return {
                "summary": f"took {self.done} of {len(self.task.oracle)} oracle steps",
                "task_appears_complete": self.finished,
            }
        if request.function == "summarize_history":  # compaction (gui_agent context_tokens)
            return f"Took {self.done} of {len(self.task.oracle)} oracle steps so far."
        raise UsageError(f"the oracle does not answer {request.function!r}")

    def _plan(self) -> dict[str, Any]:
        seen = current_observation()
        if seen is self._planned_on and self._planned is not None:
            # asked again on the same screen: the harness refused the answer (a cell of a
            # grid whose cells were not read in time); look again and plan that step anew
            self.done, self._planned, self._clicked = self._planned, None, None
            return {"goal": "look again", "action": {"type": "wait", "ms": _WAIT_MS}}
        self._planned_on, self._planned = seen, self.done
        outcome = latest_outcome()
        if self._clicked is not None and outcome is not None:
            if outcome["status"] == "rejected":
                self.done = self._clicked  # refused (the app was still drawing): click it again
            elif outcome.get("screen_changed") is False and self._clicked not in self._retried:
                self._doubted = (self._clicked, self._clicked_on)  # taken? (a late popover)
        self._clicked = None
        if self._doubted is not None:  # still the same a second later: not taken
            if self._unsettled(seen, spells=2):
                return _still_wait()
            step_index, before = self._doubted
            self._doubted = None
            if not shows_change(before, seen.image):  # not taken: click it again, once
                self.done = self._again = step_index
                self._retried.add(step_index)
        if self.finished:
            return {"goal": "finish", "action": {"type": "done", "reason": "all steps taken"}}
        step = self.task.oracle[self.done]
        if not self._started:  # an app just started may lay its window out again
            if self._unsettled(seen):
                return _still_wait()
            self._started = True
        if isinstance(step, KeysStep | TypeStep) and self._pointed:
            if self._unsettled(seen):
                return _still_wait()
            self._pointed = False
        if isinstance(step, KeysStep):
            self.done += 1
            keys = "+".join(step.keys)
            return {"goal": f"press {keys}", "action": {"type": "keypress", "keys": step.keys}}
        if isinstance(step, TypeStep):
            self.done += 1
            text = self._expand(step.type)
            return {"goal": f"type {text!r}", "action": {"type": "type", "text": text}}
        if isinstance(step, ClickStep):
            target = step.click
        elif isinstance(step, ScrollStep):
            target = step.scroll
        else:
            target = step.wait_for
        found = find_target(target, seen.components, _windows(seen))
        if found is not None and isinstance(step, ClickStep) and step.cell and found.grid is None:
            found = None  # a grid whose cells are not known (yet): nothing to address
        what = target.model_dump(exclude_defaults=True)
        if found is None and self._again == self.done:
            # the click's target changed though the screen did not (a field the click
            # focused, captioned anew): the click was taken, go on
            self._again, self.done = None, self.done + 1
            return {"goal": "the click was taken", "action": {"type": "wait", "ms": _WAIT_MS}}
        self._again = None
        if found is None:
            self._waits += 1
            if self._waits > MAX_WAITS:
                reason = f"no component {echo(what)} showed in {MAX_WAITS} observations"
                return {"goal": "give up", "action": {"type": "fail", "reason": reason}}
            return {"goal": f"wait for {echo(what)}", "action": {"type": "wait", "ms": _WAIT_MS}}
        self._waits = 0
        if isinstance(step, ClickStep):
            self._clicked, self._clicked_on = self.done, seen.image
            self._pointed = True
        self.done += 1
        if isinstance(step, WaitStep):
            return {"goal": f"{echo(what)} shows", "action": {"type": "wait", "ms": 0}}
        if isinstance(step, ScrollStep):  # what it brings into view is looked for anew
            self._pointed = True
            scroll = {"type": "scroll", "element": found.index, "scroll_y": step.down}
            return {"goal": f"scroll {step.down} over {echo(what)}", "action": scroll}
        kind = "double_click" if step.double else "click"
        action: dict[str, Any] = {"type": kind, "element": found.index}
        if step.cell is not None:
            action["cell"] = step.cell
            what = {**what, "cell": step.cell}
        return {"goal": f"{kind} {echo(what)}", "action": action}

    def _unsettled(self, seen: Any, spells: int = 1) -> bool:
        """Whether to look again before the next step: until the screen stayed the same
        over `spells` waits in a row (at most MAX_STILL looks)."""
        if self._looks < MAX_STILL:
            if self._still is None or shows_change(self._still, seen.image):
                self._still, self._calm = seen.image, 0
            else:
                self._calm += 1
            if self._calm < spells:
                self._looks += 1
                return True
        self._still, self._looks, self._calm = None, 0, 0
        return False


def _still_wait() -> dict[str, Any]:
    return {"goal": "let the screen hold still", "action": {"type": "wait", "ms": STILL_MS}}
