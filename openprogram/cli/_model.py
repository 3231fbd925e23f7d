"""The `openprogram` commands that talk to a model: `serve-model` and `chat`.

Owns their command-line handling; the server is openprogram.testing's OpenAIServer, a
chat turn is chat.py's. cli.py adds these commands to the `openprogram` group.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import click

from openprogram.cli._options import (
    provider_kwargs,
    provider_options,
    store_option,
    text_argument,
)
from openprogram.cli._print import say

__all__ = ["chat", "serve_model"]


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
    try:
        say(server.url)
        say("serving an OpenAI-compatible model; Ctrl-C stops", err=True)
        while True:  # Python runs a signal's handler in the main thread only, and a
            time.sleep(_WAKE_S)  # SIGINT the kernel gave a server thread wakes no wait
    except KeyboardInterrupt:
        pass
    finally:
        _stop(server)
    say(f"stopped after {len(server.requests)} request(s)", err=True)


_WAKE_S = 0.2
"""How often serve-model's main thread wakes to run a signal's handler."""
_STOP_S = 10.0
"""How long serve-model waits for its server to stop before it leaves anyway."""


def _stop(server: Any) -> None:
    """Stop `server` within _STOP_S seconds: its threads are daemons, so a stop that
    hangs (a stuck client, a loaded machine) is left behind when the process exits."""
    stopping = threading.Thread(target=server.stop, name="openprogram-serve-stop", daemon=True)
    stopping.start()
    stopping.join(_STOP_S)
    if stopping.is_alive():
        say(f"the server did not stop within {_STOP_S:g} s; leaving it", err=True)


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


@click.command("chat")
@click.option(
    "--model",
    envvar="OPENPROGRAM_MODEL",
    required=True,
    help="litellm model string, e.g. openai/gpt-4o-mini (env OPENPROGRAM_MODEL).",
)
@click.option("--session", "session_id", help="Continue this recorded conversation.")
@store_option
@provider_options
@click.option("--system", help="System prompt for every answer.")
@click.option(
    "--max-cost",
    type=float,
    default=None,
    metavar="USD",
    help="Stop the conversation once its answers cost this many US dollars, counted "
    "over every invocation continuing it (a shared budget in --store).",
)
def chat(
    model: str,
    session_id: str | None,
    store_spec: str,
    api_base: str | None,
    api_key_env: str | None,
    system: str | None,
    max_cost: float | None,
) -> None:
    """Chat with a model, one line a message; every turn is recorded in a session.

    Reads messages from standard input (a terminal or a pipe) until end of input or
    /exit, and streams each answer to standard output. The session id is printed on
    standard error; --session ID continues that conversation later, with every earlier
    turn in view of the model. --max-cost USD caps what the whole conversation spends
    (a SharedBudget named chat:ID, kept in --store).
    """
    from openprogram import BudgetManager, Callback, Runtime, SharedBudget
    from openprogram.callbacks.budget_shared import check_limits
    from openprogram.errors import OpenProgramError
    from openprogram.session.chat import chat_turn

    class _Printer(Callback):
        def on_llm_chunk(self, node: Any, chunk: str) -> None:
            say(chunk, nl=False)  # a model's text: its escapes never reach the terminal

    callbacks: list[Any] = [_Printer()]
    try:
        options = provider_kwargs(api_base, api_key_env)
        check_limits(max_cost, None, None, None)  # before a session is made for nothing
        session = _chat_session(store_spec, session_id)
        if max_cost is not None:  # the conversation's, however many invocations it spans
            shared = SharedBudget(f"chat:{session.id}", max_cost=max_cost)
            callbacks.append(BudgetManager(shared=shared))
        runtime = Runtime(model, callbacks=callbacks, system=system, **options)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    turns = len(session.dag.find(name="respond", kind="code"))
    resumed = f", continuing after {turns} message(s)" if turns else ""
    again = _continue_command(
        model, session.id, store_spec, api_base, system, max_cost, api_key_env
    )
    say(f"session {session.id}{resumed}; continue it later with: {again}", err=True)
    stdin = sys.stdin
    interactive = stdin.isatty()
    with session, runtime:
        while True:
            if interactive:
                say("you> ", nl=False, err=True)
            line = stdin.readline()
            text = line.strip()
            if not line or text == "/exit":
                break
            if not text:
                continue
            try:
                chat_turn(session, text)
            except OpenProgramError as exc:
                say("")
                raise click.ClickException(
                    f"{exc} (the conversation so far is kept in session {session.id})"
                ) from exc
            say("")


def _continue_command(
    model: str,
    session_id: str,
    store: str,
    api_base: str | None,
    system: str | None,
    max_cost: float | None = None,
    api_key_env: str | None = None,
) -> str:
    """The command that continues this conversation, pasteable into a shell: the same
    model, store (a file as an absolute path), server, system prompt and cost cap, each
    quoted; a store's password masked (never printed: type it in)."""
    import shlex

    from openprogram.echo import mask_url

    if "://" not in store and store != "memory":
        store = os.path.abspath(store)
    words = ["openprogram", "chat", "--model", model, "--session", session_id,
             "--store", mask_url(store)]  # fmt: skip
    if api_base:
        words += ["--api-base", mask_url(api_base)]
    if api_key_env:
        words += ["--api-key-env", api_key_env]
    if system:
        words += ["--system", system]
    if max_cost is not None:
        words += ["--max-cost", repr(max_cost)]
    return " ".join(shlex.quote(word) for word in words)


def _chat_session(store_spec: str, session_id: str | None) -> Any:
    """The session to chat in: ID reopened when the store has it, else a new one."""
    from openprogram import Session
    from openprogram.store import open_store

    if session_id is None:
        return Session(store_spec)
    text_argument(session_id, "--session")
    store, _ = open_store(store_spec)
    known = store is not None and store.session(session_id) is not None
    if store is not None:
        store.close()
    return Session.open(store_spec, session_id) if known else Session(store_spec, id=session_id)
