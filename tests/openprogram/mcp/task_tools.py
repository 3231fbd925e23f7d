"""Background tools served as MCP Tasks by the tasks tests (importable by a served child)."""

from __future__ import annotations

from openprogram.operations import Operation, operation_tool
from tests.openprogram.operations import kinds  # noqa: F401 - registers the kinds


@operation_tool(background=True)
def build(file: str) -> Operation:
    """Build something: works until the file exists (effect="once")."""
    return Operation("test.block", {"file": file})


@operation_tool(background=True)
def rebuild(file: str) -> Operation:
    """Build something safe to build again: works until the file exists."""
    return Operation("test.block_again", {"file": file})
