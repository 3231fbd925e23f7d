"""The `openprogram mcp` commands: `mcp serve` serves agentic functions as MCP tools.

Owns their command-line handling; the server is openprogram.mcp.serve's, imported when
the command runs (the SDK is an extra). cli.py adds this group to `openprogram`.
"""

from __future__ import annotations

import click

__all__ = ["mcp_group"]


@click.group("mcp")
def mcp_group() -> None:
    """Model Context Protocol: serve agentic functions as MCP tools."""


@mcp_group.command("serve")
@click.argument("targets", nargs=-1, required=True, metavar="MODULE:FUNCTION...")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True, help="stdio for a client that starts this command; http "
              "for a streamable HTTP endpoint at http://HOST:PORT/mcp.")  # fmt: skip
@click.option("--port", type=click.IntRange(1, 65535), default=8000, show_default=True,
              help="TCP port of the http transport.")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address the http transport listens on.")  # fmt: skip
@click.option("--store", "store_spec", envvar="OPENPROGRAM_STORE", default="openprogram.db",
              show_default=True, metavar="PATH|URL",
              help="Session store each call is recorded in (env OPENPROGRAM_STORE).")  # fmt: skip
@click.option("--model", default=None, help="Model of the functions' llm() calls (default: "
              "OPENPROGRAM_MODEL).")  # fmt: skip
@click.option("--name", default="openprogram", show_default=True,
              help="The server's name, as clients show it.")  # fmt: skip
def serve_command(
    targets: tuple[str, ...],
    transport: str,
    port: int,
    host: str,
    store_spec: str,
    model: str | None,
    name: str,
) -> None:
    """Serve agentic functions as MCP tools (their .spec is the schema, their docstring
    the description); each call is recorded as a session in the store.

    \b
    TARGETS are MODULE:FUNCTION paths, or names plugins register (gui_agent):
      openprogram mcp serve mypackage.agents:research
      openprogram mcp serve gui_agent --transport http --port 8765
    """
    from openprogram.errors import OpenProgramError

    try:
        from openprogram.mcp.serve import find_function, serve
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        functions = [find_function(target) for target in targets]
        serve(functions, transport=transport, host=host, port=port, store=store_spec,  # type: ignore[arg-type]
              model=model, name=name)  # fmt: skip
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
