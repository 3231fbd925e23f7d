"""MCPTool: one tool of an MCP server, as a tool object for `llm(tools=...)`.

Owns the tool's spec (the server's schema under the name `{server}_{tool}`), checking a
model's arguments against that schema, recording each call as a tool code node (an
agentic function made for the call's argument names, so resume, replay and callbacks
work as for any tool), and turning results into values (text, Image, structured).
client.py owns the connection. Start at MCPTool.__call__().
"""

from __future__ import annotations

import base64
import binascii
import copy
import dataclasses
import hashlib
import inspect
import keyword
import re
from collections.abc import Callable, Coroutine
from typing import Any, Protocol

from openprogram.agentic.ask import ask_user
from openprogram.agentic.function import agentic_function
from openprogram.agentic.questions import approval
from openprogram.core import _context
from openprogram.core.dag import dag_of
from openprogram.core.image import Image, ImageRef
from openprogram.echo import cut, echo
from openprogram.errors import ConfigError, MCPServerError
from openprogram.mcp import _loop
from openprogram.mcp._schema import SchemaTooSlow, bounded_validator, problems
from openprogram.session.replay import ReplayModel

__all__ = [
    "DescribedTool",
    "MCPTool",
    "ToolServer",
    "check_namespace",
    "public_names",
    "tool_name",
    "tool_prefix",
]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_RESERVED = {"runtime", "self", "cls", "arguments"}


def tool_name(server: str, tool: str) -> str:
    """`{server}_{tool}` with characters providers refuse replaced by `_`, at most 64."""
    return _UNSAFE.sub("_", f"{server}_{tool}")[:64]


def tool_prefix(server: str) -> str:
    """How every tool name of `server` starts: `{server}_`, sanitised as tool_name()."""
    return _UNSAFE.sub("_", f"{server}_")


def check_namespace(server: str, tool: str, name: str, others: list[str]) -> None:
    """ConfigError when `name` lies among the names of another server (of `others`)
    with a longer name: server `git` listing `hub_create` would take `git_hub_create`,
    a name of server `git_hub`'s tools. The longer name owns them, whoever lists first."""
    for other in others:
        prefix = tool_prefix(other)
        if len(prefix) > len(tool_prefix(server)) and name.startswith(prefix):
            raise ConfigError(
                f"MCP server {server!r}: tool {tool!r} would be named {name!r}, a name of MCP "
                f"server {other!r}'s tools; rename one of the servers"
            )


def check_listed_once(server: str, tool: str, times: int) -> None:
    """ConfigError when a server lists `tool` more than once: a call names a tool only
    by its name, so which of them would run is the server's guess."""
    if times > 1:
        raise ConfigError(
            f"MCP server {server!r} lists the tool {echo(tool, 80)} {times} times; a call "
            "names a tool only by its name, so none of them is offered (the server must "
            "name each tool once)"
        )


def public_names(server: str, tools: list[str]) -> dict[str, str]:
    """The name the model sees for each of a server's tools: tool_name(), except where
    several tools would share one (`a.b`, `a_b`, `a b`). Then the tool whose name needed
    no change keeps it and each other one ends in `_` and 6 hex digits of its own name's
    hash: the same names whatever order the server lists them in."""
    wanted: dict[str, list[str]] = {}
    for tool in tools:
        wanted.setdefault(tool_name(server, tool), []).append(tool)
    names = {}
    for name, holders in wanted.items():
        for tool in holders:
            if len(holders) == 1 or name == f"{server}_{tool}":
                names[tool] = name
            else:
                digest = hashlib.sha256(tool.encode("utf-8", "surrogatepass")).hexdigest()
                names[tool] = f"{name[:57]}_{digest[:6]}"
    return names


class ToolServer(Protocol):
    """What a tool uses of its server (client.py's MCPServer, the layer above): its name,
    its timeout in seconds, and a call of one of its tools, run on the MCP loop."""

    @property
    def name(self) -> str: ...

    @property
    def timeout(self) -> float: ...

    def call(self, tool: str, arguments: dict[str, Any]) -> Coroutine[Any, Any, object]: ...


class DescribedTool(Protocol):
    """A tool as its server lists it (the SDK's `Tool`): its name, description and input
    schema; an `output_schema` is read when it has one."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str | None: ...

    @property
    def input_schema(self) -> dict[str, Any]: ...


@dataclasses.dataclass(init=False, eq=False, repr=False)
class MCPTool:
    """A tool of an MCPServer. Pass it in `llm(tools=[...])` (or the whole
    `server.tools()`); call it yourself with keyword arguments for the same recorded call.

    `.spec` is what the model sees (`name`, `description`, `parameters`), `.server` and
    `.tool` say where it runs. A server error, a timeout or a broken connection raises
    MCPServerError, which the tool loop hands back to the model.
    """

    # what a recorded argument holding this tool stores (values.py stores a dataclass
    # by its fields); the connection it calls through is left out
    name: str
    tool: str
    spec: dict[str, Any]

    def __init__(
        self,
        server: ToolServer,
        described: DescribedTool,
        *,
        render_output: Callable[[Any], Any] | None = None,
        name: str | None = None,
    ) -> None:
        self.server = server
        self.described = described
        self.tool: str = described.name
        self.name = name or tool_name(server.name, described.name)
        schema = dict(described.input_schema or {"type": "object"})
        schema.pop("$schema", None)  # some providers refuse the draft marker
        self._validator = bounded_validator(server.name, described.name, described.input_schema)
        output_schema = getattr(described, "output_schema", None)
        self._output_validator = (
            None
            if output_schema is None
            else bounded_validator(server.name, described.name, output_schema, what="output")
        )
        self.spec: dict[str, Any] = {
            "name": self.name,
            "description": (described.description or "").strip(),
            "parameters": schema,
        }
        self.render_output = render_output
        self.question: Callable[..., str] | bool | None = None
        self._recorders: dict[tuple[tuple[str, ...], bool], Any] = {}

    def __repr__(self) -> str:
        return f"<MCPTool {self.name} ({self.server.name!r}: {self.tool!r})>"

    def needs_approval(self, *, question: Callable[..., str] | None = None) -> MCPTool:
        """This tool asking the user before each call (what `openprogram.needs_approval`
        does for it): "Allow <name>(<arguments>)?", or `question(**arguments)`; a "no"
        runs nothing and the model is told the call was declined (`meta["declined"]`)."""
        approving: MCPTool = copy.copy(self)
        approving.question = question or True
        approving._recorders = {}
        return approving

    def validate(self, arguments: object) -> tuple[dict[str, Any], str | None]:
        """(arguments, None), or ({}, what is wrong) for the model to read."""
        if not isinstance(arguments, dict):
            return {}, (
                f"the arguments of {self.name} are not a JSON object: {echo(arguments)}. "
                "Call it again with a JSON object matching its parameters."
            )
        try:
            found = problems(self._validator, arguments, self.server.timeout)
        except SchemaTooSlow:
            return {}, (
                f"the arguments of {self.name} could not be checked against its schema "
                f"within {self.server.timeout:g} s (the MCP server's timeout); the tool was "
                "not called. Its schema is too costly to check: do not call it again."
            )
        if found:
            return {}, (
                f"invalid arguments for {self.name}: {_described(found)}. Call it again "
                "with arguments matching its schema."
            )
        return dict(arguments), None

    def __call__(self, **arguments: Any) -> Any:
        """Call the tool (recorded as a code node); its result as a value."""
        return self._recorder(arguments, is_async=False)(**_as_parameters(arguments))

    async def acall(self, **arguments: Any) -> Any:
        """As calling it, from async code (the tool loop of allm uses this)."""
        return await self._recorder(arguments, is_async=True)(**_as_parameters(arguments))

    def _recorder(self, arguments: dict[str, Any], *, is_async: bool) -> Any:
        """The agentic function recording a call with these argument names (made once
        per set of names, so the node's input is exactly the arguments given)."""
        names = tuple(sorted(arguments)) if _plain(arguments) else ("arguments",)
        key = (names, is_async)
        recorder = self._recorders.get(key)
        if recorder is None:
            recorder = self._recorders[key] = self._make_recorder(names, is_async)
        return recorder

    def _make_recorder(self, names: tuple[str, ...], is_async: bool) -> Any:
        server, tool, name, question = self.server, self.tool, self.name, self.question
        output = self._output_validator

        def given(parameters: dict[str, Any]) -> dict[str, Any]:
            if names == ("arguments",):
                return dict(parameters["arguments"])
            return parameters

        run: Callable[..., Any]
        if is_async:

            async def arun(**parameters: Any) -> Any:
                replayed = _begin(server.name, tool)
                if replayed is not _LIVE:
                    return replayed
                arguments = given(parameters)
                if question and not _approved(name, arguments, question):
                    return _DECLINED.format(name=name)
                result = await _loop.arun(server.call(tool, arguments))
                return _value(server, tool, result, output)

            run = arun
        else:

            def srun(**parameters: Any) -> Any:
                replayed = _begin(server.name, tool)
                if replayed is not _LIVE:
                    return replayed
                arguments = given(parameters)
                if question and not _approved(name, arguments, question):
                    return _DECLINED.format(name=name)
                result = _loop.run(server.call(tool, arguments))
                return _value(server, tool, result, output)

            run = srun

        run.__name__ = run.__qualname__ = self.name
        run.__doc__ = self.spec["description"]
        run.__signature__ = inspect.Signature(  # type: ignore[union-attr]  # read by inspect
            [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names]
        )
        return agentic_function(render_output=self.render_output)(run)


def _plain(arguments: dict[str, Any]) -> bool:
    """Whether every argument name can be a Python keyword parameter of its own."""
    return all(
        isinstance(n, str) and n.isidentifier() and not keyword.iskeyword(n) and n not in _RESERVED
        for n in arguments
    )


def _as_parameters(arguments: dict[str, Any]) -> dict[str, Any]:
    return dict(arguments) if _plain(arguments) else {"arguments": dict(arguments)}


_LIVE = object()
_DECLINED = (
    "the user declined this call of {name}; it did not run. Do not call it again unless "
    "the user asks for it."
)


def _approved(name: str, arguments: dict[str, Any], question: Any) -> bool:
    """Ask the user (ask_user: recorded, resumable) whether this call may run; a "no"
    is noted on the call's node as `meta["declined"]`."""
    # by default every argument is shown, escaped: a server's names and a model's values
    text = question(**arguments) if callable(question) else approval(name, arguments)
    if ask_user(text, choices=["yes", "no"]) == "yes":
        return True
    node = _context.current_session().dag.get(_context.frame_id())
    if node is not None:
        node.meta["declined"] = True
    return False


def _begin(server: str, tool: str) -> Any:
    """Note on the running call's node where it runs (`meta["mcp"]`); under a
    ReplayModel, the recorded result of the same call instead of asking the server
    (an error recorded raises again), else _LIVE."""
    frame = _context.frame_id()
    session = _context.current_session()
    node = session.dag.get(frame) if frame is not None else None
    if node is None:
        return _LIVE
    node.meta["mcp"] = {"server": server, "tool": tool}
    model = getattr(_context.live_runtime(), "model", None)
    if not isinstance(model, ReplayModel) or "tool_call_id" not in node.meta:
        return _LIVE
    recorded = model.tool_result(session.dag, node)
    if recorded is None:
        return _LIVE
    if recorded.status != "completed":
        raise MCPServerError(f"{server}/{tool} (as recorded): {recorded.error}")
    return _revive(recorded.output, dag_of(recorded))


def _revive(value: Any, dag: Any) -> Any:
    """A recorded output with its images as Images (read from the recording's DAG)."""
    if isinstance(value, ImageRef):
        return dag.image(value) if dag is not None else value
    if isinstance(value, list):
        return [_revive(v, dag) for v in value]
    if isinstance(value, dict):
        return {k: _revive(v, dag) for k, v in value.items()}
    return value


def _described(errors: list[Any]) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {cut(e.message)}" for e in errors[:5]
    )


def _value(server: ToolServer, tool: str, result: Any, output: Any) -> Any:
    """A CallToolResult as the call's value: the structured content when there is
    some, else the text (one text block), an Image, or a list of texts and Images.
    A result marked as an error, or structured content that does not match the tool's
    output schema (checked within the server's timeout), raises MCPServerError."""
    parts: list[Any] = []
    for block in result.content or []:
        kind = getattr(block, "type", None)
        if kind == "text":
            parts.append(block.text)
        elif kind == "image":
            parts.append(_image(block.data, block.mime_type))
        elif kind == "resource_link":
            parts.append({"resource_link": str(block.uri), "name": block.name})
        elif kind == "resource":
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(
                {"resource": str(resource.uri), "text": text}
                if text is not None
                else {"resource": str(resource.uri), "mime_type": resource.mime_type}
            )
        else:  # audio and anything newer: described, not passed on
            parts.append({"content": kind, "mime_type": getattr(block, "mime_type", None)})
    if getattr(result, "is_error", False):
        text = " ".join(p for p in parts if isinstance(p, str)) or "the tool failed"
        raise MCPServerError(f"{server.name}/{tool}: {text}")
    structured = getattr(result, "structured_content", None)
    if output is not None:
        _check_output(server, tool, structured, output)
    if structured is not None:
        return structured
    if len(parts) == 1:
        return parts[0]
    return parts


def _check_output(server: ToolServer, tool: str, structured: Any, output: Any) -> None:
    where = f"{server.name}/{tool}"
    if structured is None:
        raise MCPServerError(f"{where} has an output schema but sent no structured content")
    try:
        found = problems(output, structured, server.timeout)
    except SchemaTooSlow:
        raise MCPServerError(
            f"{where}: its structured result could not be checked against its output "
            f"schema within {server.timeout:g} s (the MCP server's timeout)"
        ) from None
    if found:
        raise MCPServerError(
            f"{where} sent structured content not matching its output schema: {_described(found)}"
        )


def _image(data: str, mime_type: str) -> Any:
    try:
        return Image(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError, OSError) as exc:
        return {"image": mime_type, "error": f"undecodable image data: {exc}"}
