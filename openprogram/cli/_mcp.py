"""The `openprogram mcp` commands: `mcp serve` serves agentic functions as MCP tools.

Owns their command-line handling; the server is openprogram.mcp.serve's, imported when
the command runs (the SDK is an extra). cli.py adds this group to `openprogram`.
"""

from __future__ import annotations

import click

from openprogram.cli._options import provider_kwargs, provider_options, store_option

__all__ = ["mcp_group"]


@click.group("mcp")
def mcp_group() -> None:
    """Model Context Protocol: serve agentic functions as MCP tools."""


@mcp_group.command("serve")
@click.argument("targets", nargs=-1, required=True, metavar="MODULE:FUNCTION...")
@click.option("--transport", type=click.Choice(["stdio", "http"]), default="stdio",
              show_default=True, help="stdio for a client that starts this command; http "
              "for a streamable HTTP endpoint at http://HOST:PORT/mcp.")  # fmt: skip
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="TCP port of the http transport (0: a free one, named in the line "
              "printed when it listens).")  # fmt: skip
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address the http transport listens on; one that is not loopback needs "
              "--allow-remote.")  # fmt: skip
@click.option("--allow-remote", is_flag=True,
              help="Let --host be an address other machines reach (the token is still "
              "needed; put TLS in front).")  # fmt: skip
@click.option("--token-file", type=click.Path(dir_okay=False), default=None,
              help="Where the http transport writes this start's token (0600; default "
              "$XDG_RUNTIME_DIR/openprogram/mcp-PORT.token, else "
              "~/.local/share/openprogram/runtime/mcp-PORT.token).")  # fmt: skip
@click.option("--max-calls", type=click.IntRange(1, 1024), default=16, show_default=True,
              help="Calls of one tool that run at once; more wait their turn.")  # fmt: skip
@click.option("--max-tasks", type=click.IntRange(1, 4096), default=64, show_default=True,
              help="Background tasks working at once in this server; a call past it is "
              "refused.")  # fmt: skip
@click.option("--max-client-tasks", type=click.IntRange(1, 4096), default=16,
              show_default=True, help="Background tasks working at once of one connection; "
              "a call past it is refused.")  # fmt: skip
@store_option
@click.option("--model", default=None, help="Model of the functions' llm() calls (default: "
              "OPENPROGRAM_MODEL).")  # fmt: skip
@provider_options
@click.option("--name", default="openprogram", show_default=True,
              help="The server's name, as clients show it.")  # fmt: skip
def serve_command(
    targets: tuple[str, ...],
    transport: str,
    port: int,
    host: str,
    allow_remote: bool,
    token_file: str | None,
    max_calls: int,
    max_tasks: int,
    max_client_tasks: int,
    store_spec: str,
    model: str | None,
    api_base: str | None,
    api_key_env: str | None,
    name: str,
) -> None:
    """Serve agentic functions as MCP tools (their .spec is the schema, their docstring
    the description); each call is recorded as a session in the store.

    \b
    TARGETS are MODULE:FUNCTION paths, or names plugins register (gui_agent):
      openprogram mcp serve mypackage.agents:research
      openprogram mcp serve gui_agent --transport http --port 8765

    Over http, clients send the token written to --token-file as 'Authorization: Bearer
    <token>'; a new one is made at every start.
    """
    from openprogram.errors import OpenProgramError

    try:
        from openprogram.mcp.serve import find_function, serve
    except ImportError as exc:
        raise click.ClickException(str(exc)) from exc
    try:
        functions = [find_function(target) for target in targets]
        provider = provider_kwargs(api_base, api_key_env)
        serve(functions, transport=transport, host=host, port=port, store=store_spec,  # type: ignore[arg-type]
              model=model, name=name, max_calls=max_calls, **provider,
              max_tasks=max_tasks, max_client_tasks=max_client_tasks,
              allow_remote=allow_remote, token_file=token_file)  # fmt: skip
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    except KeyboardInterrupt:  # Ctrl-C is how a server is stopped: not click's "Aborted!"
        click.echo("openprogram mcp serve: stopped", err=True)
