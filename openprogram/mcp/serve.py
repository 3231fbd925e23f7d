"""Agentic functions served as MCP tools: `openprogram mcp serve MODULE:FUNCTION ...`.

Owns finding the functions (an import path, or a name plugins register under the
`openprogram.mcp_tools` entry points), the MCP server over stdio or streamable HTTP
(the SDK's low-level Server), running each call as its own recorded session (bounded per
tool, stopped when its client leaves), and turning return values into MCP content,
scrubbed of secrets. Who may connect over HTTP is _gate.py's. Start at serve().
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import importlib
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationError

from openprogram.agentic.function import AgenticFunction, is_async
from openprogram.callbacks.base import Callback
from openprogram.core import _secrets
from openprogram.core.image import Image, is_image
from openprogram.echo import cut, echo, printable
from openprogram.errors import ConfigError, RunStopped, UsageError
from openprogram.mcp._gate import (
    CLIENT_GONE,
    Gate,
    new_token,
    remove_token_file,
    token_path,
    write_token,
)
from openprogram.mcp._sdk import mcp_types
from openprogram.mcp._tasks import DEFAULT_MAX_CLIENT_TASKS, DEFAULT_MAX_TASKS, Tasks, client
from openprogram.runtime.runtime import Runtime
from openprogram.serving import is_loopback
from openprogram.session.session import Session

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

__all__ = ["DEFAULT_MAX_CALLS", "TOOLS_GROUP", "build_server", "find_function", "serve"]

log = logging.getLogger("openprogram")

DEFAULT_MAX_CALLS = 16
"""How many calls of one tool run at once by default (`--max-calls`); more wait their turn."""

_STOP_GRACE = 10.0  # seconds a call whose client left may take to reach its next gate

TOOLS_GROUP = "openprogram.mcp_tools"
"""The entry-point group plugins register servable functions under, e.g. in pyproject.toml
`[project.entry-points."openprogram.mcp_tools"] gui_agent = "gui_harness.mcp_tool:gui_agent"`;
`openprogram mcp serve gui_agent` then serves it."""

ServeTransport = Literal["stdio", "http"]


def find_function(target: str) -> AgenticFunction[..., Any]:
    """`MODULE:FUNCTION` (or a name registered under TOOLS_GROUP) to an agentic function;
    ConfigError saying what is wrong otherwise."""
    if ":" not in target:
        registered = {e.name: e for e in entry_points(group=TOOLS_GROUP)}
        if target not in registered:
            raise ConfigError(
                f"{target!r} is neither MODULE:FUNCTION nor a registered tool; the registered "
                f"tools are {sorted(registered)!r}"
            )
        fn = registered[target].load()
    else:
        module_name, _, attribute = target.partition(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"cannot import {module_name!r} for {target!r}: {exc}") from exc
        fn = module
        for part in attribute.split("."):
            fn = getattr(fn, part, None)
            if fn is None:
                raise ConfigError(f"module {module_name!r} has no {attribute!r}")
    if not isinstance(fn, AgenticFunction):
        raise ConfigError(
            f"{target!r} is not an agentic function; decorate it with @agentic_function "
            "(its .spec is the tool's schema)"
        )
    return fn


def build_server(
    functions: Sequence[AgenticFunction[..., Any]],
    *,
    store: object = None,
    model: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    name: str = "openprogram",
    max_calls: int = DEFAULT_MAX_CALLS,
    max_tasks: int = DEFAULT_MAX_TASKS,
    max_client_tasks: int = DEFAULT_MAX_CLIENT_TASKS,
) -> Server:
    """The SDK's low-level MCP Server offering `functions` (their `.spec`) as tools, each
    call run in its own Session on `store` (None: kept in memory only), with a Runtime
    of `model` (None: OPENPROGRAM_MODEL) at `api_base` (None: the provider's), with
    `api_key` (None: the provider's environment variable; never stored).

    Each tool runs at most `max_calls` calls at once (more wait their turn), so slow
    calls of one tool never hold up another's. A call whose client cancels it or goes
    away is stopped: an async function at once, a sync one before its next model
    request (its node ends `stopped`). Everything sent back is scrubbed of secrets.

    A background tool's call is a task (_tasks.py): at most `max_tasks` work at once,
    `max_client_tasks` of one connection (a call past either is refused, saying which),
    and their operations run in turn across connections.
    """
    for option, value in (
        ("max_calls", max_calls), ("max_tasks", max_tasks), ("max_client_tasks", max_client_tasks)
    ):  # fmt: skip
        if type(value) is not int or value < 1:
            raise UsageError(f"{option}={value!r} must be a whole number >= 1")
    tools: dict[str, AgenticFunction[..., Any]] = {}
    for fn in functions:
        spec_name = fn.spec["name"]
        if spec_name in tools:
            raise UsageError(f"two functions are named {spec_name!r}; tool names must be unique")
        tools[spec_name] = fn
    listing = mcp_types.ListToolsResult(
        tools=[
            mcp_types.Tool(
                name=fn.spec["name"],
                description=fn.spec.get("description") or None,
                input_schema=fn.spec["parameters"],
                execution=mcp_types.ToolExecution(task_support="optional")
                if Tasks.offers(fn)  # a background tool: its call is a task (_tasks.py)
                else None,
            )
            for fn in tools.values()
        ]
    )
    options = {"api_base": api_base} if api_base else {}
    if api_key:
        options["api_key"] = api_key
    calls = _Calls(len(tools) * max_calls, max_calls)
    tasks = Tasks(
        store,
        model,
        options,
        lambda v: _scrubbed(_result(v)),
        _scrubbed_error,
        max_tasks=max_tasks,
        max_client_tasks=max_client_tasks,
    )

    async def on_list_tools(context: Any, params: Any) -> Any:
        return listing

    async def on_call_tool(context: Any, params: Any) -> Any:
        fn = tools.get(params.name)
        if fn is None:
            return _scrubbed(
                _error(f"there is no tool {echo(params.name)}; the tools are {sorted(tools)!r}")
            )
        arguments = dict(params.arguments or {})
        if Tasks.offers(fn):
            import anyio

            asking = client(context)  # the connection: its tasks/list lists the task
            return _scrubbed(await anyio.to_thread.run_sync(tasks.start, fn, arguments, asking))
        call = calls.run(params.name, fn, arguments, store, model, options)
        # over HTTP, a client that disconnects cancels its call (the SDK only cancels
        # on the client's notifications/cancelled)
        request = getattr(context, "request", None)
        gone = getattr(request, "scope", {}).get(CLIENT_GONE)
        if gone is None:
            return _scrubbed(await call)
        return _scrubbed(await _unless_gone(call, gone))

    from mcp.server.lowlevel import Server

    server = Server(name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    tasks.register(server)
    return server


async def _unless_gone(call: Any, gone: Any) -> Any:
    """Await `call`, cancelled when the Event `gone` is set first."""
    import anyio

    outcome: list[Any] = []
    async with anyio.create_task_group() as group:

        async def finish() -> None:
            outcome.append(await call)
            group.cancel_scope.cancel()

        group.start_soon(finish)
        await gone.wait()
        group.cancel_scope.cancel()
    return outcome[0] if outcome else _error("cancelled: the client went away")


class _Calls:
    """The calls running now: a limit per tool, worker threads, and stopping a call
    whose client has gone."""

    def __init__(self, threads: int, per_tool: int) -> None:
        self._threads_total, self._per_tool = threads, per_tool
        self._limiters: dict[str, Any] = {}
        self._threads: Any = None

    async def run(
        self,
        tool: str,
        fn: AgenticFunction[..., Any],
        arguments: dict[str, Any],
        store: object,
        model: str | None,
        options: dict[str, Any],
    ) -> Any:
        import anyio
        import anyio.from_thread

        if self._threads is None:  # made on the server's event loop, the one they serve
            self._threads = anyio.CapacityLimiter(self._threads_total)
        limiter = self._limiters.get(tool)
        if limiter is None:
            limiter = self._limiters[tool] = anyio.CapacityLimiter(self._per_tool)
        stop = _Stop()
        done = anyio.Event()

        def work() -> Any:
            try:
                return _run(fn, arguments, store, model, options, stop)
            finally:
                with contextlib.suppress(Exception):  # the server's loop has already ended
                    anyio.from_thread.run_sync(done.set)

        async with limiter:
            try:
                return await anyio.to_thread.run_sync(
                    work, abandon_on_cancel=True, limiter=self._threads
                )
            except anyio.get_cancelled_exc_class():
                stop.set()
                print(  # for whoever runs the server (and a test waiting for it to notice)
                    f"openprogram mcp serve: a call of {printable(tool)} lost its client; it "
                    "stops before its next model request",
                    file=sys.stderr,
                    flush=True,
                )
                # the tool's slot is held until the call has really stopped (or the grace
                # is over: code that never asks the model cannot be stopped from here)
                with anyio.move_on_after(_STOP_GRACE, shield=True) as waited:
                    await done.wait()
                if waited.cancelled_caught:
                    log.warning(
                        "a call of %s went on %s s after its client left; no longer waiting",
                        tool,
                        _STOP_GRACE,
                    )
                raise


class _Stop(Callback):
    """The gate of one served call: no model request once its client has gone."""

    stop_reason = "the MCP client cancelled the call or went away"

    def __init__(self) -> None:
        self._event = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task[Any] | None = None

    @property
    def stopped(self) -> bool:
        return self._event.is_set()

    def set(self) -> None:
        self._event.set()
        loop, task = self.loop, self.task
        if loop is not None and task is not None:  # an async function: cancelled at once
            with contextlib.suppress(RuntimeError):  # its loop has just ended
                loop.call_soon_threadsafe(task.cancel)

    def on_run_continue(self, runtime: Any, **context: Any) -> bool:
        return not self._event.is_set()


def _run(
    fn: AgenticFunction[..., Any],
    arguments: dict[str, Any],
    store: object,
    model: str | None,
    options: dict[str, Any],
    stop: _Stop,
) -> Any:
    """One call in its own recorded session: the result as MCP content, the error as
    an error result; the session's id in the result's `_meta`."""
    schema = fn.arguments_model
    try:
        parsed = schema.model_validate(arguments)
    except ValidationError as exc:
        return _error(f"invalid arguments for {fn.spec['name']}: {_problems(exc)}")
    kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
    with Session(store) as session, Runtime(model, callbacks=[stop], **options):
        try:
            if is_async(fn):
                value = asyncio.run(_until_stopped(fn(**kwargs), stop))
            else:
                value = fn(**kwargs)
            result = _result(value)
        except RunStopped as exc:
            result = _error(f"stopped: {exc.reason}")
        except Exception as exc:
            result = _error(f"{type(exc).__name__}: {cut(str(exc))}")
    result.meta = {"openprogram/session": session.id}
    return result


async def _until_stopped(call: Any, stop: _Stop) -> Any:
    """Await an async function's call, cancelled when its client goes away."""
    stop.loop, stop.task = asyncio.get_running_loop(), asyncio.current_task()
    if stop.stopped:
        raise RunStopped(stop.stop_reason)
    try:
        return await call
    except asyncio.CancelledError:
        if stop.stopped:
            raise RunStopped(stop.stop_reason) from None
        raise


def _problems(exc: ValidationError) -> str:
    """The first problems of invalid arguments, each with the value given, cut."""
    problems = [
        f"{cut('.'.join(map(str, e['loc'])) or 'arguments', 80)}: {cut(e['msg'], 200)}"
        + (f" (got {echo(e['input'], 80)})" if e["loc"] and e["type"] != "missing" else "")
        for e in exc.errors()[:5]
    ]
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")


def _scrubbed(result: mcp_types.CallToolResult) -> mcp_types.CallToolResult:
    """`result` with every known secret value masked, as the stored session has it: text
    of an error also loses key-like strings, as stored errors do."""
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            block.text = _secrets.scrub(block.text, patterns=bool(result.is_error))
    if result.structured_content is not None:
        result.structured_content = _secrets.scrub_value(result.structured_content)
    return result


def _scrubbed_error(message: str) -> mcp_types.CallToolResult:
    return _scrubbed(_error(message))


def _error(message: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=message)], is_error=True
    )


def _result(value: Any) -> mcp_types.CallToolResult:
    """A return value as MCP content: text as text, images as images, a list of those as
    several blocks, anything else as JSON text (and as structured content when a dict)."""
    items = value if isinstance(value, list) and value and all(_simple(v) for v in value) else None
    if items is not None:
        return mcp_types.CallToolResult(content=[_block(v) for v in items])
    if _simple(value):
        return mcp_types.CallToolResult(content=[_block(value)])
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json")
    text = json.dumps(value, default=str, ensure_ascii=False)
    structured = value if isinstance(value, dict) else None
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], structured_content=structured
    )


def _simple(value: Any) -> bool:
    return isinstance(value, str) or is_image(value)


def _block(value: Any) -> Any:
    if isinstance(value, str):
        return mcp_types.TextContent(type="text", text=value)
    image = value if isinstance(value, Image) else Image(value)
    data = base64.b64encode(image.png()).decode("ascii")
    return mcp_types.ImageContent(type="image", data=data, mime_type="image/png")


def serve(
    functions: Sequence[AgenticFunction[..., Any]],
    *,
    transport: ServeTransport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    store: object = None,
    model: str | None = None,
    api_base: str | None = None,
    api_key: str | None = None,
    name: str = "openprogram",
    max_calls: int = DEFAULT_MAX_CALLS,
    max_tasks: int = DEFAULT_MAX_TASKS,
    max_client_tasks: int = DEFAULT_MAX_CLIENT_TASKS,
    allow_remote: bool = False,
    token_file: str | Path | None = None,
) -> None:
    """Serve `functions` as MCP tools until the client leaves (stdio) or the process is
    stopped (http: `http://HOST:PORT/mcp`, port 0 picks a free one). Each call is a
    session in `store`; see build_server() for `model`, `api_base` and the limits.

    Over http every request needs this start's random token as `Authorization: Bearer
    <token>`: it is written to `token_file` (default: token_path(port)), readable by
    this user only, and removed at exit. A host that is not a loopback address needs
    `allow_remote=True`. Once listening, one line on stderr gives the URL and the file.
    """
    import anyio

    server = build_server(
        functions,
        store=store,
        model=model,
        api_base=api_base,
        api_key=api_key,
        name=name,
        max_calls=max_calls,
        max_tasks=max_tasks,
        max_client_tasks=max_client_tasks,
    )
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
    elif transport == "http":
        _serve_http(server, host, port, allow_remote=allow_remote, token_file=token_file)
    else:
        raise UsageError(f"transport={transport!r} is not one of 'stdio', 'http'")


def _serve_http(
    server: Any, host: str, port: int, *, allow_remote: bool, token_file: str | Path | None
) -> None:
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    remote = not is_loopback(host)
    if remote and not allow_remote:
        raise UsageError(
            f"host={host!r} is not a loopback address: anyone who reaches it could call the "
            "served tools as this user. Use --host 127.0.0.1, or pass --allow-remote on "
            "purpose (behind TLS; every request still needs the token)"
        )
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        listener = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise ConfigError(f"cannot listen on {host}:{port}: {exc}") from exc
    port = listener.getsockname()[1]
    token = new_token()
    path = Path(os.path.abspath(token_file)) if token_file is not None else token_path(port)
    held = None
    try:
        held = write_token(path, token)
        # the Host and Origin checks are the gate's (stricter than the SDK's, and right
        # for a wildcard bind too)
        app = server.streamable_http_app(
            host=host,
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        gated = Gate(app, host=host, port=port, token=token)
        url = f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"

        def ready() -> None:
            if remote:
                print(
                    f"WARNING: serving on {host}:{port}, reachable from other machines: "
                    "anyone with the token runs the tools as this user, over plain HTTP",
                    file=sys.stderr,
                )
            if sys.stderr.isatty():  # once, to a person; never into a log file
                print(f"token: {token}", file=sys.stderr)
            print(
                f"openprogram mcp serve: listening at {url}; token in {printable(str(path))} "
                "(send 'Authorization: Bearer <token>')",
                file=sys.stderr,
                flush=True,
            )

        config = uvicorn.Config(gated, log_level="warning", lifespan="on")
        with _exit_on_sigterm():
            _uvicorn_server(config, ready).run(sockets=[listener])
    finally:
        listener.close()
        remove_token_file(path, token, held)


@contextlib.contextmanager
def _exit_on_sigterm() -> Iterator[None]:
    """SIGTERM as SystemExit: uvicorn shuts down gracefully, then raises the signal
    again, which would otherwise end the process before the token file is removed."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def leave(number: int, frame: Any) -> None:
        raise SystemExit(128 + number)

    previous = signal.signal(signal.SIGTERM, leave)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _uvicorn_server(config: Any, ready: Callable[[], None]) -> Any:
    """uvicorn's Server, calling `ready` once it listens (uvicorn itself only logs it)."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets=sockets)
            if self.started and not self.should_exit:
                ready()

    return Server(config)
