"""Operations: tool calls as durable, versioned work run by a replaceable manager.

operation.py (Operation, kinds), manager.py (the protocol, LocalOperations), process.py
(ProcessOperations, the sandbox), ray.py (RayOperations), tracker.py (states, recorded;
_records.py: stored rows and live records),
tool.py (operation_tool and the background tools), builtins.py (bash, view_image),
skills.py (use_skill). docs/operations.md explains them.
"""

from openprogram.operations.builtins import bash, view_image_tool
from openprogram.operations.manager import LocalOperations, OperationManager
from openprogram.operations.operation import (
    Operation,
    OperationCancelled,
    OperationContext,
    OperationKind,
    OperationRecord,
    OperationState,
    operation_kind,
)
from openprogram.operations.process import ProcessOperations
from openprogram.operations.ray import RayOperations
from openprogram.operations.skills import read_skills, skills_tool
from openprogram.operations.tool import (
    operation_tool,
    operation_tools,
    session_operations,
    settle_operation,
)

__all__ = [
    "LocalOperations",
    "Operation",
    "OperationCancelled",
    "OperationContext",
    "OperationKind",
    "OperationManager",
    "OperationRecord",
    "OperationState",
    "ProcessOperations",
    "RayOperations",
    "bash",
    "operation_kind",
    "operation_tool",
    "operation_tools",
    "read_skills",
    "session_operations",
    "settle_operation",
    "skills_tool",
    "view_image_tool",
]
