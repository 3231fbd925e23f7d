"""MCPServer: one connection to an MCP server, kept for the session's life.

Owns starting the server (stdio subprocess or streamable HTTP), the initialize
handshake, the tool list (refreshed on `tools/list_changed`), calls with a timeout,
and restarting a server that died (bounded). tool.py turns its tools into recorded tool
objects. The connection lives on _loop.py's thread; _faults.py reads its failures. Start
at MCPServer.stdio().
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import weakref
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from openprogram.core import _secrets
from openprogram.echo import cut, echo
from openprogram.errors import ConfigError, MCPServerError, UsageError
from openprogram.mcp import _loop
from openprogram.mcp._faults import (
    HTTP_REFUSALS,
    StaleSession,
    Target,
    session_closed,
    start_error,
    too_large,
    where,
)
from openprogram.mcp._http import http_client
from openprogram.mcp._sdk import (
    ClientSession,
    MCPError,
    StdioServerParameters,
    mcp_types,
)
from openprogram.mcp._stdio import RESULT_TOO_LARGE, stdio_client
from openprogram.mcp.tool import MCPTool, check_listed_once, check_namespace, public_names

__all__ = ["MCPServer"]

log = logging.getLogger("openprogram")

Transport = Literal["stdio", "http"]

MAX_RESULT_BYTES = 8 * 1024 * 1024
MAX_TOOLS = 1000
_servers: weakref.WeakSet[MCPServer] = weakref.WeakSet()
"""Every MCPServer made and not closed: whose tool names a server's tools must not take."""


@dataclasses.dataclass(init=False, eq=False, repr=False)
class MCPServer:
    """An MCP server whose tools an agent may call; make one with `MCPServer.stdio()`
    or `MCPServer.http()`.

    A context manager (sync and async): entering starts the server and lists its tools
    (ConfigError when it cannot start or does not answer initialize in `init_timeout`
    seconds); leaving stops it. Used without `with`, it connects on first use; call
    `close()` when done. One connection serves every call; a server that dies is
    restarted on next use, at most `max_restarts` times.
    """

    # what a recorded argument holding this server stores (values.py stores a dataclass
    # by its fields): never the connection, the command line or its environment
    name: str
    transport: Transport

    def __init__(
        self,
        transport: Transport,
        target: Target,
        *,
        name: str,
        timeout: float = 60.0,
        init_timeout: float = 60.0,
        max_restarts: int = 3,
        max_result_bytes: int = MAX_RESULT_BYTES,
        max_tools: int = MAX_TOOLS,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise UsageError(f"name={name!r} must be a non-empty string, e.g. name='files'")
        for option, value in (("timeout", timeout), ("init_timeout", init_timeout)):
            if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
                raise UsageError(f"{option}={value!r} must be a number of seconds > 0")
        if not isinstance(max_restarts, int) or max_restarts < 0:
            raise UsageError(f"max_restarts={max_restarts!r} must be an int >= 0")
        for option, limit in (("max_result_bytes", max_result_bytes), ("max_tools", max_tools)):
            if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
                raise UsageError(f"{option}={limit!r} must be an int >= 1")
        self.name = name
        self.transport = transport
        self.timeout = float(timeout)
        self.init_timeout = float(init_timeout)
        self.max_restarts = max_restarts
        self.max_result_bytes = max_result_bytes
        self.max_tools = max_tools
        self.restarts = 0
        self._target = target
        self._session: ClientSession | None = None
        self._holder: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None
        self._listing: list[mcp_types.Tool] | None = None
        self._stale = False
        self._started = False
        self._closed = False
        self._last_fault: str | None = None
        self._tools: dict[tuple[str, Any], MCPTool] = {}
        _servers.add(self)

    @classmethod
    def stdio(
        cls,
        argv: Sequence[str],
        *,
        name: str,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        timeout: float = 60.0,
        init_timeout: float = 60.0,
        max_restarts: int = 3,
        max_result_bytes: int = MAX_RESULT_BYTES,
        max_tools: int = MAX_TOOLS,
    ) -> MCPServer:
        """A server run as a subprocess speaking MCP over its stdin and stdout.

        argv: the command and its arguments, e.g. `["npx", "-y", "@modelcontextprotocol/
        server-filesystem", "/data"]`. env: variables added to a minimal inherited
        environment (PATH, HOME, ...); values of secret-looking names (`*_TOKEN`,
        `*_API_KEY`, ...) are scrubbed from everything recorded. cwd: its working folder.
        timeout: seconds a tool call may take before it fails as a tool error (checking
        its arguments against the tool's schema is bounded by it too). init_timeout:
        seconds the server may take to start and answer the handshake (a first
        `npx -y` downloads the server). max_result_bytes: the largest message the server
        may send (a result, a page of tools); a larger one is dropped unread and the
        call fails. max_tools: tools listed at most; those after are left out, with a
        warning.
        """
        if isinstance(argv, (str, bytes)) or not argv or not all(isinstance(a, str) for a in argv):
            raise UsageError(
                f"argv={argv!r} must be a non-empty list of strings, e.g. ['node', 'server.js']"
            )
        if env is not None:
            _secrets.register({k: v for k, v in env.items() if _secrets.is_secret_name(k)})
        _secrets.register(_secret_arguments(argv))
        parameters = StdioServerParameters(
            command=argv[0],
            args=list(argv[1:]),
            env=dict(env) if env else None,
            cwd=None if cwd is None else Path(cwd),
        )
        return cls(
            "stdio", parameters, name=name, timeout=timeout, init_timeout=init_timeout,
            max_restarts=max_restarts, max_result_bytes=max_result_bytes, max_tools=max_tools,
        )  # fmt: skip

    @classmethod
    def http(
        cls,
        url: str,
        *,
        name: str,
        headers: Mapping[str, str] | None = None,
        timeout: float = 60.0,
        init_timeout: float = 30.0,
        max_restarts: int = 3,
        max_result_bytes: int = MAX_RESULT_BYTES,
        max_tools: int = MAX_TOOLS,
    ) -> MCPServer:
        """A server reached over streamable HTTP at `url` (e.g. `http://127.0.0.1:3001/mcp`).

        headers: sent with every request (e.g. `{"Authorization": "Bearer ..."}`); the
        values of secret-looking ones are scrubbed from everything recorded. The other
        options are stdio()'s.
        """
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise UsageError(f"url={echo(url)} must be an http:// or https:// URL")
        if headers:
            _secrets.register({k: v for k, v in headers.items() if _secrets.is_secret_option(k)})
            _secrets.register(
                {k: v.split(" ", 1)[-1] for k, v in headers.items() if k.lower() == "authorization"}
            )
        target = (url, dict(headers or {}))
        return cls(
            "http", target, name=name, timeout=timeout, init_timeout=init_timeout,
            max_restarts=max_restarts, max_result_bytes=max_result_bytes, max_tools=max_tools,
        )  # fmt: skip

    def __repr__(self) -> str:
        state = "connected" if self._session is not None else "not connected"
        return f"<MCPServer {self.name!r} {self.transport} {state}>"

    # -- lifecycle -------------------------------------------------------------------

    def __enter__(self) -> MCPServer:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> MCPServer:
        await _loop.arun(self._connect(first=True))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await _loop.arun(self._close())

    def connect(self) -> None:
        """Start the server and list its tools (done by `with` or on first use).
        Raises ConfigError when it cannot start or does not answer."""
        _loop.run(self._connect(first=True))

    def close(self) -> None:
        """Stop the server (a subprocess is terminated); safe to call twice."""
        if self._holder is not None:
            _loop.run(self._close())

    # -- tools -----------------------------------------------------------------------

    def tools(self, *, render_output: Callable[[Any], Any] | None = None) -> list[MCPTool]:
        """The server's tools as tool objects for `llm(tools=...)` / `allm`.

        Named `{name}_{tool}` for the model and the DAG (where two tools' names would
        be the same once cut to what providers accept, see tool.public_names()). The
        list is fetched again after the server announced a change. A tool whose schema
        is not valid JSON Schema, too deep or too big, or whose name falls among
        another open server's (`{other}_...`), is left out with a warning in the log
        (asking for it with `tool()` raises ConfigError saying why). render_output:
        what later calls see of each result, as for @agentic_function.
        """
        listing = _loop.run(self._list())
        return self._wrap(listing, render_output)

    async def atools(self, *, render_output: Callable[[Any], Any] | None = None) -> list[MCPTool]:
        """As tools(), from async code."""
        listing = await _loop.arun(self._list())
        return self._wrap(listing, render_output)

    def tool(self, tool: str, *, render_output: Callable[[Any], Any] | None = None) -> MCPTool:
        """One tool by the server's name for it (`"read_file"`); ConfigError when the
        server has no such tool or its schema is invalid."""
        listing = _loop.run(self._list())
        if not any(t.name == tool for t in listing):
            names = cut(repr(sorted(t.name for t in listing)), 2000)
            more = (
                f" (the first max_tools={self.max_tools} of more it listed)"
                if len(listing) >= self.max_tools
                else ""
            )
            raise ConfigError(
                f"MCP server {self.name!r} has no tool {tool!r}; its tools are {names}{more}"
            )
        return self._wrap(listing, render_output, only=tool)[0]

    def _wrap(
        self,
        listing: list[mcp_types.Tool],
        render_output: Callable[[Any], Any] | None,
        only: str | None = None,
    ) -> list[MCPTool]:
        """The listing as tool objects (made once per tool and render_output); tools
        that cannot be offered are left out with a warning, or, for `only`, raise."""
        names = public_names(self.name, [described.name for described in listing])
        others = [other.name for other in list(_servers) if other is not self]
        listed = Counter(described.name for described in listing)
        first = {d.name: d for d in reversed(listing)}
        tools = []
        for described in listing:
            if only is not None and described.name != only:
                continue
            key, name = (described.name, render_output), names[described.name]
            made = self._tools.get(key)
            try:  # checked each time: a server opened since may own the name
                if listed[described.name] > 1 and described is not first[described.name]:
                    continue  # said once, for the first
                check_listed_once(self.name, described.name, listed[described.name])
                check_namespace(self.name, described.name, name, others)
                if made is None or made.described != described or made.name != name:
                    made = MCPTool(self, described, render_output=render_output, name=name)
            except ConfigError as exc:
                if only is not None:
                    raise
                log.warning("openprogram: %s; the tool is left out", exc)
                continue
            self._tools[key] = made
            tools.append(made)
        return tools

    # -- on the loop -----------------------------------------------------------------

    async def _connect(self, *, first: bool = False) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is not None:
                return
            if self._closed and first:
                self._closed = False
                _servers.add(self)
                self.restarts = 0
            if self._started:
                if self.restarts >= self.max_restarts:
                    raise MCPServerError(
                        f"MCP server {self.name!r} stopped and was restarted "
                        f"{self.restarts} times already (max_restarts={self.max_restarts}); "
                        "not starting it again"
                    )
                self.restarts += 1
                log.warning(
                    "openprogram: restarting MCP server %r (restart %d of %d)",
                    self.name, self.restarts, self.max_restarts,
                )  # fmt: skip
            ready: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._stop = asyncio.Event()
            self._holder = asyncio.get_running_loop().create_task(self._hold(ready, self._stop))
            try:
                await ready
            except BaseException:
                await self._end_holder()
                raise
            self._started = True

    async def _hold(self, ready: asyncio.Future[None], stop: asyncio.Event) -> None:
        """Own the connection: open it, list the tools, wait until told to stop (every
        context of the SDK is entered and left in this one task)."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                streams = await stack.enter_async_context(self._transport())
                session = await stack.enter_async_context(
                    ClientSession(
                        streams[0],
                        streams[1],
                        message_handler=self._on_message,
                        read_timeout_seconds=self.timeout,
                    )
                )
                try:
                    await asyncio.wait_for(session.initialize(), self.init_timeout)
                    self._listing = await asyncio.wait_for(self._list_all(session), self.timeout)
                except (TimeoutError, asyncio.TimeoutError):
                    raise ConfigError(self._no_answer()) from None
                self._session = session
                self._stale = False
                ready.set_result(None)
                await stop.wait()
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(self._start_error(exc))
            elif not isinstance(exc, asyncio.CancelledError):
                log.warning("openprogram: MCP server %r connection ended: %r", self.name, exc)
        finally:
            self._session = None

    def _transport(self) -> Any:
        if isinstance(self._target, tuple):
            url, headers = self._target
            return http_client(url, headers=headers, max_bytes=self.max_result_bytes)
        return stdio_client(self._target, errlog=_errlog(), max_bytes=self.max_result_bytes)

    def _where(self) -> str:
        """The server's command line or URL, for messages (never its environment)."""
        return where(self._target)

    def _no_answer(self) -> str:
        return (
            f"MCP server {self.name!r} ({self._where()}) did not answer initialize within "
            f"{self.init_timeout:g} s; check that it speaks MCP over {self.transport} "
            "(a server printing logs to stdout breaks stdio), or raise init_timeout"
        )

    def _start_error(self, exc: BaseException) -> BaseException:
        return start_error(self.name, self._target, self.max_result_bytes, exc)

    async def _list_all(self, session: Any) -> list[mcp_types.Tool]:
        """Every page of the server's tools, up to max_tools (a warning says when more)."""
        tools: list[mcp_types.Tool] = []
        cursor = None
        while True:
            params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
            page = await session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if len(tools) > self.max_tools:
                log.warning(
                    "openprogram: MCP server %r lists more than max_tools=%d tools; only the "
                    "first %d are offered (raise max_tools to offer more)",
                    self.name, self.max_tools, self.max_tools,
                )  # fmt: skip
                return tools[: self.max_tools]
            if not cursor:
                return tools

    async def _list(self) -> list[mcp_types.Tool]:
        await self._connect(first=not self._started)
        if self._stale and self._session is not None:
            self._stale = False
            self._listing = await asyncio.wait_for(self._list_all(self._session), self.timeout)
        return list(self._listing or [])

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._stale = True
        elif isinstance(message, Exception):
            self._last_fault = f"{type(message).__name__}: {cut(str(message))}"

    async def call(self, tool: str, arguments: dict[str, Any]) -> mcp_types.CallToolResult:
        """Call `tool` on the MCP loop: the CallToolResult, or MCPServerError for a
        timeout, a protocol error or a broken connection (restarted on next use)."""
        session = await self._ready_session()
        try:
            return await self._call_on(session, tool, arguments)
        except StaleSession:
            # an HTTP server restarted since: it no longer knows our session, and refused
            # the request before running it, so it is sent once more on a new session
            log.warning("openprogram: MCP server %r lost our session; reconnecting", self.name)
            await self._drop(session)
            session = await self._ready_session()
            try:
                return await self._call_on(session, tool, arguments)
            except StaleSession as exc:
                raise MCPServerError(
                    f"MCP server {self.name!r} refused {tool} on a new session too: {exc}"
                ) from None

    async def _ready_session(self) -> ClientSession:
        try:
            await self._connect(first=not self._started)
            if session_closed(self._session):  # it died while idle: restart before sending
                await self._drop(self._session)
                await self._connect()
        except ConfigError as exc:
            raise MCPServerError(f"MCP server {self.name!r} is not available: {exc}") from exc
        if self._session is None:
            raise MCPServerError(f"MCP server {self.name!r} is not connected")
        return self._session

    async def _call_on(
        self, session: ClientSession, tool: str, arguments: dict[str, Any]
    ) -> mcp_types.CallToolResult:
        self._last_fault = None
        request = mcp_types.CallToolRequest(
            params=mcp_types.CallToolRequestParams(name=tool, arguments=arguments)
        )
        try:  # the session's read timeout (self.timeout) bounds the call; not call_tool():
            # it checks structured results against the output schema with `re`, on this
            # loop and without a deadline (tool.py checks them, bounded)
            return await session.send_request(request, mcp_types.CallToolResult)
        except MCPError as exc:
            if too_large(exc, self.max_result_bytes):
                said = (
                    exc.message
                    if exc.code == RESULT_TOO_LARGE
                    else f"the server's answer was over max_result_bytes="
                    f"{self.max_result_bytes:,}; it was dropped unread"
                )
                raise MCPServerError(
                    f"MCP server {self.name!r} answered {tool} with too much: {said}. Ask "
                    "for less, or raise max_result_bytes"
                ) from None
            if exc.code == mcp_types.REQUEST_TIMEOUT:
                fault = self._last_fault
                await self._check_alive(session)
                said = f"; it sent something that is not JSON-RPC ({fault})" if fault else ""
                raise MCPServerError(
                    f"MCP server {self.name!r} did not answer {tool} within "
                    f"{self.timeout:g} s{said}"
                ) from None
            if exc.code == mcp_types.CONNECTION_CLOSED:
                await self._drop(session)
                raise MCPServerError(
                    f"MCP server {self.name!r} ({self._where()}) closed the connection during "
                    f"{tool} ({exc.message}); it is restarted on next use"
                ) from None
            refused = self.transport == "http" and exc.code in HTTP_REFUSALS
            if refused and not await self._answers_ping(session):
                raise StaleSession(exc.message) from None
            raise MCPServerError(
                f"MCP server {self.name!r} refused {tool}: {exc.message} (code {exc.code})"
            ) from None
        except (OSError, EOFError) as exc:
            await self._drop(session)
            raise MCPServerError(
                f"MCP server {self.name!r} connection broke during {tool}: {exc!r}; "
                "it is restarted on next use"
            ) from None

    async def _answers_ping(self, session: Any) -> bool:
        try:
            await asyncio.wait_for(session.send_ping(), min(self.timeout, 2.0))
        except Exception:
            return False
        return True

    async def _check_alive(self, session: Any) -> None:
        """After a timeout: a server that does not answer a ping either is restarted."""
        if not await self._answers_ping(session):
            await self._drop(session)

    async def _drop(self, session: Any) -> None:
        if self._session is session:
            await self._end_holder()

    async def _end_holder(self) -> None:
        holder, stop = self._holder, self._stop
        self._session = None
        if stop is not None:
            stop.set()
        if holder is not None:
            try:
                await asyncio.wait_for(asyncio.shield(holder), 5.0)
            except (TimeoutError, asyncio.TimeoutError):
                holder.cancel()
                with contextlib.suppress(BaseException):
                    await holder
            except BaseException:
                pass
        self._holder = None

    async def _close(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            await self._end_holder()
            self._closed = True
            self._started = False
            _servers.discard(self)


def _secret_arguments(argv: Sequence[str]) -> list[str]:
    """The values of argv's secret-looking options (`--api-key X`, `--token=X`)."""
    found = []
    for i, argument in enumerate(argv):
        option, given, value = argument.lstrip("-").partition("=")
        if argument.startswith("-") and _secrets.is_secret_option(option):
            if given:
                found.append(value)
            elif i + 1 < len(argv):
                found.append(argv[i + 1])
    return found


def _errlog() -> Any:
    """Where a stdio server's stderr goes: ours, unless OPENPROGRAM_MCP_STDERR=quiet."""
    import sys

    if os.environ.get("OPENPROGRAM_MCP_STDERR") == "quiet":
        return open(os.devnull, "w")
    return sys.stderr
