"""The public API: the names openprogram and gui_harness export, pinned as written.

A name added, removed or renamed at either package root fails here first (httpx keeps
such a list). openprogram resolves its names on first use (PEP 562): a bare import loads
none of them, and each one of the list resolves.
"""

from __future__ import annotations

import subprocess
import sys

import gui_harness
import openprogram

OPENPROGRAM = [
    "agentic_function",
    "Session",
    "current_session",
    "current_frame",
    "start_thread",
    "idempotency_key",
    "Store",
    "ContextDAG",
    "Node",
    "Expose",
    "Effect",
    "RenderRange",
    "Image",
    "ImageRef",
    "render_context",
    "RenderedContext",
    "summarize_history",
    "count_tokens",
    "Runtime",
    "llm",
    "allm",
    "current_runtime",
    "Model",
    "ModelRequest",
    "ModelReply",
    "ScriptedModel",
    "ReplayModel",
    "ToolCall",
    "TextStream",
    "AsyncTextStream",
    "Usage",
    "Operation",
    "OperationRecord",
    "operation_kind",
    "operation_tool",
    "operation_tools",
    "settle_operation",
    "LocalOperations",
    "ProcessOperations",
    "RayOperations",
    "bash",
    "view_image_tool",
    "skills_tool",
    "ask_user",
    "ConsoleAsk",
    "Question",
    "needs_approval",
    "Callback",
    "BudgetManager",
    "SharedBudget",
    "ImageRetention",
    "PIIRedactor",
    "RateLimit",
    "TrajectorySaver",
    "LoggingCallback",
    "OpenProgramError",
    "UsageError",
    "ConfigError",
    "RunError",
    "ModelError",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelUnavailable",
    "ModelOutputError",
    "ScriptExhausted",
    "ReplayMismatch",
    "StoreError",
    "UnsupportedFormatVersion",
    "SessionLocked",
    "StoreDamaged",
    "ResumeDivergence",
    "EffectUnknown",
    "AlreadySettled",
    "UnsupportedOperation",
    "OperationFailed",
    "RunStopped",
    "BudgetExceeded",
    "RunWaiting",
]

GUI_HARNESS = [
    "gui_agent",
    "GuiResult",
    "StopReason",
    "gui_step",
    "observe",
    "verify_step",
    "plan_next_action",
    "dispatch_action",
    "conclusion",
    "current_observation",
    "observe_screen",
    "look",
    "ask_for_action",
    "latest_outcome",
    "latest_verification",
    "current_prompts",
    "Prompts",
    "Desktop",
    "VirtualDesktop",
    "App",
    "X11Desktop",
    "FakeDesktop",
    "RemoteDesktop",
    "serve_desktop",
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
    "Perception",
    "Observation",
    "ComponentMemory",
    "AccessibilitySource",
    "InvalidAction",
    "ActionRejected",
    "DesktopError",
    "DesktopTimeout",
    "DesktopAuthError",
]


def test_openprogram_exports_exactly_the_pinned_names() -> None:
    assert openprogram.__all__ == OPENPROGRAM
    for name in OPENPROGRAM:
        assert getattr(openprogram, name) is not None, name


def test_gui_harness_exports_exactly_the_pinned_names() -> None:
    assert gui_harness.__all__ == GUI_HARNESS
    for name in GUI_HARNESS:
        assert getattr(gui_harness, name) is not None, name


def test_every_public_name_has_one_home_module() -> None:
    assert sorted(openprogram._HOMES) == sorted(OPENPROGRAM)
    for name, home in openprogram._HOMES.items():
        assert getattr(__import__(home, fromlist=[name]), name) is getattr(openprogram, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        openprogram.no_such_name  # noqa: B018 - the lookup is the test
    except AttributeError as error:
        assert "no_such_name" in str(error)
    else:
        raise AssertionError("openprogram.no_such_name resolved")


def test_importing_openprogram_loads_no_heavy_dependency() -> None:
    """`import openprogram` alone imports neither networkx, pydantic nor litellm; the
    first name looked up loads what it needs, and networkx waits for a graph."""
    code = (
        "import sys, openprogram\n"
        "print(sorted(m for m in ('networkx', 'pydantic', 'litellm') if m in sys.modules))\n"
        "from openprogram import Session\n"
        "print('networkx' in sys.modules)\n"
        "Session().dag.graph\n"
        "print('networkx' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split("\n")[:3] == ["[]", "False", "True"]


def test_a_name_looked_up_loads_its_home_and_the_notebook_views_wait_for_a_view() -> None:
    """An error class costs its own module only (neither pydantic nor the notebook
    views); the views load when a notebook first shows a DAG, with nothing else imported
    for them."""
    code = (
        "import sys\n"
        "from openprogram import OpenProgramError\n"
        "print(sorted(m for m in ('pydantic', 'openprogram.display') if m in sys.modules))\n"
        "from openprogram import Session\n"
        "print('openprogram.display' in sys.modules)\n"
        "page = Session().dag._repr_html_()\n"
        "print('openprogram.display' in sys.modules, page.startswith('<pre>'), len(page) > 1000)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split("\n")[:3] == ["[]", "False", "True False True"]


def test_a_function_recorded_with_no_session_lands_in_the_process_default():
    """A notebook's first cell imports only the decorator: the default session is made
    by the session layer on first need, though a bare import loaded none of it."""
    code = (
        "from openprogram import agentic_function\n"
        "@agentic_function\n"
        "def double(x: int) -> int:\n"
        "    return 2 * x\n"
        "print(double(21))\n"
        "from openprogram import current_session\n"
        "print([n.name for n in current_session().dag.nodes])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert result.stdout.split("\n")[:2] == ["42", "['double']"]
