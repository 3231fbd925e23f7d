"""What went wrong with an MCP connection, told plainly.

Owns reading the SDK's failures: why a server could not be started (`start_error()`: no
such program, a tool list over max_result_bytes, anything else with its first cause),
whether an answer was over max_result_bytes (`too_large()`), whether a session's
connection has ended (`session_closed()`), and how an HTTP server that lost our session
refuses (`HTTP_REFUSALS`, `StaleSession`); `where()` names a server's command line or
URL for messages, secrets scrubbed. client.py's MCPServer raises them.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import TypeAlias

from openprogram.core import _secrets
from openprogram.echo import cut, mask_url
from openprogram.errors import ConfigError
from openprogram.mcp._http import TOO_LARGE
from openprogram.mcp._sdk import MCPError, StdioServerParameters, mcp_types
from openprogram.mcp._stdio import RESULT_TOO_LARGE

__all__ = [
    "HTTP_REFUSALS",
    "StaleSession",
    "Target",
    "first_cause",
    "session_closed",
    "start_error",
    "too_large",
    "where",
]

HTTP_REFUSALS = (mcp_types.INVALID_REQUEST, mcp_types.INTERNAL_ERROR)
"""How the SDK reports an HTTP status refusing a request (404 "Session terminated", or
another 4xx/5xx); a session the server no longer knows is refused this way."""


Target: TypeAlias = StdioServerParameters | tuple[str, dict[str, str]]
"""What a server is reached by: the command a stdio server is started with, or an HTTP
server's URL and the headers sent with every request."""


class StaleSession(Exception):
    """The server refused a request and a ping on the same session: it lost the session."""


def where(target: Target) -> str:
    """The server's command line or URL, for messages (never its environment)."""
    if isinstance(target, tuple):
        return f"URL {_secrets.scrub(mask_url(target[0]))}"
    argv = [target.command, *target.args]
    return f"command {cut(_secrets.scrub(repr(argv)), 500)}"


def start_error(
    name: str, target: Target, max_result_bytes: int, exc: BaseException
) -> BaseException:
    """Why server `name` could not be started, as the ConfigError to raise (a
    cancellation or a ConfigError already said is `exc` itself)."""
    if isinstance(exc, (ConfigError, asyncio.CancelledError)):
        return exc
    cause = first_cause(exc)
    if not isinstance(target, tuple):
        command = target.command
        missing = isinstance(cause, FileNotFoundError) or shutil.which(command) is None
        if missing and not Path(command).exists():
            return ConfigError(
                f"cannot start MCP server {name!r}: no program {command!r} "
                "(give the full path, or install it)"
            )
    if isinstance(cause, MCPError) and too_large(cause, max_result_bytes):
        return ConfigError(
            f"MCP server {name!r} ({where(target)}) sent its tools in a message "
            f"too large: {cause.message}; raise max_result_bytes"
        )
    error = ConfigError(
        f"MCP server {name!r} ({where(target)}) could not be started: "
        f"{type(cause).__name__}: {cut(str(cause))}"
    )
    error.__cause__ = cause
    return error


def too_large(exc: MCPError, limit: int) -> bool:
    """Whether an MCPError says the server's answer was over max_result_bytes: our stdio
    reader's code, the SDK's parse error for an HTTP answer we cut, or its error for a
    server-sent event over the limit we gave it."""
    message = str(exc.message)
    return (
        exc.code == RESULT_TOO_LARGE
        or (exc.code == mcp_types.PARSE_ERROR and TOO_LARGE in message)
        or (exc.code == mcp_types.CONNECTION_CLOSED and f"exceeded the {limit} byte" in message)
    )


def session_closed(session: object) -> bool:
    """Whether the connection under `session` has ended (the server exited). The SDK
    says so only when a request fails; its dispatcher's flag tells it before sending."""
    dispatcher = getattr(session, "_dispatcher", None)
    return bool(getattr(dispatcher, "_closed", False))


def first_cause(exc: BaseException) -> BaseException:
    """The first leaf of an exception group (anyio wraps task errors in one)."""
    while getattr(exc, "exceptions", None):
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc
