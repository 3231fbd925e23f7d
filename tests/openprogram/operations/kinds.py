"""Operation kinds the operations tests run (importable by a sandbox process too)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from openprogram.operations import OperationContext, operation_kind


@operation_kind("test.noop", effect="idempotent")
def noop(args: dict[str, Any], context: OperationContext) -> Any:
    return args.get("value")


@operation_kind("test.add", effect="idempotent")
def add(args: dict[str, Any], context: OperationContext) -> int:
    return int(args["a"]) + int(args["b"])


@operation_kind("test.fail", effect="idempotent")
def fail(args: dict[str, Any], context: OperationContext) -> None:
    raise RuntimeError(args.get("why", "it failed"))


@operation_kind("test.pid", effect="idempotent")
def pid(args: dict[str, Any], context: OperationContext) -> int:
    return os.getpid()


@operation_kind("test.append", effect="idempotent")
def append(args: dict[str, Any], context: OperationContext) -> str:
    """Log a start and an end line to args["log"]; sleep args["sleep_s"] in between."""
    log = Path(args["log"])
    with log.open("a") as file:
        file.write(f"start {args['name']}\n")
    time.sleep(float(args.get("sleep_s", 0)))
    with log.open("a") as file:
        file.write(f"end {args['name']}\n")
    return str(args["name"])


@operation_kind("test.append_once", effect="once")
def append_once(args: dict[str, Any], context: OperationContext) -> str:
    return append(args, context)


_gates: dict[str, threading.Event] = {}


@operation_kind("test.block", effect="once")
def block(args: dict[str, Any], context: OperationContext) -> str:
    """Heartbeat until cancelled, or until args["file"] exists."""
    while not context.cancelled.is_set():
        context.heartbeat("waiting", every_s=0.0)
        if "file" in args and Path(args["file"]).exists():
            return "released"
        context.cancelled.wait(0.01)
    context.check()
    return "never"


@operation_kind("test.block_again", effect="idempotent")
def block_again(args: dict[str, Any], context: OperationContext) -> str:
    """test.block, safe to run again: a process that dies while it runs has it rerun."""
    return block(args, context)


@operation_kind("test.overrun", effect="once", time_limit=lambda args: float(args["limit_s"]))
def overrun(args: dict[str, Any], context: OperationContext) -> str:
    """Promise args["limit_s"] seconds, then heartbeat on for ever (a hung executor that
    looks alive)."""
    while True:
        context.heartbeat("still here", every_s=0.0)
        time.sleep(0.05)
