"""The `openprogram` commands that talk to a model: `serve-model` and `chat`.

Owns their command-line handling; the server is openprogram.testing's OpenAIServer, the
chat loop is chat.py's. cli.py adds these commands to the `openprogram` group.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import click

__all__ = ["serve_model"]


@click.command("serve-model")
@click.option("--port", type=click.IntRange(0, 65535), default=0, show_default=True,
              help="TCP port on 127.0.0.1 (0: any free port).")  # fmt: skip
@click.option(
    "--script",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help='JSON file of replies: a list (["hello", {"tool_calls": [...]}]) served in '
    'order, or {"model-name": [...], "*": [...]} per model. Default: "ok" to everything.',
)
def serve_model(port: int, script: Path | None) -> None:
    """Serve a local OpenAI-compatible model on 127.0.0.1 until Ctrl-C.

    Point litellm at the URL it prints: Runtime("openai/any-name", api_base=URL,
    api_key="test"). Replies come from --script (each request takes the next one; a
    run out script answers a 500 saying so), token usage is counted from the text.
    """
    from openprogram.testing import OpenAIServer

    responder = _read_script(script) if script is not None else None
    try:
        server = OpenAIServer(responder, port=port)
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    with server:
        click.echo(server.url)
        click.echo("serving an OpenAI-compatible model; Ctrl-C stops", err=True)
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            click.echo(f"stopped after {len(server.requests)} request(s)", err=True)


def _read_script(path: Path) -> Any:
    try:
        script = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise click.ClickException(f"cannot read the script {str(path)!r}: {exc}") from exc
    if isinstance(script, list):
        return script
    if isinstance(script, dict) and all(isinstance(v, list) for v in script.values()):
        return script
    raise click.ClickException(
        f"the script {str(path)!r} must hold a JSON list of replies, or an object of lists "
        f'per model name ({{"*": [...]}}), not {type(script).__name__}'
    )
