"""openprogram: agents as ordinary decorated functions, with a context DAG that shows
what every model call saw. Start with `agentic_function`, `llm` and `Session`."""

from openprogram import display as _views  # noqa: F401 - registers the notebook views
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
    SharedBudget,
    TrajectorySaver,
)
from openprogram.core.dag import ContextDAG, Effect, Expose, Node, RenderRange
from openprogram.core.image import Image, ImageRef
from openprogram.core.usage import Usage
from openprogram.errors import (
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
from openprogram.runtime.compaction import count_tokens, summarize_history
from openprogram.runtime.runtime import Runtime, allm, current_runtime, llm
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
    "UnsupportedOperation",
    "OperationFailed",
    "RunStopped",
    "BudgetExceeded",
    "RunWaiting",
]
