"""openprogram: agents as ordinary decorated functions, with a context DAG that shows
what every model call saw. Start with `agentic_function`, `llm` and `Session`.

The names below are imported on first use (PEP 562), so `import openprogram` costs a few
milliseconds and a script pays only for what it touches; the notebook views
(openprogram.display) load the first time a notebook shows a DAG, a node, a context or a
call.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from openprogram import _wiring

if TYPE_CHECKING:
    from openprogram.agentic.ask import ConsoleAsk, ask_user, needs_approval
    from openprogram.agentic.function import agentic_function
    from openprogram.agentic.questions import Question
    from openprogram.agentic.threads import start_thread
    from openprogram.callbacks import (
        BudgetManager,
        Callback,
        ImageRetention,
        LoggingCallback,
        PIIRedactor,
        RateLimit,
        SharedBudget,
        TrajectorySaver,
    )
    from openprogram.core.dag import ContextDAG, Effect, Expose, Node, RenderRange
    from openprogram.core.image import Image, ImageRef
    from openprogram.core.usage import Usage
    from openprogram.errors import (
        AlreadySettled,
        BudgetExceeded,
        ConfigError,
        EffectUnknown,
        ModelAuthError,
        ModelBadRequest,
        ModelError,
        ModelOutputError,
        ModelUnavailable,
        OpenProgramError,
        OperationFailed,
        ReplayMismatch,
        ResumeDivergence,
        RunError,
        RunStopped,
        RunWaiting,
        ScriptExhausted,
        SessionLocked,
        StoreDamaged,
        StoreError,
        UnsupportedFormatVersion,
        UnsupportedOperation,
        UsageError,
    )
    from openprogram.models.model import Model, ModelReply, ModelRequest, ScriptedModel, ToolCall
    from openprogram.operations import (
        LocalOperations,
        Operation,
        OperationRecord,
        ProcessOperations,
        RayOperations,
        bash,
        operation_kind,
        operation_tool,
        operation_tools,
        settle_operation,
        skills_tool,
        view_image_tool,
    )
    from openprogram.render.render import RenderedContext, render_context
    from openprogram.runtime.ambient import allm, llm
    from openprogram.runtime.compaction import count_tokens, summarize_history
    from openprogram.runtime.runtime import Runtime, current_runtime
    from openprogram.runtime.streaming import AsyncTextStream, TextStream
    from openprogram.session.effects import idempotency_key
    from openprogram.session.replay import ReplayModel
    from openprogram.session.session import Session, current_frame, current_session
    from openprogram.store import Store

__all__ = [
    # recording
    "agentic_function",
    "Session",
    "current_session",
    "current_frame",
    "start_thread",
    "idempotency_key",
    "Store",
    # the DAG
    "ContextDAG",
    "Node",
    "Expose",
    "Effect",
    "RenderRange",
    "Image",
    "ImageRef",
    # what a call sees
    "render_context",
    "RenderedContext",
    "summarize_history",
    "count_tokens",
    # models
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
    # operations (docs/operations.md)
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
    # human in the loop
    "ask_user",
    "ConsoleAsk",
    "Question",
    "needs_approval",
    # callbacks
    "Callback",
    "BudgetManager",
    "SharedBudget",
    "ImageRetention",
    "PIIRedactor",
    "RateLimit",
    "TrajectorySaver",
    "LoggingCallback",
    # errors
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

# where each public name lives (a test checks this table against __all__)
_HOMES: dict[str, str] = {
    "ConsoleAsk": "openprogram.agentic.ask",
    "ask_user": "openprogram.agentic.ask",
    "needs_approval": "openprogram.agentic.ask",
    "agentic_function": "openprogram.agentic.function",
    "Question": "openprogram.agentic.questions",
    "start_thread": "openprogram.agentic.threads",
    "BudgetManager": "openprogram.callbacks",
    "Callback": "openprogram.callbacks",
    "ImageRetention": "openprogram.callbacks",
    "LoggingCallback": "openprogram.callbacks",
    "PIIRedactor": "openprogram.callbacks",
    "RateLimit": "openprogram.callbacks",
    "SharedBudget": "openprogram.callbacks",
    "TrajectorySaver": "openprogram.callbacks",
    "ContextDAG": "openprogram.core.dag",
    "Effect": "openprogram.core.dag",
    "Expose": "openprogram.core.dag",
    "Node": "openprogram.core.dag",
    "RenderRange": "openprogram.core.dag",
    "Image": "openprogram.core.image",
    "ImageRef": "openprogram.core.image",
    "Usage": "openprogram.core.usage",
    "AlreadySettled": "openprogram.errors",
    "BudgetExceeded": "openprogram.errors",
    "ConfigError": "openprogram.errors",
    "EffectUnknown": "openprogram.errors",
    "ModelAuthError": "openprogram.errors",
    "ModelBadRequest": "openprogram.errors",
    "ModelError": "openprogram.errors",
    "ModelOutputError": "openprogram.errors",
    "ModelUnavailable": "openprogram.errors",
    "OpenProgramError": "openprogram.errors",
    "OperationFailed": "openprogram.errors",
    "ReplayMismatch": "openprogram.errors",
    "ResumeDivergence": "openprogram.errors",
    "RunError": "openprogram.errors",
    "RunStopped": "openprogram.errors",
    "RunWaiting": "openprogram.errors",
    "ScriptExhausted": "openprogram.errors",
    "SessionLocked": "openprogram.errors",
    "StoreDamaged": "openprogram.errors",
    "StoreError": "openprogram.errors",
    "UnsupportedFormatVersion": "openprogram.errors",
    "UnsupportedOperation": "openprogram.errors",
    "UsageError": "openprogram.errors",
    "Model": "openprogram.models.model",
    "ModelReply": "openprogram.models.model",
    "ModelRequest": "openprogram.models.model",
    "ScriptedModel": "openprogram.models.model",
    "ToolCall": "openprogram.models.model",
    "LocalOperations": "openprogram.operations",
    "Operation": "openprogram.operations",
    "OperationRecord": "openprogram.operations",
    "ProcessOperations": "openprogram.operations",
    "RayOperations": "openprogram.operations",
    "bash": "openprogram.operations",
    "operation_kind": "openprogram.operations",
    "operation_tool": "openprogram.operations",
    "operation_tools": "openprogram.operations",
    "settle_operation": "openprogram.operations",
    "skills_tool": "openprogram.operations",
    "view_image_tool": "openprogram.operations",
    "RenderedContext": "openprogram.render.render",
    "render_context": "openprogram.render.render",
    "count_tokens": "openprogram.runtime.compaction",
    "summarize_history": "openprogram.runtime.compaction",
    "Runtime": "openprogram.runtime.runtime",
    "allm": "openprogram.runtime.ambient",
    "current_runtime": "openprogram.runtime.runtime",
    "llm": "openprogram.runtime.ambient",
    "AsyncTextStream": "openprogram.runtime.streaming",
    "TextStream": "openprogram.runtime.streaming",
    "idempotency_key": "openprogram.session.effects",
    "ReplayModel": "openprogram.session.replay",
    "Session": "openprogram.session.session",
    "current_frame": "openprogram.session.session",
    "current_session": "openprogram.session.session",
    "Store": "openprogram.store",
}


def _default_session() -> Any:
    from openprogram.session.session import Session

    return Session()


def _default_runtime() -> Any:
    from openprogram.runtime.runtime import Runtime

    return Runtime()


def _load_views() -> Any:
    return importlib.import_module("openprogram.display")  # it registers the notebook views


# the process defaults a call falls back on, made by layers the ones below cannot import,
# and the notebook views, which the data they draw (core/node.py) loads when first shown
_wiring.provide("session", _default_session)
_wiring.provide("runtime", _default_runtime)
_wiring.provide("views", _load_views)


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'openprogram' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
