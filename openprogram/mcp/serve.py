"""Agentic functions served as MCP tools: `openprogram mcp serve MODULE:FUNCTION ...`.

Owns finding the functions (an import path, or a name plugins register under the
`openprogram.mcp_tools` entry points), the MCP server over stdio or streamable HTTP
(the SDK's low-level Server), running each call as its own recorded session, and
turning return values into MCP content. Start at serve().
"""

from __future__ import annotations

import base64
import contextlib
import importlib
import json
import logging
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any, Literal

from openprogram.echo import cut
from openprogram.errors import ConfigError, UsageError
from openprogram.image import Image, is_image
from openprogram.mcp._sdk import mcp_types
from openprogram.runtime import Runtime
from openprogram.session import Session

__all__ = ["TOOLS_GROUP", "build_server", "find_function", "serve"]

log = logging.getLogger("openprogram")

TOOLS_GROUP = "openprogram.mcp_tools"
"""The entry-point group plugins register servable functions under, e.g. in pyproject.toml
`[project.entry-points."openprogram.mcp_tools"] gui_agent = "gui_harness.mcp:gui_agent_tool"`;
`openprogram mcp serve gui_agent` then serves it."""

ServeTransport = Literal["stdio", "http"]


def find_function(target: str) -> Callable[..., Any]:
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
    if not getattr(fn, "__agentic__", False):
        raise ConfigError(
            f"{target!r} is not an agentic function; decorate it with @agentic_function "
            "(its .spec is the tool's schema)"
        )
    return fn  # type: ignore[no-any-return]


def build_server(
    functions: Sequence[Callable[..., Any]],
    *,
    store: Any = None,
    model: str | None = None,
    name: str = "openprogram",
) -> Any:
    """The SDK's low-level MCP Server offering `functions` (their `.spec`) as tools, each
    call run in its own Session on `store` (None: kept in memory only), with a Runtime
    of `model` when given (else the default: OPENPROGRAM_MODEL)."""
    tools: dict[str, Callable[..., Any]] = {}
    for fn in functions:
        spec_name = fn.spec["name"]  # type: ignore[attr-defined]
        if spec_name in tools:
            raise UsageError(f"two functions are named {spec_name!r}; tool names must be unique")
        tools[spec_name] = fn
    listing = mcp_types.ListToolsResult(
        tools=[
            mcp_types.Tool(
                name=spec["name"],
                description=spec.get("description") or None,
                input_schema=spec["parameters"],
            )
            for spec in (fn.spec for fn in tools.values())  # type: ignore[attr-defined]
        ]
    )

    async def on_list_tools(context: Any, params: Any) -> Any:
        return listing

    async def on_call_tool(context: Any, params: Any) -> Any:
        fn = tools.get(params.name)
        if fn is None:
            return _error(f"there is no tool {params.name!r}; the tools are {sorted(tools)!r}")
        import anyio

        arguments = dict(params.arguments or {})
        return await anyio.to_thread.run_sync(_run, fn, arguments, store, model)

    from mcp.server.lowlevel import Server

    return Server(name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


def _run(fn: Callable[..., Any], arguments: dict[str, Any], store: Any, model: str | None) -> Any:
    """One call in its own recorded session: the result as MCP content, the error as
    an error result; the session's id in the result's `_meta`."""
    schema = fn._arguments_model  # type: ignore[attr-defined]
    try:
        parsed = schema.model_validate(arguments)
    except Exception as exc:
        return _error(f"invalid arguments for {fn.spec['name']}: {cut(str(exc))}")  # type: ignore[attr-defined]
    kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
    runtime = Runtime(model) if model else contextlib.nullcontext()
    with Session(store) as session, runtime:
        try:
            value = fn(**kwargs)
        except Exception as exc:
            result = _error(f"{type(exc).__name__}: {cut(str(exc))}")
        else:
            result = _result(value)
    result.meta = {"openprogram/session": session.id}
    return result


def _error(message: str) -> Any:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=message)], is_error=True
    )


def _result(value: Any) -> Any:
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
    functions: Sequence[Callable[..., Any]],
    *,
    transport: ServeTransport = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    store: Any = None,
    model: str | None = None,
    name: str = "openprogram",
) -> None:
    """Serve `functions` as MCP tools until the client leaves (stdio) or the process is
    stopped (http: `http://HOST:PORT/mcp`). Each call is a session in `store`."""
    import anyio

    server = build_server(functions, store=store, model=model, name=name)
    if transport == "stdio":
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
    elif transport == "http":
        import uvicorn

        app = server.streamable_http_app(host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    else:
        raise UsageError(f"transport={transport!r} is not one of 'stdio', 'http'")
