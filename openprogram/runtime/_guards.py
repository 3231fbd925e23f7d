"""Checks on how llm() is called: the model argument, stream options, a blocked event
loop, and where a call with no Session records.

Owns the rules and their messages; runtime.py applies them. A notebook cell (IPython's
kernel runs its own loop) is told apart from async code that blocks its loop. Start at
blocks_a_loop().
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys

from openprogram.agentic._resume import note_once
from openprogram.core.dag import Node
from openprogram.errors import UsageError

__all__ = [
    "BLOCKING",
    "TOP_LEVEL_NAME",
    "blocks_a_loop",
    "check_model",
    "check_stream",
    "note_default_session",
    "note_undecorated",
]

TOP_LEVEL_NAME = "main"
"""The name an llm node outside any agentic function is recorded under."""

BLOCKING = (
    "llm() was called while an asyncio event loop is running in this thread: the loop (and "
    "every task on it, e.g. calls under asyncio.gather) stands still until the reply "
    "arrives. In async code use `await allm(...)` instead."
)


def blocks_a_loop() -> bool:
    """Whether a blocking call here stops an event loop that has other work: True when a
    loop runs in this thread, unless this is a notebook cell run by IPython's kernel on
    its own loop (the cell owns the loop then; a task the cell started is not a cell)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no loop runs here: blocking is what the caller wants
        return False
    return not _kernel_cell(loop)


def _kernel_cell(loop: asyncio.AbstractEventLoop) -> bool:
    if "ipykernel" not in sys.modules or "IPython" not in sys.modules:
        return False
    shell = sys.modules["IPython"].get_ipython()
    io_loop = getattr(getattr(shell, "kernel", None), "io_loop", None)
    if getattr(io_loop, "asyncio_loop", None) is not loop:
        return False
    task = asyncio.current_task(loop)
    if task is None:
        return True
    module = getattr(getattr(task.get_coro(), "cr_frame", None), "f_globals", {}).get(
        "__name__", ""
    )
    return str(module).startswith(("ipykernel", "IPython"))


def check_model(model: object) -> None:
    """UsageError naming the fix when `model` is not a model string or a model object."""
    if model is None or isinstance(model, str):
        return
    if isinstance(model, type):
        raise UsageError(
            f"model={model.__name__} is a class; pass an instance, e.g. "
            f"Runtime({model.__name__}([...])) or Runtime(model='openai/gpt-4o-mini')"
        )
    if not callable(getattr(model, "complete", None)):
        raise UsageError(
            f"model={model!r:.80} is neither a litellm model string (e.g. 'openai/gpt-4o-mini') "
            "nor a model object with complete(request) (ScriptedModel, ReplayModel, or your own)"
        )


def check_stream(response_format: object) -> None:
    if response_format is not None:
        raise UsageError(
            "stream=True returns text chunks and does not combine with response_format=; "
            "use stream=False to get a validated instance"
        )


def note_default_session(frame: Node | None) -> None:
    """Say once per process where an llm() with no `with Session()` records, and how to
    scope it."""
    where = (
        f"inside {frame.name}()"
        if frame is not None
        else f"outside any @agentic_function (recorded as {TOP_LEVEL_NAME!r}, without the "
        "inputs of the function that called it)"
    )
    note_once(
        "default-session",
        "openprogram: llm() was called %s with no `with Session()`, so it records into the "
        "process-wide default session: in memory, lost at exit, shared by every such call "
        "(see it with openprogram.current_session().dag). To keep and scope a run, wrap it "
        "in `with Session('runs.db'):` and decorate the function that calls llm() with "
        "@agentic_function (said once)",
        where,
    )


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def note_undecorated() -> None:
    """Say once per function when llm() is called at the top level of a session from a
    plain (undecorated) function: its exchange is recorded as `main #k`, without the
    function's inputs, and reads the whole session instead of a range of its own."""
    caller = _user_function()
    if caller is None:
        return
    name, key = caller
    note_once(
        f"undecorated:{key}",
        "openprogram: llm() was called from %s() (not an @agentic_function), so the exchange "
        "is recorded as %r at the top level of the session, without the function's inputs, "
        "and sees the whole session's history (no expose or render_range of its own "
        "applies). Decorate %s with @agentic_function (said once per function)",
        name,
        TOP_LEVEL_NAME,
        name,
    )


def _user_function() -> tuple[str, str] | None:
    """The name, and a key, of the first function outside openprogram on the stack; None
    for module-level code, a lambda, a comprehension or a notebook cell."""
    here = inspect.currentframe()
    frame = here.f_back if here is not None else None
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back  # None ends the walk
    if frame is None or frame.f_code.co_name.startswith("<"):
        return None
    code = frame.f_code
    return code.co_name, f"{code.co_filename}:{code.co_qualname}"
