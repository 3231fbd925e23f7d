"""Lifecycle callbacks: the base class and the built-ins (DESIGN.md §7).

`OtelCallback` lives in `openprogram.callbacks.otel` and is loaded on first use, so the
core imports without OpenTelemetry.
"""

from typing import Any

from openprogram.callbacks.base import Callback, current_run, gate, notify, transform
from openprogram.callbacks.budget import BudgetManager
from openprogram.callbacks.budget_shared import BudgetTally, SharedBudget
from openprogram.callbacks.images import ImageRetention
from openprogram.callbacks.logging import LoggingCallback
from openprogram.callbacks.pii import PIIRedactor
from openprogram.callbacks.rate import RateLimit
from openprogram.callbacks.trajectory import TrajectorySaver

__all__ = [
    "BudgetManager",
    "BudgetTally",
    "Callback",
    "ImageRetention",
    "LoggingCallback",
    "PIIRedactor",
    "RateLimit",
    "SharedBudget",
    "TrajectorySaver",
    "current_run",
    "gate",
    "notify",
    "transform",
]


def __getattr__(name: str) -> Any:
    # OtelCallback is left out of __all__ so `import *` never needs the otel extra.
    if name == "OtelCallback":
        from openprogram.callbacks.otel import OtelCallback

        return OtelCallback
    raise AttributeError(f"module 'openprogram.callbacks' has no attribute {name!r}")
