"""Background tools served as MCP Tasks by the tasks tests (importable by a served child)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from openprogram.operations import Operation, OperationContext, operation_kind, operation_tool
from tests.openprogram.operations import kinds  # noqa: F401 - registers the kinds


@operation_tool(background=True)
def build(file: str) -> Operation:
    """Build something: works until the file exists (effect="once")."""
    return Operation("test.block", {"file": file})


@operation_tool(background=True)
def rebuild(file: str) -> Operation:
    """Build something safe to build again: works until the file exists."""
    return Operation("test.block_again", {"file": file})


@operation_kind("test.wait_file", effect="idempotent")
def wait_file(args: dict[str, Any], context: OperationContext) -> str:
    """Wait until args["file"] exists (or the operation is cancelled), quietly."""
    while not Path(args["file"]).exists():
        context.heartbeat()
        if context.cancelled.wait(0.05):
            context.check()
    return "released"


@operation_tool(background=True)
def hold(file: str) -> Operation:
    """Work until the file exists."""
    return Operation("test.wait_file", {"file": file})


@operation_tool(background=True)
def quick(value: str) -> Operation:
    """Answer at once."""
    return Operation("test.noop", {"value": value})
