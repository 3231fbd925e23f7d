"""The stdio transport of MCPServer: the SDK's, with a bound on each message read.

The SDK's reader joins a message's chunks again and again (100 MB took two minutes)
and holds any size; this one finds lines in bytes, and drops a message longer than
`max_bytes` unread, answering its request with a RESULT_TOO_LARGE error instead.
Starting and stopping the process is the SDK's (its private helpers, pinned by `mcp<3`:
the only accesses to a library's private members here).
client.py uses it. Start at stdio_client().
"""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import AsyncIterator
from typing import Any, TextIO

import anyio
import anyio.lowlevel
from mcp.client import stdio as sdk
from mcp.shared.message import SessionMessage

from openprogram.mcp._sdk import StdioServerParameters, mcp_types

__all__ = ["RESULT_TOO_LARGE", "stdio_client"]

RESULT_TOO_LARGE = -32_050
"""The code of the error a request is answered with when the server's answer to it
was over the size limit (in JSON-RPC's range for implementations)."""

_KEPT = 4096  # bytes kept of each end of a dropped message, to find its id in
_ID = rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")'
_ID_FIRST = re.compile(rb'^\s*\{(?:\s*"(?:jsonrpc|error|method)"\s*:\s*"[^"]*"\s*,)*\s*' + _ID)
_ID_LAST = re.compile(rb",\s*" + _ID + rb'\s*(?:,\s*"jsonrpc"\s*:\s*"2\.0"\s*)?\}\s*$')


@contextlib.asynccontextmanager
async def stdio_client(
    server: StdioServerParameters, *, errlog: TextIO = sys.stderr, max_bytes: int
) -> AsyncIterator[tuple[Any, Any]]:
    """Start the server and bridge its stdout and stdin to the session's streams, as
    the SDK's stdio_client does; messages over `max_bytes` are dropped (see above)."""
    command = await sdk._get_executable_command(server.command)
    process = await sdk._create_platform_compatible_process(
        command=command,
        args=server.args,
        env=sdk.get_default_environment() | (server.env or {}),
        errlog=errlog,
        cwd=server.cwd,
    )
    reader_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, writer_reader = anyio.create_memory_object_stream[SessionMessage](0)
    shutting_down = False
    writer_done = anyio.Event()

    async def stdout_reader() -> None:
        assert process.stdout is not None, "the server is started with pipes"
        try:
            async with reader_writer:
                try:
                    async for message in _messages(process.stdout, server.encoding, max_bytes):
                        try:
                            await reader_writer.send(message)
                        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                            return
                finally:
                    await sdk._drain_stdout(process)
        except anyio.ClosedResourceError:
            pass
        except (anyio.BrokenResourceError, ConnectionError):
            if not shutting_down:
                sdk.logger.exception("Reading from the MCP server's stdout failed mid-session")

    async def stdin_writer() -> None:
        assert process.stdin is not None, "the server is started with pipes"
        try:
            async with writer_reader:
                async for session_message in writer_reader:
                    json = session_message.message.model_dump_json(
                        by_alias=True, exclude_unset=True
                    )
                    await process.stdin.send((json + "\n").encode(server.encoding))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await reader_writer.aclose()
        finally:
            writer_done.set()

    async def shutdown() -> None:
        read_stream.close()
        write_stream.close()
        with anyio.move_on_after(sdk._WRITER_FLUSH_TIMEOUT):
            await writer_done.wait()
        await sdk._stop_server_process(process)
        await sdk._aclose_all(read_stream, write_stream, reader_writer, writer_reader)
        await anyio.lowlevel.checkpoint()

    async with anyio.create_task_group() as group:
        group.start_soon(stdout_reader)
        group.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream
        finally:
            shutting_down = True
            with anyio.CancelScope(shield=True):
                await shutdown()
            group.cancel_scope.cancel()
    await anyio.lowlevel.cancel_shielded_checkpoint()


async def _messages(
    stdout: Any, encoding: str, max_bytes: int
) -> AsyncIterator[SessionMessage | Exception]:
    """The messages of a newline-delimited JSON-RPC byte stream: each line parsed as
    the SDK parses it, or, for a line over `max_bytes`, _too_large()."""
    line = bytearray()
    dropped = 0  # > 0 while the current line is over the limit: its length so far
    head = tail = b""
    async for chunk in stdout:
        start = 0
        while start <= len(chunk):
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if dropped:
                dropped += len(piece)
                tail = (tail + piece)[-_KEPT:]
            else:
                line += piece
                if len(line) > max_bytes:
                    dropped, head, tail = len(line), bytes(line[:_KEPT]), bytes(line[-_KEPT:])
                    line = bytearray()
            if end < 0:
                break
            if dropped:
                yield _too_large(head, tail, dropped, max_bytes)
                dropped = 0
            elif line.strip():
                yield sdk._parse_line(line.decode(encoding, errors="replace"))
            line = bytearray()
            start = end + 1


def _too_large(head: bytes, tail: bytes, size: int, max_bytes: int) -> SessionMessage | Exception:
    """The error answering the request a dropped message answered (its id found at
    either end of it), or, when no id is found there, an error for the session's log."""
    said = (
        f"the server's answer was {size:,} bytes, over max_result_bytes="
        f"{max_bytes:,}; it was dropped unread"
    )
    found = _ID_FIRST.match(head) or _ID_LAST.search(tail)
    if found is None or (b'"result"' not in head + tail and b'"error"' not in head + tail):
        return ValueError(said)
    raw = found.group(1)
    id_: int | str = int(raw) if raw[:1] != b'"' else raw[1:-1].decode("utf-8", "replace")
    error = mcp_types.JSONRPCError(
        jsonrpc="2.0", id=id_, error=mcp_types.ErrorData(code=RESULT_TOO_LARGE, message=said)
    )
    return SessionMessage(error)
