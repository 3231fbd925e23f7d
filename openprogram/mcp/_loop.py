"""The background event loop the MCP connections live on.

The SDK is async; one daemon thread runs one asyncio loop for every MCPServer of the
process, so sync callers submit coroutines to it and async callers await them from
their own loop. Start at run().
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

from openprogram.errors import UsageError

__all__ = ["arun", "run", "submit"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def _the_loop() -> asyncio.AbstractEventLoop:
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="openprogram-mcp", daemon=True)
            thread.start()
            _loop, _thread = loop, thread
        return _loop


def submit(coroutine: Coroutine[Any, Any, T]) -> Future[T]:
    """Schedule `coroutine` on the MCP loop; its concurrent Future."""
    loop = _the_loop()
    if threading.current_thread() is _thread:
        coroutine.close()
        raise UsageError(
            "an MCP server was called from its own event-loop thread; call it from your "
            "code (sync or async), not from an MCP callback"
        )
    return asyncio.run_coroutine_threadsafe(coroutine, loop)


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the MCP loop and wait for its result (sync callers)."""
    return submit(coroutine).result()


async def arun(coroutine: Coroutine[Any, Any, T]) -> T:
    """Await `coroutine` run on the MCP loop from another loop (async callers)."""
    return await asyncio.wrap_future(submit(coroutine))
