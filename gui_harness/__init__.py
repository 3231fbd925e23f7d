"""gui_harness: the GUI agent built on openprogram. Start with `gui_agent(task)`.

The names below are imported on first use (PEP 562), as openprogram's are: a process that
needs one part (the demo app, a desktop server, a batch worker) does not load the agent,
perception and OpenCV with it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gui_harness.actions import (
        Action,
        Click,
        Done,
        DoubleClick,
        Drag,
        Fail,
        KeyDown,
        Keypress,
        KeyUp,
        MouseDown,
        MouseUp,
        Move,
        Policy,
        Scroll,
        Transform,
        TripleClick,
        Type,
        Wait,
        resolve,
    )
    from gui_harness.agent import (
        conclusion,
        dispatch_action,
        gui_agent,
        gui_step,
        observe,
        plan_next_action,
        verify_step,
    )
    from gui_harness.current import (
        ask_for_action,
        current_observation,
        current_prompts,
        latest_outcome,
        latest_verification,
        look,
        observe_screen,
    )
    from gui_harness.desktop.base import Desktop
    from gui_harness.desktop.fake import FakeDesktop
    from gui_harness.desktop.remote import RemoteDesktop
    from gui_harness.desktop.server import serve_desktop
    from gui_harness.desktop.virtual import App, VirtualDesktop
    from gui_harness.desktop.x11 import X11Desktop
    from gui_harness.errors import (
        ActionRejected,
        DesktopAuthError,
        DesktopError,
        DesktopTimeout,
        InvalidAction,
    )
    from gui_harness.normalize import normalize_action
    from gui_harness.perception import AccessibilitySource, ComponentMemory, Observation, Perception
    from gui_harness.prompts import Prompts
    from gui_harness.result import GuiResult, StopReason

_HOMES: dict[str, str] = {
    "Action": "gui_harness.actions",
    "Click": "gui_harness.actions",
    "Done": "gui_harness.actions",
    "DoubleClick": "gui_harness.actions",
    "Drag": "gui_harness.actions",
    "Fail": "gui_harness.actions",
    "KeyDown": "gui_harness.actions",
    "Keypress": "gui_harness.actions",
    "KeyUp": "gui_harness.actions",
    "MouseDown": "gui_harness.actions",
    "MouseUp": "gui_harness.actions",
    "Move": "gui_harness.actions",
    "Policy": "gui_harness.actions",
    "Scroll": "gui_harness.actions",
    "Transform": "gui_harness.actions",
    "TripleClick": "gui_harness.actions",
    "Type": "gui_harness.actions",
    "Wait": "gui_harness.actions",
    "resolve": "gui_harness.actions",
    "conclusion": "gui_harness.agent",
    "dispatch_action": "gui_harness.agent",
    "gui_agent": "gui_harness.agent",
    "gui_step": "gui_harness.agent",
    "observe": "gui_harness.agent",
    "plan_next_action": "gui_harness.agent",
    "verify_step": "gui_harness.agent",
    "ask_for_action": "gui_harness.current",
    "current_observation": "gui_harness.current",
    "current_prompts": "gui_harness.current",
    "latest_outcome": "gui_harness.current",
    "latest_verification": "gui_harness.current",
    "look": "gui_harness.current",
    "observe_screen": "gui_harness.current",
    "Desktop": "gui_harness.desktop.base",
    "FakeDesktop": "gui_harness.desktop.fake",
    "RemoteDesktop": "gui_harness.desktop.remote",
    "serve_desktop": "gui_harness.desktop.server",
    "App": "gui_harness.desktop.virtual",
    "VirtualDesktop": "gui_harness.desktop.virtual",
    "X11Desktop": "gui_harness.desktop.x11",
    "ActionRejected": "gui_harness.errors",
    "DesktopAuthError": "gui_harness.errors",
    "DesktopError": "gui_harness.errors",
    "DesktopTimeout": "gui_harness.errors",
    "InvalidAction": "gui_harness.errors",
    "normalize_action": "gui_harness.normalize",
    "AccessibilitySource": "gui_harness.perception",
    "ComponentMemory": "gui_harness.perception",
    "Observation": "gui_harness.perception",
    "Perception": "gui_harness.perception",
    "Prompts": "gui_harness.prompts",
    "GuiResult": "gui_harness.result",
    "StopReason": "gui_harness.result",
}

__all__ = [
    # the agent
    "gui_agent",
    "GuiResult",
    "StopReason",
    "gui_step",
    "observe",
    "verify_step",
    "plan_next_action",
    "dispatch_action",
    "conclusion",
    # writing your own leaves
    "current_observation",
    "observe_screen",
    "look",
    "ask_for_action",
    "latest_outcome",
    "latest_verification",
    "current_prompts",
    "Prompts",
    # desktops
    "Desktop",
    "VirtualDesktop",
    "App",
    "X11Desktop",
    "FakeDesktop",
    "RemoteDesktop",
    "serve_desktop",
    # actions
    "Action",
    "Click",
    "DoubleClick",
    "TripleClick",
    "MouseDown",
    "MouseUp",
    "Move",
    "Drag",
    "Scroll",
    "Type",
    "Keypress",
    "KeyDown",
    "KeyUp",
    "Wait",
    "Done",
    "Fail",
    "normalize_action",
    "resolve",
    "Transform",
    "Policy",
    # perception
    "Perception",
    "Observation",
    "ComponentMemory",
    "AccessibilitySource",
    # errors
    "InvalidAction",
    "ActionRejected",
    "DesktopError",
    "DesktopTimeout",
    "DesktopAuthError",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'gui_harness' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
