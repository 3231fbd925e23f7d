"""The `openprogram` command: inspect recorded sessions, serve and evaluate agents, and run
the GUI agent.

Owns the command line (click): `sessions list | show | render | report | export | fork |
check | pending | answer | settle | diff | ops | watch | prune | readers | unread |
serve` over a session store, `chat`, `serve-model`, `mcp`, `eval`, and the commands
plugins register under the `openprogram.commands` entry-point group (gui_harness: demo,
gui, serve, batch, bench). Every failure ends as a ClickException saying what to do. The
root group and plugins are in _root.py, the sessions commands in _sessions.py, each
further command in a module of its own. Start at main().
"""

from __future__ import annotations

import sys

from openprogram.cli._diff import diff_command
from openprogram.cli._eval import eval_command
from openprogram.cli._live import serve_command
from openprogram.cli._mcp import mcp_group
from openprogram.cli._model import chat, serve_model
from openprogram.cli._operations import operations_command
from openprogram.cli._options import (
    DEFAULT_STORE,
    provider_kwargs,
    provider_options,
    store_option,
)
from openprogram.cli._print import say
from openprogram.cli._progress import Progress
from openprogram.cli._prune import prune_command, readers_command, unread_command
from openprogram.cli._questions import question_commands
from openprogram.cli._root import PLUGINS, cli, restore_ctrl_c, run_command
from openprogram.cli._runs import runs_group, watch_command, worker_command
from openprogram.cli._sessions import sessions
from openprogram.cli._stores import find_node, opened_session, opened_store, resolve_id

__all__ = [
    "DEFAULT_STORE",
    "PLUGINS",
    "Progress",
    "cli",
    "main",
    "provider_kwargs",
    "provider_options",
    "run_command",
    "store_option",
]

cli.add_command(serve_model)
cli.add_command(worker_command)
cli.add_command(runs_group)
cli.add_command(chat)
cli.add_command(mcp_group)
cli.add_command(eval_command)
for _command in question_commands(opened_store, resolve_id, opened_session, store_option):
    sessions.add_command(_command)
sessions.add_command(diff_command(opened_session, find_node, store_option))
sessions.add_command(watch_command)
sessions.add_command(prune_command)
sessions.add_command(readers_command)
sessions.add_command(unread_command)
sessions.add_command(serve_command)
sessions.add_command(operations_command(opened_store, resolve_id, store_option))


def main(argv: list[str] | None = None) -> None:
    """Entry point of the `openprogram` script. A missing optional extra (an ImportError
    naming its `pip install` line) is one line, not a traceback. Ctrl-C stops every
    command, whatever the parent process left SIGINT as (restore_ctrl_c)."""
    restore_ctrl_c()
    try:
        cli.main(args=argv, prog_name="openprogram")
    except ImportError as exc:
        if "pip install" not in str(exc):
            raise
        say(f"Error: {' '.join(str(exc).split())}", err=True)
        sys.exit(1)
