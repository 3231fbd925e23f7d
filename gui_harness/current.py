"""What a leaf of the running gui_agent can reach: the screen, the observation, prompts.

Owns the live state of one gui_agent run (a contextvar, so concurrent runs never mix)
and the public functions every leaf uses, the stock ones in leaves.py and a user's
alike: current_observation(), observe_screen(), look(), ask_for_action() and friends.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import PIL.Image

from gui_harness.actions import Policy, Transform, resolve
from gui_harness.desktop.base import Desktop
from gui_harness.errors import InvalidAction
from gui_harness.normalize import normalize_action
from gui_harness.perception import Observation, Perception
from gui_harness.perception._pixels import pil_image
from gui_harness.prompts import Plan, Prompts
from openprogram import count_tokens, llm
from openprogram.callbacks.base import current_run, notify
from openprogram.core.image import Image
from openprogram.errors import ModelOutputError, UsageError
from openprogram.runtime.runtime import Runtime

_log = logging.getLogger(__name__)

__all__ = [
    "ask_for_action",
    "current_observation",
    "current_prompts",
    "latest_outcome",
    "latest_verification",
    "look",
    "observe_screen",
]


@dataclass
class _Run:
    """The live state of one gui_agent run, shared by its steps (never recorded)."""

    desktop: Desktop
    perception: Any  # anything with perceive(image) -> Observation
    policy: Policy
    runtime: Runtime
    max_image_width: int
    settle_timeout: float
    history_window: int | None
    prompts: Prompts
    context_tokens: int | None = None
    leaves: dict[str, Any] = field(default_factory=dict)  # observe, ...: the ones in use
    observation: Observation | None = None
    transform: Transform = field(default_factory=Transform)
    verification: dict[str, Any] | None = None
    step: int = 0
    published: int = 0  # how many observations were made current so far
    # the frame taken while the screen settled: screenshot, at the model's size, its
    # scale, as hashed
    early: tuple[Any, Any, float, Image] | None = None
    shown: Image | None = None  # the hashed image of the latest capture, when made early
    outcome: dict[str, Any] | None = None  # what the latest step did (the next one's feedback)
    refused_changed: bool = False  # the latest pointer action was refused: its target changed


_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("gui_run", default=None)


def _current() -> _Run:
    run = _run.get()
    if run is None:
        raise UsageError(
            "this runs inside gui_agent(): the leaves of a GUI run (observe, verify_step, "
            "plan_next_action, conclusion) reach the screen through it; call "
            "gui_agent(task, plan_next_action=your_function, ...) instead"
        )
    return run


def current_observation() -> Observation:
    """The latest observation of the running gui_agent: the screenshot, its numbered
    components and their text; what the planner sees and `element` numbers refer to.

    Raises UsageError outside gui_agent, or before this step's observe made one.
    """
    run = _current()
    if run.observation is None:
        raise UsageError(
            "no observation yet: each step's observe makes one first; a replaced observe "
            "must call gui_harness.observe_screen(step)"
        )
    return run.observation


def latest_verification() -> dict[str, Any] | None:
    """The latest verify_step verdict of this run (None before the first one)."""
    return _current().verification


def latest_outcome() -> dict[str, Any] | None:
    """What the latest finished step of this run did, as verify_step is told it: its
    goal, action and status ("acted", "rejected" with the reason in "error", ...); None
    before the first step ends."""
    return _current().outcome


def current_prompts() -> Prompts:
    """The prompts this run was given (`gui_agent(prompts=...)`, else the defaults)."""
    return _current().prompts


def look() -> Observation:
    """A fresh screenshot of the run's desktop at the model's size, perceived with the
    run's perception. Unlike observe_screen, it is not made current and not recorded."""
    run = _current()
    image, _scale, _screenshot = _capture(run)
    return _perceive(run, image)


def observe_screen(step: int) -> dict[str, Any]:
    """Take a screenshot, perceive it, and make it the current observation.

    What the stock observe does, for a replaced observe to call: later leaves and
    dispatch use this observation (element numbers, the image↔screen transform).
    Notifies `on_screenshot` callbacks. Returns observe's record: step, size, scale,
    the number of components and the screenshot the model sees, the components as shown
    (`shown`: their dicts, labels included, so a resumed run numbers and names them as
    the planner saw them, whatever OCR had read by then), plus what the accessibility
    tree said and perception's notes when there are any.
    """
    run = _current()
    image, scale, screenshot = _capture(run)
    observation = _perceive(run, image)
    _publish(run, observation, scale)
    notify(run.runtime.callbacks, "on_screenshot", screenshot, step, record_on=current_run())
    shown = run.shown if run.shown is not None and run.shown.pil is image else Image(image)
    seen: dict[str, Any] = {
        "step": step,
        "size": list(observation.size),
        "scale": scale,
        "components": len(observation.components),
        "screenshot": shown,
        "shown": [component.to_dict() for component in observation.components],
    }
    accessibility = getattr(observation, "accessibility", None)
    if accessibility is not None:
        # what the tree said, so a replay numbers the components as the planner saw them
        seen["accessibility"] = accessibility.to_dict()
    if getattr(observation, "notes", ()):
        seen["notes"] = list(observation.notes)
    return seen


def ask_for_action(prompt: str, *, render_range: dict[str, Any] | None = None) -> dict[str, Any]:
    """Ask the model for the next action, shown the current observation's marked
    screenshot after `prompt`; an invalid action gets one re-ask.

    render_range: the history this call reads (default: the calling function's own
    setting, capped to the run's history_window). Records one llm node (two with a
    re-ask) in the calling function. Returns `{"goal", "action"}` with the action
    normalised, or `{"goal", "action": None, "error"}`: what plan_next_action returns.
    """
    run = _current()
    observation = current_observation()
    window = render_range if render_range is not None else _window(run, prompt, observation)
    try:
        plan = llm([prompt, observation.marked], response_format=Plan, render_range=window)
    except ModelOutputError as exc:
        return {"goal": None, "action": None, "error": f"unreadable plan: {exc}"}
    problem = _invalid(plan, observation, run)
    if problem is not None:
        try:
            plan = llm(run.prompts.reask_prompt(problem), response_format=Plan, render_range=window)
        except ModelOutputError as exc:
            return {"goal": None, "action": None, "error": f"unreadable plan: {exc}"}
        problem = _invalid(plan, observation, run)
        if problem is not None:
            return {"goal": plan.goal, "action": None, "error": f"invalid action: {problem}"}
    action = normalize_action(plan.action)
    return {"goal": plan.goal, "action": action.model_dump(exclude_none=True)}


def _window(run: _Run, prompt: str, observation: Observation) -> dict[str, Any] | None:
    window: dict[str, Any] = {}
    if run.history_window is not None:
        # the current step's own lines (its call, observe, verify) come on top of N steps
        window["callers"] = run.history_window + (3 if run.step > 1 else 2)
    if run.context_tokens is not None:
        # the whole plan prompt within context_tokens: the history gets what the system
        # text, this prompt, the reply's schema and the screenshot leave
        model = run.runtime.model_name
        fixed = count_tokens(
            [run.runtime.system or "", prompt, _PLAN_SCHEMA, observation.marked], model=model
        )
        window["tokens"] = max(run.context_tokens - fixed - _FRAMING_TOKENS, 1)
    return window or None


_PLAN_SCHEMA = json.dumps(Plan.model_json_schema(), ensure_ascii=False)
_FRAMING_TOKENS = 64  # the schema instruction's sentence and the messages' framing


def _invalid(plan: Plan, observation: Observation, run: _Run) -> str | None:
    try:
        resolve(normalize_action(plan.action), observation.components, run.transform)
    except InvalidAction as exc:
        return str(exc)
    return None


def _capture(run: _Run) -> tuple[Any, float, Any]:
    """(the screenshot at the model's size, its scale, the full screenshot)."""
    screenshot = run.desktop.screenshot()
    early, run.early, run.shown = run.early, None, None
    if early is not None and early[0] is screenshot:  # nothing drawn since: done already
        run.shown = early[3]
        return early[1], early[2], screenshot
    image, scale = _model_size(run, screenshot)
    return image, scale, screenshot


def screen_part(part: tuple[int, int, int, int]) -> PIL.Image.Image:
    """The screen's `part` (left, top, right, bottom in image pixels) as it is now, at the
    current observation's scale (inside gui_agent(); UsageError outside)."""
    return _grab(_current(), part)


def _grab(run: _Run, part: tuple[int, int, int, int]) -> PIL.Image.Image:
    """The screen's `part` (left, top, right, bottom in image pixels) as it is now, at
    the observation's scale: through the desktop's `grab(box)` where it has one (a
    region, not the whole screen: a remote desktop sends less), else cut from a
    screenshot."""
    left, top, right, bottom = part
    x0, y0 = run.transform.to_screen(left, top)
    x1, y1 = run.transform.to_screen(right, bottom)
    grab = getattr(run.desktop, "grab", None)
    if callable(grab):
        now = pil_image(grab((x0, y0, x1 - x0, y1 - y0)))
    else:
        now = pil_image(run.desktop.screenshot()).crop((x0, y0, x1, y1))
    if now.size != (right - left, bottom - top):
        now = now.resize((right - left, bottom - top))
    return now


def _model_size(run: _Run, screenshot: Any) -> tuple[Any, float]:
    """(`screenshot` at the model's size, its scale)."""
    width, height = screenshot.size
    scale = max(1.0, width / run.max_image_width)
    if scale == 1.0:
        return screenshot, scale
    return screenshot.resize((round(width / scale), round(height / scale))), scale


@contextlib.contextmanager
def _early_frames(run: _Run) -> Iterator[None]:
    """While in it, the frames the desktop takes as the screen settles after an action
    go to the run's Perception, so the next observe finds its detection done."""
    add = getattr(run.desktop, "add_frame_listener", None)
    if not callable(add) or not isinstance(run.perception, Perception):
        yield
        return
    perception = run.perception

    def listener(frame: Any) -> None:
        run.early = None
        try:
            image, scale = _model_size(run, frame)
            perception.prepare(image)
            shown = Image(image)  # one image value for the record and its view: hashed once
            shown.ref()  # hashed now, while the screen settles
        except Exception:
            # only a head start: the next observe does this work again on its own thread,
            # and a fault that is real shows there, recorded on its node
            _log.debug("early frame work failed; observe starts afresh", exc_info=True)
            return
        run.early = (frame, image, scale, shown)

    add(listener)
    try:
        yield
    finally:
        run.desktop.remove_frame_listener(listener)  # type: ignore[attr-defined]  # has add


def _perceive(run: _Run, image: Any) -> Observation:
    observation = run.perception.perceive(image)
    if not isinstance(observation, Observation):
        raise UsageError(
            f"perception={run.perception!r} returned {type(observation).__name__} from "
            "perceive(image); it must return a gui_harness.Observation"
        )
    return observation


def _publish(run: _Run, observation: Observation, scale: float) -> None:
    run.observation = observation
    run.transform = Transform(scale=scale)
    run.published += 1
