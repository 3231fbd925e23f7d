"""The replaceable parts of gui_agent, checked at the call.

Owns `LEAVES` (how the loop calls each leaf it lets the user replace, and what each
returns), `check_leaf()` (a replacement is an agentic, synchronous function named and
called as the stock one), `check_perception()`, and `leaf_result()` with its checks
(`is_str`, `is_dict`, `is_plan`) on what a leaf returned. agent.py's loop uses them.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeGuard, TypeVar

from openprogram.errors import UsageError

__all__ = [
    "LEAVES",
    "check_leaf",
    "check_perception",
    "expected",
    "is_dict",
    "is_plan",
    "is_str",
    "leaf_result",
]

T = TypeVar("T")

# the replaceable leaves: how the loop calls each, and what each returns
LEAVES: dict[str, tuple[tuple[str, ...], str]] = {
    "observe": (("step",), "dict (e.g. observe_screen(step))"),
    "verify_step": (("task", "previous", "step"), "dict (e.g. Verification.model_dump())"),
    "plan_next_action": (("task", "step"), 'dict {"goal", "action"} (e.g. ask_for_action(...))'),
    "conclusion": (("task", "outcome"), "str"),
}


def expected(name: str) -> str:
    params, returns = LEAVES[name]
    return f"@agentic_function def {name}({', '.join(params)}) -> {returns}"


def check_leaf(name: str, fn: object) -> Callable[..., Any]:
    """The user's replacement for leaf `name`, checked: an agentic, synchronous function
    the loop can call as it calls the stock one. UsageError otherwise."""
    if not callable(fn):
        raise UsageError(f"{name}={fn!r} is not a function; pass one like {expected(name)}")
    label = getattr(fn, "__qualname__", repr(fn))
    if not getattr(fn, "__agentic__", False):
        raise UsageError(
            f"{name}={label} is not an agentic function: decorate it with @agentic_function "
            f"so its calls are recorded and later steps see them; expected {expected(name)}"
        )
    if inspect.iscoroutinefunction(inspect.unwrap(fn)):
        raise UsageError(
            f"{name}={label} is async, but gui_agent calls its leaves synchronously: write it "
            f"with def and llm(); expected {expected(name)}"
        )
    params = LEAVES[name][0]
    signature = inspect.signature(fn)
    names = [p for p in signature.parameters if p != "runtime"][: len(params)]
    try:
        signature.bind(*params)
    except TypeError as exc:
        raise UsageError(
            f"{name}={label}{signature} cannot be called as gui_agent calls it, "
            f"{name}({', '.join(params)}): {exc}; expected {expected(name)}"
        ) from None
    if tuple(names) != params:
        raise UsageError(
            f"{name}={label}{signature} names its parameters {tuple(names)!r}; gui_agent "
            f"records and passes {params!r}, so name them alike: {expected(name)}"
        )
    return fn


def check_perception(perception: Any) -> Any:
    if not callable(getattr(perception, "perceive", None)):
        raise UsageError(
            f"perception={perception!r} has no perceive(image) method; pass a "
            "gui_harness.Perception (or a subclass), or any object with "
            "perceive(image) -> gui_harness.Observation"
        )
    return perception


def leaf_result(name: str, fn: object, value: object, check: Callable[[object], TypeGuard[T]]) -> T:
    if not check(value):
        label = getattr(fn, "__qualname__", repr(fn))
        raise UsageError(f"{name}={label} returned {value!r}; it must return {LEAVES[name][1]}")
    return value


def is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def is_dict(value: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def is_plan(value: object) -> TypeGuard[dict[str, Any]]:
    if not isinstance(value, dict) or "action" not in value:
        return False
    action = value["action"]
    return (action is None and "error" in value) or (isinstance(action, dict) and "type" in action)
