"""The built-in tools: bash (an operation run in the sandbox) and view_image.

`bash` describes a command as a "bash" operation (effect once, sandbox: ProcessOperations
unless the Runtime names another manager) whose output is bounded and whose time is
limited. `view_image_tool(allowed)` lets a model look at image files inside folders a
person allowed (use_skill is skills.py's). Start at bash().
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from openprogram.agentic.function import agentic_function
from openprogram.core.image import Image
from openprogram.echo import elide
from openprogram.errors import UsageError
from openprogram.operations._command import Command
from openprogram.operations.operation import Operation, OperationContext, operation_kind
from openprogram.operations.tool import operation_tool

__all__ = ["BASH_OUTPUT_LIMIT", "bash", "view_image_tool"]

BASH_OUTPUT_LIMIT = 30_000
"""Characters of a command's output (stdout and stderr together) the model gets; a
longer output keeps its start and its end."""
_KEEP = BASH_OUTPUT_LIMIT * 2  # bytes held of each end while a command runs


def _bash_time_limit(args: dict[str, Any]) -> float:
    return float(args.get("timeout_s", 120))


@operation_kind("bash", version=1, effect="once", sandbox=True, time_limit=_bash_time_limit)
def run_bash(args: dict[str, Any], context: OperationContext) -> dict[str, Any]:
    """Run `args["command"]` with bash in `args["cwd"]` (default: the current folder) for
    at most `args["timeout_s"]` seconds: {"exit_code", "output", "timed_out"}. What the
    command starts (in the background, under `setsid`) runs at most as long: it is held
    in one process tree (_reaper.py) and killed with it."""
    timeout_s = float(args.get("timeout_s", 120))
    command = Command(
        ["bash", "-c", str(args["command"])], cwd=args.get("cwd") or None, limit_s=timeout_s
    )
    head = bytearray()
    tail = bytearray()
    total = [0]

    def read() -> None:  # until every process holding the output has closed it
        assert command.stdout is not None
        with command.stdout:
            while chunk := command.stdout.read1(65536):  # type: ignore[attr-defined]
                total[0] += len(chunk)
                if len(head) < _KEEP:
                    take = _KEEP - len(head)
                    head.extend(chunk[:take])
                    chunk = chunk[take:]
                tail.extend(chunk)
                del tail[:-_KEEP]

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    timed_out = cancelled = False
    while not command.wait(0.05):
        if context.cancelled.is_set():
            cancelled = True
        elif time.monotonic() >= command.deadline:
            timed_out = True
        if cancelled or timed_out:
            command.kill()
            break
        context.heartbeat(every_s=2.0)
    command.release()  # what it left in the background runs on until the time limit
    reader.join(timeout=5)  # a background process may hold the output open
    context.check()
    raw = bytes(head) + (b"" if total[0] <= len(head) + len(tail) else b"\n...\n") + bytes(tail)
    output = elide(raw.decode("utf-8", "replace"), BASH_OUTPUT_LIMIT)
    return {
        "exit_code": None if timed_out else command.exit_code,
        "output": output,
        "timed_out": timed_out,
    }


@operation_tool
def bash(command: str, timeout_s: float = 120.0) -> Operation | str:
    """Run a shell command with bash; its exit code and output (long output is cut in the
    middle). The command runs at most timeout_s seconds."""
    if not command.strip():
        return "error: the command is empty; give a shell command"
    if not 0 < timeout_s <= 3600:
        return f"error: timeout_s={timeout_s!r} must be more than 0 and at most 3600 seconds"
    return Operation("bash", {"command": command, "timeout_s": timeout_s})


# -- view_image ------------------------------------------------------------------------
_IMAGE_BYTES = 20 << 20


def view_image_tool(allowed: Sequence[str | os.PathLike[str]]) -> Callable[..., Any]:
    """A `view_image(path)` tool: the image file at `path`, inside one of the `allowed`
    folders (after symbolic links are resolved), becomes an image value recorded like
    any image. A path outside them, or not an image, is an error the model is told."""
    folders = [Path(folder).resolve() for folder in allowed]
    if not folders:
        raise UsageError("view_image_tool(allowed=[...]) needs at least one folder")
    for folder in folders:
        if not folder.is_dir():
            raise UsageError(f"view_image_tool: {str(folder)!r} is not a folder")

    @agentic_function
    def view_image(path: str) -> Image:
        """Look at an image file: a path to a PNG, JPEG, GIF or WebP file on disk."""
        resolved = Path(path).expanduser().resolve()
        if not any(resolved.is_relative_to(folder) for folder in folders):
            raise PermissionError(
                f"{path!r} is outside the folders this tool may read: {[str(f) for f in folders]!r}"
            )
        if not resolved.is_file():
            raise FileNotFoundError(f"there is no file {path!r}")
        if resolved.stat().st_size > _IMAGE_BYTES:
            raise ValueError(f"{path!r} is larger than {_IMAGE_BYTES >> 20} MiB")
        try:
            return Image(resolved)
        except UsageError as exc:  # not an image: the model is told, the loop goes on
            raise ValueError(str(exc)) from None

    return view_image
