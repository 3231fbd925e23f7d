"""gui_agent: observe → verify → plan → dispatch on a real desktop, then conclude.

Owns the loop (gui_agent, gui_step), dispatch_action, the stop rules, the done gate and
the replaceable parts: gui_agent takes your own observe / verify_step / plan_next_action
/ conclusion and perception, checked at the call (_replaceable.py). The stock leaves are
in leaves.py, what they reach of the run in current.py, prompts in prompts.py. Start at
gui_agent().
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from gui_harness import leaves
from gui_harness._aim import aim, area, click_point, shows_change
from gui_harness._replaceable import (
    check_leaf,
    check_perception,
    is_dict,
    is_plan,
    is_str,
    leaf_result,
)
from gui_harness.actions import Policy, resolve
from gui_harness.current import _current, _early_frames, _grab, _publish, _Run, _run
from gui_harness.desktop.base import Desktop
from gui_harness.desktop.settle import wait_until_stable
from gui_harness.errors import ActionRejected, DesktopAuthError, DesktopError, InvalidAction
from gui_harness.leaves import conclusion, observe, plan_next_action, verify_step
from gui_harness.normalize import normalize_action
from gui_harness.perception import (
    AccessibilitySnapshot,
    AccessibilitySource,
    Component,
    ComponentMemory,
    Observation,
    Perception,
    describe,
)
from gui_harness.perception._pixels import pil_image
from gui_harness.perception.cells import cell_box
from gui_harness.prompts import DEFAULT_PROMPTS, Prompts
from gui_harness.result import GuiResult
from openprogram import agentic_function, current_frame, current_session
from openprogram.callbacks.base import current_run, gate, notify
from openprogram.core.image import Image
from openprogram.echo import cut
from openprogram.errors import ModelAuthError, ModelError, RunStopped, RunWaiting, UsageError
from openprogram.runtime.runtime import Runtime, current_runtime

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
_CAPTIONED = frozenset({"checkbox", "radio"})


def _observed(run: _Run, fn: Any, seen: Any, published: int) -> None:
    """Make sure `run` holds the observation this step's observe made. A replayed
    observe (resuming a crashed run) ran nothing, so rebuild it from the record: the
    components as shown to the planner (labels and all), or, in a record without them,
    its screenshot perceived again."""
    if run.published != published:  # observe ran live and made one current
        return
    screenshot = seen.get("screenshot") if isinstance(seen, dict) else None
    if screenshot is None:
        label = getattr(fn, "__qualname__", repr(fn))
        raise UsageError(
            f"observe={label} made no observation current: call "
            "gui_harness.observe_screen(step) in it and return its record"
        )
    recorded = seen.get("accessibility")
    shown = seen.get("shown")
    if isinstance(shown, list):
        components = tuple(Component.from_dict(c) for c in shown)
        tree = AccessibilitySnapshot.from_dict(recorded) if recorded else None
        notes = tuple(seen.get("notes") or ())
        picture = pil_image(screenshot.pil if isinstance(screenshot, Image) else screenshot)
        observation = Observation(picture, components, describe(components), notes, tree)
    elif isinstance(run.perception, Perception):
        screenshot = screenshot.pil if isinstance(screenshot, Image) else screenshot
        tree = AccessibilitySnapshot.from_dict(recorded) if recorded else AccessibilitySnapshot()
        observation = run.perception.perceive(screenshot, accessibility=tree)
    else:
        observation = run.perception.perceive(screenshot)
    _publish(run, observation, float(seen.get("scale", 1.0)))


def _held_keys(desktop: Desktop) -> list[str]:
    """The keys the desktop holds down from earlier key_downs (none if it does not say)."""
    return list(getattr(desktop, "held_keys", None) or ())


def _release_held(desktop: Desktop) -> str | None:
    """Release what the run's key_downs and mouse_downs left held (a Ctrl held past the
    run would change the user's next keys); says what went wrong, or None."""
    release = getattr(desktop, "release_held", None)
    if release is None or not (_held_keys(desktop) or getattr(desktop, "held_buttons", None)):
        return None
    try:
        release()
    except DesktopError as exc:
        return f"releasing the held keys and buttons failed: {cut(str(exc))}"
    return None


@agentic_function
def dispatch_action(action: dict[str, Any], step: int) -> dict[str, Any]:
    """Check the action against the policy and perform it on the desktop."""
    run = _current()
    observation = run.observation
    assert observation is not None
    planned = normalize_action(_restore(run.runtime.callbacks, action))
    screen_action = resolve(planned, observation.components, run.transform, image=observation.image)
    moved = _aimed(run, observation, planned)
    if moved is None:
        return {"executed": False, "error": _changed(planned)}
    if moved != (0, 0):
        x, y = getattr(screen_action, "x", None), getattr(screen_action, "y", None)
        assert x is not None and y is not None  # resolved from its element
        dx, dy = (round(d * run.transform.scale) for d in moved)
        screen_action = screen_action.model_copy(update={"x": x + dx, "y": y + dy})
    try:
        run.policy.check(screen_action, run.desktop.size, held=_held_keys(run.desktop))
    except ActionRejected as exc:
        return {"executed": False, "error": f"rejected by policy: {exc.reason}"}
    callbacks = run.runtime.callbacks
    notify(callbacks, "on_action_start", screen_action, record_on=current_run())
    tree = observation.accessibility
    source = getattr(run.perception, "accessibility", None)
    if not (tree is not None and tree.components and isinstance(source, AccessibilitySource)):
        source = None  # no app on screen publishes a tree: nothing to wait for
    if source is not None:
        source.mark()
    try:
        run.desktop.execute(screen_action)
    except ActionRejected as exc:  # a remote desktop's own policy refused it
        notify(callbacks, "on_action_end", screen_action, str(exc), record_on=current_run())
        return {"executed": False, "error": f"rejected by the desktop: {exc.reason}"}
    except InvalidAction as exc:  # a key or button this desktop cannot send as asked
        notify(callbacks, "on_action_end", screen_action, str(exc), record_on=current_run())
        return {"executed": False, "error": f"the desktop cannot do it: {exc}"}
    except DesktopError as exc:
        notify(callbacks, "on_action_end", screen_action, str(exc), record_on=current_run())
        raise
    notify(callbacks, "on_action_end", screen_action, None, record_on=current_run())
    _learn(run, planned)
    started = time.monotonic()
    # frames=3: one matching pair can come before the app has redrawn
    settled = wait_until_stable(run.desktop, timeout=run.settle_timeout, frames=3)
    if source is not None:  # the tree reaches us over D-Bus, after the pixels or before
        left = run.settle_timeout - (time.monotonic() - started)
        settled = source.wait_caught_up(timeout=max(0.0, left)) and settled
    result: dict[str, Any] = {"executed": True, "settled": settled}
    if moved != (0, 0):
        result["moved"] = list(moved)
    clicked = planned.type in ("click", "double_click", "triple_click")
    if clicked and getattr(planned, "element", None) is not None:
        # a click that changed nothing may have missed what it aimed at: say so to verify
        whole = (0, 0, *observation.size)
        result["screen_changed"] = shows_change(observation.image, _grab(run, whole))
    return result


def _aimed(run: _Run, observation: Observation, planned: Any) -> tuple[int, int] | None:
    """How far (image pixels) the element a pointer action aims at has moved since it
    was observed: (0, 0) when it has not or the action names no element; None when it
    changed beyond recognition, the first time in a row (see _aim.py)."""
    element = getattr(planned, "element", None)
    if element is None:
        return (0, 0)
    component = observation.component(element)
    point, box = click_point(observation.image, component), component.box
    if planned.cell is not None and component.grid is not None:
        # the cell, not the whole sheet: typing in the cell next to it changes nothing here
        point, box = component.cell_point(planned.cell), cell_box(component.grid, planned.cell)
    part = area(point, box, observation.size)
    found = aim(observation.image, _grab(run, part), point, box)
    if found.changed and not run.refused_changed:
        run.refused_changed = True
        return None
    run.refused_changed = False
    return found.shift


def _changed(planned: Any) -> str:
    where = f"cell {planned.cell} of element" if planned.cell is not None else "element"
    return (
        f"not done: {where} {planned.element} no longer looks as it did on the screen you "
        "saw (the app was still drawing or moved it); look at the new screen and pick it "
        "again"
    )


def _learn(run: _Run, action: Any) -> None:
    """Remember the labelled component an action used, so the app's memory can name it
    next time without OCR. Not a checkbox or radio: its name is its caption's, and its
    own pixels look like every other box of its kind."""
    element = getattr(action, "element", None)
    memory = getattr(run.perception, "memory", None)
    remember = getattr(run.perception, "remember", None)
    if element is None or memory is None or not callable(remember) or run.observation is None:
        return
    component = run.observation.component(element)
    if component.kind in _CAPTIONED or not component.label:
        return
    if not memory.match(run.observation.image, [component]):
        remember(run.observation, element, component.label)


def _restore(callbacks: Sequence[Any], action: dict[str, Any]) -> dict[str, Any]:
    """Put back what a PII redactor masked, so the real value is typed."""
    for callback in callbacks:
        restore = getattr(callback, "restore", None)
        if callable(restore):
            action = restore(action)
    return action


# -- one step ---------------------------------------------------------------------------------


@agentic_function(input={"task": _HIDDEN, "feedback": _HIDDEN})
def gui_step(task: str, step: int, feedback: dict[str, Any] | None) -> dict[str, Any]:
    """One round: observe, verify the previous step, plan, gate done, dispatch."""
    run = _current()
    run.step = step
    leaf = run.leaves
    published = run.published
    _observed(run, leaf["observe"], leaf["observe"](step), published)
    if step > 1 and feedback is not None:
        verdict = leaf["verify_step"](task, feedback, step)
        run.verification = leaf_result("verify_step", leaf["verify_step"], verdict, is_dict)
    plan = leaf["plan_next_action"](task, step)
    leaf_result("plan_next_action", leaf["plan_next_action"], plan, is_plan)
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
    if result.get("screen_changed") is False:
        outcome["screen_changed"] = False  # nothing visible happened: verify should doubt it
    return {**outcome, "status": "acted", "success": True}


# -- the loop ---------------------------------------------------------------------------------


@agentic_function(
    input={
        "desktop": _HIDDEN,
        "app": _HIDDEN,
        "history_window": _HIDDEN,
        "context_tokens": _HIDDEN,
        "timeout_s": _HIDDEN,
        "policy": _HIDDEN,
        "max_image_width": _HIDDEN,
        "settle_timeout": _HIDDEN,
        "observe": _HIDDEN,
        "verify_step": _HIDDEN,
        "plan_next_action": _HIDDEN,
        "conclusion": _HIDDEN,
        "perception": _HIDDEN,
        "prompts": _HIDDEN,
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
    observe: Callable[..., Any] | None = None,
    verify_step: Callable[..., Any] | None = None,
    plan_next_action: Callable[..., Any] | None = None,
    conclusion: Callable[..., Any] | None = None,
    perception: Any = None,
    prompts: Prompts | None = None,
    context_tokens: int | None = None,
) -> GuiResult:
    """Do `task` on a desktop: observe, verify, plan and act until done or a limit.

    desktop: where to act; None starts a private VirtualDesktop (Xvfb) running `app`
        (an argv list) and closes it at the end.
    app: a name for the component memory (or the argv to start, see above).
    history_window: the planner sees only the last N steps. timeout_s: wall-clock limit.
    context_tokens: each plan prompt (system text, history, the prompt and the
        screenshot) fits this many tokens: older steps are summarised (the Runtime's
        compactor) or dropped, as render_range={"tokens": ...} does (DESIGN.md §4).
    observe, verify_step, plan_next_action, conclusion: your own agentic functions in
        place of the stock ones (gui_harness.leaves), with the same parameters; they
        reach the run through gui_harness.current_observation() and its neighbours.
    perception: what turns screenshots into observations (anything with
        perceive(image) -> Observation); default: Perception with the app's memory and
        the desktop's accessibility tree (AccessibilitySource), when it has one.
    prompts: the text of the stock leaves' model calls (default DEFAULT_PROMPTS).
    Returns a GuiResult; success only for a done the latest verification confirmed.
    Raises UsageError for a bad limit or a replacement that does not fit.
    """
    given = {
        "observe": observe,
        "verify_step": verify_step,
        "plan_next_action": plan_next_action,
        "conclusion": conclusion,
    }
    stock = {
        "observe": leaves.observe,
        "verify_step": leaves.verify_step,
        "plan_next_action": leaves.plan_next_action,
        "conclusion": leaves.conclusion,
    }
    chosen = {
        name: stock[name] if fn is None else check_leaf(name, fn) for name, fn in given.items()
    }
    if prompts is not None and not isinstance(prompts, Prompts):
        raise UsageError(f"prompts={prompts!r} must be a gui_harness.Prompts (or None)")
    if max_steps < 1:
        raise UsageError(f"max_steps={max_steps!r} must be at least 1")
    if history_window is not None and history_window < 0:
        raise UsageError(f"history_window={history_window!r} must be >= 0 or None")
    if context_tokens is not None and (
        not isinstance(context_tokens, int)
        or isinstance(context_tokens, bool)
        or context_tokens < 1
    ):
        raise UsageError(f"context_tokens={context_tokens!r} must be an int >= 1 or None")
    memory_name = app if isinstance(app, str) else (Path(app[0]).name if app else None)
    if perception is not None:
        check_perception(perception)
    owned = None
    if desktop is None:
        from gui_harness.desktop.virtual import VirtualDesktop

        apps = [list(app)] if app is not None and not isinstance(app, str) else []
        owned = desktop = VirtualDesktop(apps=apps)
        owned.start()  # stops whatever it started if it fails
    accessibility = owned_perception = None
    try:
        if perception is None:
            accessibility = _accessibility(desktop)
            perception = owned_perception = Perception(
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
            prompts=prompts or DEFAULT_PROMPTS,
            context_tokens=context_tokens,
            leaves=chosen,
        )
        token = _run.set(run)
        try:
            with _early_frames(run):
                return _loop(run, task, max_steps, timeout_s)
        finally:
            _run.reset(token)
    finally:
        if owned_perception is not None:
            owned_perception.close()
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
    # where its windows are and how they stack: the tree's boxes placed and cut by them
    windows = getattr(desktop, "visible_windows", None)
    if windows is None and hasattr(type(desktop), "desktop"):  # a VirtualDesktop's X11Desktop
        virtual: Any = desktop  # its X11Desktop exists once it is started
        windows = lambda: virtual.desktop.visible_windows()  # noqa: E731
    return AccessibilitySource(address, screen=desktop.size, note=note, windows=windows)


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
        except RunWaiting as exc:  # an ask_user (the policy's confirm hook) needs an answer
            stop, detail = "waiting", exc.reason
            if frame is not None:  # recorded `waiting`: a resumed run goes on from this step
                frame.meta["waiting_on"] = getattr(exc.question, "id", None) or "?"
            break
        except RunStopped as exc:
            stop, detail = "stopped", exc.reason
            break
        except (ModelAuthError, DesktopAuthError) as exc:  # retrying cannot help
            stop, detail = "error", str(exc)
            break
        except (ModelError, DesktopError) as exc:
            errors += 1
            problem = f"{type(exc).__name__}: {cut(str(exc))}"
            feedback = {"step": step, "status": "error", "error": problem}
            run.outcome = feedback
            steps.append(feedback)
            if errors >= _MAX_CONSECUTIVE_ERRORS:
                stop, detail = "error", f"{errors} errors in a row, last: {cut(str(exc))}"
                break
            continue
        errors = 0
        steps.append(outcome)
        feedback = run.outcome = outcome
        if outcome["status"] == "done":
            stop, detail, success = "done", outcome["action"].get("reason") or None, True
            break
        if outcome["status"] == "fail":
            stop, detail = "fail", outcome.get("error")
            break
    unreleased = _release_held(run.desktop)
    if unreleased is not None:
        detail = f"{detail}; {unreleased}" if detail else unreleased
    if frame is not None and stop in ("stopped", "error", "waiting"):
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
    result.bind_run(current_session().dag, frame.id if frame is not None else None)
    return result


def _conclude(run: _Run, task: str, stop: str, detail: str | None) -> str:
    outcome = stop if not detail else f"{stop}: {detail}"
    if stop in ("stopped", "error", "waiting"):
        return f"The run ended early ({outcome}); no conclusion was asked of the model."
    leaf = run.leaves["conclusion"]
    try:
        return leaf_result("conclusion", leaf, leaf(task, outcome), is_str)
    except (ModelError, RunStopped, DesktopError) as exc:
        return f"The run ended ({outcome}); the conclusion failed: {exc}"


def _usage_since(runtime: Runtime, before: Any) -> Any:
    from openprogram.core.usage import Usage

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
