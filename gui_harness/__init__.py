"""gui_harness: the GUI agent built on openprogram. Start with `gui_agent(task)`."""

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
