"""gui_agent: observe → verify → plan → dispatch on a real desktop, then conclude.

Owns the loop and its agentic functions with the expose / render_range of DESIGN.md §8,
the stop rules and the done gate. Prompts are in prompts.py; perception, actions and
desktops in their packages. Start at gui_agent(), then gui_step().
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_harness.actions import Policy, Transform, resolve
from gui_harness.desktop.base import Desktop
from gui_harness.desktop.settle import wait_until_stable
from gui_harness.errors import ActionRejected, DesktopError, InvalidAction
from gui_harness.normalize import normalize_action
from gui_harness.perception import (
    AccessibilitySnapshot,
    AccessibilitySource,
    ComponentMemory,
    Observation,
    Perception,
)
from gui_harness.prompts import (
    Conclusion,
    Plan,
    Verification,
    conclusion_prompt,
    plan_prompt,
    reask_prompt,
    verify_prompt,
)
from gui_harness.result import GuiResult
from openprogram import agentic_function, current_frame, current_session, llm
from openprogram.callbacks.base import current_run, gate, notify
from openprogram.errors import ModelAuthError, ModelError, ModelOutputError, RunStopped, UsageError
from openprogram.runtime import Runtime, current_runtime

__all__ = [
    "conclusion",
    "dispatch_action",
    "gui_agent",
    "gui_step",
    "observe",
    "plan_next_action",
    "verify_step",
]

_MAX_CONSECUTIVE_ERRORS = 3
_HIDDEN = {"hidden": True}


@dataclass
class _Run:
    """The live state of one gui_agent run, shared by its steps (never recorded)."""

    desktop: Desktop
    perception: Perception
    policy: Policy
    runtime: Runtime
    max_image_width: int
    settle_timeout: float
    history_window: int | None
    observation: Observation | None = None
    transform: Transform = field(default_factory=Transform)
    verification: dict[str, Any] | None = None
    seen: dict[str, Any] | None = None


_run: contextvars.ContextVar[_Run | None] = contextvars.ContextVar("gui_run", default=None)


def _current() -> _Run:
    run = _run.get()
    if run is None:
        raise UsageError("this function runs inside gui_agent(); call gui_agent(task) instead")
    return run


def _image_content(text: str, observation: Observation) -> list[Any]:
    return [text, {"type": "image", "image": observation.marked}]


# -- the leaves -------------------------------------------------------------------------------


@agentic_function(render_range={"callers": 0})
def observe(step: int) -> dict[str, Any]:
    """Take a screenshot and find the numbered components on it."""
    run = _current()
    screenshot = run.desktop.screenshot()
    width, height = screenshot.size
    scale = max(1.0, width / run.max_image_width)
    image = screenshot
    if scale > 1.0:
        image = screenshot.resize((round(width / scale), round(height / scale)))
    run.transform = Transform(scale=scale)
    observation = run.perception.perceive(image)
    run.observation = observation
    notify(run.runtime.callbacks, "on_screenshot", screenshot, step, record_on=current_run())
    run.seen = {
        "step": step,
        "size": list(observation.size),
        "scale": scale,
        "components": len(observation.components),
        "screenshot": image,
    }
    if observation.accessibility is not None:
        # what the tree said, so a replay numbers the components as the planner saw them
        run.seen["accessibility"] = observation.accessibility.to_dict()
    if observation.notes:
        run.seen["notes"] = list(observation.notes)
    return run.seen


def _observed(run: _Run, seen: dict[str, Any]) -> None:
    """Make `run` hold the observation `observe` returned. A replayed observe (resuming
    a crashed run) ran nothing, so perceive its recorded screenshot again: the same
    picture gives the same numbered components the recorded plan refers to."""
    if seen is run.seen:  # observe ran live and set everything itself
        return
    run.seen = seen
    run.transform = Transform(scale=float(seen.get("scale", 1.0)))
    recorded = seen.get("accessibility")
    tree = AccessibilitySnapshot.from_dict(recorded) if recorded else AccessibilitySnapshot()
    run.observation = run.perception.perceive(seen["screenshot"], accessibility=tree)


@agentic_function(render_range={"callers": 0})
def verify_step(task: str, previous: dict[str, Any], step: int) -> dict[str, Any]:
    """Judge from the current screen whether the previous step's action worked."""
    run = _current()
    observation = run.observation
    assert observation is not None
    prompt = verify_prompt(task, previous, observation.size, observation.text)
    verdict = llm(_image_content(prompt, observation), response_format=Verification)
    return verdict.model_dump()


@agentic_function
def plan_next_action(task: str, step: int) -> dict[str, Any]:
    """Choose the next action from the task, the screen and the steps so far."""
    run = _current()
    observation = run.observation
    assert observation is not None
    window = None
    if run.history_window is not None:
        # the current step's own lines (its call, observe, verify) come on top of N steps
        window = {"callers": run.history_window + (3 if step > 1 else 2)}
    prompt = plan_prompt(task, step, observation.size, observation.text, run.verification)
    try:
        plan = llm(_image_content(prompt, observation), response_format=Plan, render_range=window)
    except ModelOutputError as exc:
        return {"goal": None, "action": None, "error": f"unreadable plan: {exc}"}
    problem = _invalid(plan, observation, run)
    if problem is not None:
        try:
            plan = llm(reask_prompt(problem), response_format=Plan, render_range=window)
        except ModelOutputError as exc:
            return {"goal": None, "action": None, "error": f"unreadable plan: {exc}"}
        problem = _invalid(plan, observation, run)
        if problem is not None:
            return {"goal": plan.goal, "action": None, "error": f"invalid action: {problem}"}
    action = normalize_action(plan.action)
    return {"goal": plan.goal, "action": action.model_dump(exclude_none=True)}


def _invalid(plan: Plan, observation: Observation, run: _Run) -> str | None:
    try:
        resolve(normalize_action(plan.action), observation.components, run.transform)
    except InvalidAction as exc:
        return str(exc)
    return None


@agentic_function
def dispatch_action(action: dict[str, Any], step: int) -> dict[str, Any]:
    """Check the action against the policy and perform it on the desktop."""
    run = _current()
    observation = run.observation
    assert observation is not None
    planned = normalize_action(_restore(run.runtime.callbacks, action))
    screen_action = resolve(planned, observation.components, run.transform)
    try:
        run.policy.check(screen_action, run.desktop.size)
    except ActionRejected as exc:
        return {"executed": False, "error": f"rejected by policy: {exc.reason}"}
    callbacks = run.runtime.callbacks
    notify(callbacks, "on_action_start", screen_action, record_on=current_run())
    try:
        run.desktop.execute(screen_action)
    except ActionRejected as exc:  # a remote desktop's own policy refused it
        notify(callbacks, "on_action_end", screen_action, str(exc), record_on=current_run())
        return {"executed": False, "error": f"rejected by the desktop: {exc.reason}"}
    except DesktopError as exc:
        notify(callbacks, "on_action_end", screen_action, str(exc), record_on=current_run())
        raise
    notify(callbacks, "on_action_end", screen_action, None, record_on=current_run())
    _learn(run, planned)
    # frames=3: one matching pair can come before the app has redrawn
    settled = wait_until_stable(run.desktop, timeout=run.settle_timeout, frames=3)
    return {"executed": True, "settled": settled}


def _learn(run: _Run, action: Any) -> None:
    """Remember the labelled component an action used, so the app's memory can name it
    next time without OCR."""
    element = getattr(action, "element", None)
    memory = run.perception.memory
    if element is None or memory is None or run.observation is None:
        return
    component = run.observation.component(element)
    if component.label and not memory.match(run.observation.image, [component]):
        run.perception.remember(run.observation, element, component.label)


def _restore(callbacks: Sequence[Any], action: dict[str, Any]) -> dict[str, Any]:
    """Put back what a PII redactor masked, so the real value is typed."""
    for callback in callbacks:
        restore = getattr(callback, "restore", None)
        if callable(restore):
            action = restore(action)
    return action


@agentic_function(render_range={"callers": 0})
def conclusion(task: str, outcome: str) -> str:
    """Describe what the final screen shows and whether the task looks done."""
    run = _current()
    observe_final = run.perception.perceive(_model_image(run))
    prompt = conclusion_prompt(task, outcome, observe_final.size, observe_final.text)
    reply = llm(_image_content(prompt, observe_final), response_format=Conclusion)
    return reply.summary


def _model_image(run: _Run) -> Any:
    screenshot = run.desktop.screenshot()
    if run.transform.scale > 1.0:
        width, height = screenshot.size
        scale = run.transform.scale
        return screenshot.resize((round(width / scale), round(height / scale)))
    return screenshot


# -- one step ---------------------------------------------------------------------------------


@agentic_function(input={"task": _HIDDEN, "feedback": _HIDDEN})
def gui_step(task: str, step: int, feedback: dict[str, Any] | None) -> dict[str, Any]:
    """One round: observe, verify the previous step, plan, gate done, dispatch."""
    run = _current()
    _observed(run, observe(step))
    if step > 1 and feedback is not None:
        run.verification = verify_step(task, feedback, step)
    plan = plan_next_action(task, step)
    outcome: dict[str, Any] = {"step": step, "goal": plan["goal"], "action": plan["action"]}
    action = plan["action"]
    if action is None:
        return {**outcome, "status": "invalid", "success": False, "error": plan["error"]}
    kind = action["type"]
    if kind == "done":
        if run.verification is not None and run.verification.get("task_complete"):
            return {**outcome, "status": "done", "success": True}
        return {
            **outcome,
            "status": "done_rejected",
            "success": False,
            "error": "done was not accepted: the latest verification does not show the task "
            "complete; check the screen and continue",
        }
    if kind == "fail":
        return {**outcome, "status": "fail", "success": False, "error": action.get("reason")}
    result = dispatch_action(action, step)
    if not result["executed"]:
        return {**outcome, "status": "rejected", "success": False, "error": result["error"]}
    element = action.get("element")
    if element is not None and run.observation is not None:
        component = run.observation.component(element)
        outcome["target"] = component.label or f"{component.kind} #{element}"
    return {**outcome, "status": "acted", "success": True}


# -- the loop ---------------------------------------------------------------------------------


@agentic_function(
    input={
        "desktop": _HIDDEN,
        "app": _HIDDEN,
        "history_window": _HIDDEN,
        "timeout_s": _HIDDEN,
        "policy": _HIDDEN,
        "max_image_width": _HIDDEN,
        "settle_timeout": _HIDDEN,
    }
)
def gui_agent(
    task: str,
    max_steps: int = 15,
    desktop: Desktop | None = None,
    app: str | Sequence[str] | None = None,
    history_window: int | None = None,
    timeout_s: float | None = None,
    runtime: Runtime | None = None,
    *,
    policy: Policy | None = None,
    max_image_width: int = 1280,
    settle_timeout: float = 3.0,
) -> GuiResult:
    """Do `task` on a desktop: observe, verify, plan and act until done or a limit.

    desktop: where to act; None starts a private VirtualDesktop (Xvfb) running `app`
        (an argv list) and closes it at the end.
    app: a name for the component memory (or the argv to start, see above).
    history_window: the planner sees only the last N steps. timeout_s: wall-clock limit.
    Returns a GuiResult; success only for a done the latest verification confirmed.
    """
    if max_steps < 1:
        raise UsageError(f"max_steps={max_steps!r} must be at least 1")
    if history_window is not None and history_window < 0:
        raise UsageError(f"history_window={history_window!r} must be >= 0 or None")
    memory_name = app if isinstance(app, str) else (Path(app[0]).name if app else None)
    owned = None
    if desktop is None:
        from gui_harness.desktop.virtual import VirtualDesktop

        apps = [list(app)] if app is not None and not isinstance(app, str) else []
        owned = desktop = VirtualDesktop(apps=apps)
        owned.start()  # stops whatever it started if it fails
    accessibility = None
    try:
        accessibility = _accessibility(desktop)
        perception = Perception(
            ComponentMemory(memory_name) if memory_name else None, accessibility=accessibility
        )
        run = _Run(
            desktop=desktop,
            perception=perception,
            policy=policy or Policy(),
            runtime=runtime or current_runtime(),
            max_image_width=max_image_width,
            settle_timeout=settle_timeout,
            history_window=history_window,
        )
        token = _run.set(run)
        try:
            return _loop(run, task, max_steps, timeout_s)
        finally:
            _run.reset(token)
    finally:
        if accessibility is not None:
            accessibility.close()
        if owned is not None:
            owned.close()


def _accessibility(desktop: Desktop) -> AccessibilitySource | None:
    """The accessibility source of a desktop that has an AT-SPI bus (VirtualDesktop,
    X11Desktop), or one that notes why it has none; None for desktops without the notion."""
    if not hasattr(desktop, "accessibility_bus"):
        return None
    address = desktop.accessibility_bus
    note = getattr(desktop, "accessibility_note", None) or (
        f"no accessibility bus was found for {desktop!r}; pixels only"
    )
    return AccessibilitySource(address, screen=desktop.size, note=note)


def _loop(run: _Run, task: str, max_steps: int, timeout_s: float | None) -> GuiResult:
    started = time.monotonic()
    usage_before = run.runtime.usage
    steps: list[dict[str, Any]] = []
    feedback: dict[str, Any] | None = None
    stop, success = "max_steps", False
    detail: str | None = f"reached max_steps={max_steps}"
    errors = 0
    frame = current_frame()
    for step in range(1, max_steps + 1):
        if timeout_s is not None and time.monotonic() - started > timeout_s:
            stop, detail = "timeout", f"timeout_s={timeout_s} passed"
            break
        try:
            reason = gate(run.runtime.callbacks, run.runtime, kind="gui_step", frame=frame)
        except RunStopped as exc:  # e.g. BudgetManager(raise_error=True)
            reason = exc.reason
        if reason is not None:
            stop, detail = "stopped", reason
            break
        try:
            outcome = gui_step(task, step, feedback)
        except RunStopped as exc:
            stop, detail = "stopped", exc.reason
            break
        except ModelAuthError as exc:
            stop, detail = "error", str(exc)
            break
        except (ModelError, DesktopError) as exc:
            errors += 1
            feedback = {"step": step, "status": "error", "error": f"{type(exc).__name__}: {exc}"}
            steps.append(feedback)
            if errors >= _MAX_CONSECUTIVE_ERRORS:
                stop, detail = "error", f"{errors} errors in a row, last: {exc}"
                break
            continue
        errors = 0
        steps.append(outcome)
        feedback = outcome
        if outcome["status"] == "done":
            stop, detail, success = "done", outcome["action"].get("reason") or None, True
            break
        if outcome["status"] == "fail":
            stop, detail = "fail", outcome.get("error")
            break
    if frame is not None and stop in ("stopped", "error"):
        frame.meta["stop_reason"] = detail
    summary = _conclude(run, task, stop, detail)
    result = GuiResult(
        success=success,
        summary=summary,
        stop_reason=stop,  # type: ignore[arg-type]
        detail=detail,
        steps=steps,
        usage=_usage_since(run.runtime, usage_before),
        session_id=current_session().id,
    )
    result._dag = current_session().dag
    result._node_id = frame.id if frame is not None else None
    return result


def _conclude(run: _Run, task: str, stop: str, detail: str | None) -> str:
    outcome = stop if not detail else f"{stop}: {detail}"
    if stop in ("stopped", "error"):
        return f"The run ended early ({outcome}); no conclusion was asked of the model."
    try:
        return conclusion(task, outcome)
    except (ModelError, RunStopped, DesktopError) as exc:
        return f"The run ended ({outcome}); the conclusion failed: {exc}"


def _usage_since(runtime: Runtime, before: Any) -> Any:
    from openprogram.usage import Usage

    now = runtime.usage
    fields = {
        name: getattr(now, name) - getattr(before, name)
        for name in (
            "input_tokens",
            "output_tokens",
            "cached_tokens",
            "reasoning_tokens",
            "cost_usd",
            "unpriced_calls",
            "latency_s",
            "calls",
        )
    }
    return Usage(**fields, cost_known=fields["unpriced_calls"] == 0)
