"""The `openprogram sessions diff` command: two runs, or two calls, side by side.

Owns its command-line handling; the diff is display/diff.py's. cli.py adds it to its
`sessions` group, handing over how it opens sessions and names nodes (this module sits
below cli.py and never imports it).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

import click

from openprogram.cli._print import say, styled

__all__ = ["diff_command"]


def diff_command(
    opened_session: Callable[[str, str], AbstractContextManager[Any]],
    node: Callable[[Any, str], Any],
    store_option: Callable[[Any], Any],
) -> click.Command:
    """The command, built on cli.py's session opener and node resolver."""

    @click.command("diff")
    @click.argument("first", metavar="A")
    @click.argument("second", metavar="B")
    @click.argument("third", metavar="[C]", required=False)
    @store_option
    def diff(first: str, second: str, third: str | None, store_spec: str) -> None:
        """Show how two sessions differ (A B: two session ids), or two calls of one
        session (ID NODE NODE: ids, name#k or llm:name#k).

        \b
        Sessions: one line per call (name #k, status, input, output), as a unified diff.
        Two llm calls: what each saw and replied, line by line. Exits with status 1 when
        they differ, 0 when they are alike.
        """
        from openprogram.display.diff import node_diff, session_diff

        if third is None:
            with opened_session(store_spec, first) as a, opened_session(store_spec, second) as b:
                lines = session_diff(a.dag, b.dag, labels=(a.id, b.id))
        else:
            with opened_session(store_spec, first) as session:
                dag = session.dag
                left, right = node(dag, second), node(dag, third)
                labels = (f"{second} ({left.id})", f"{third} ({right.id})")
                lines = node_diff(dag, left, dag, right, labels=labels)
        if not lines:
            say("no differences", err=True)
            return
        for line in lines:
            colour = {"+": "green", "-": "red", "@": "cyan"}.get(line[:1])
            bold = line.startswith(("+++", "---"))
            say(styled(line, fg=None if bold else colour, bold=bold))
        raise SystemExit(1)

    return diff
