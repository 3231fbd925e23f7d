"""The `openprogram sessions ops` command: a session's operations, waited for or cancelled.

Owns its command-line handling; the operations and their states are
openprogram/operations/'s (this module sits below cli.py and never imports it).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import click

from openprogram.cli._print import json_text, say, styled
from openprogram.display.operations import collapsed
from openprogram.echo import elide

__all__ = ["operations_command"]

_COLOUR = {"done": "green", "failed": "red", "running": "yellow", "pending": "cyan",
           "cancelled": "bright_black", "unknown": "bright_magenta"}  # fmt: skip


def operations_command(
    opened_store: Callable[[str], Any],
    resolve_id: Callable[[Any, str], str],
    store_option: Callable[[Any], Any],
) -> click.Command:
    """`sessions ops`, built on cli.py's store opener."""

    @click.command("ops")
    @click.argument("session_id", metavar="ID")
    @store_option
    @click.option("--wait", "wait_for", metavar="OP", help="Wait until operation OP ends.")
    @click.option("--timeout", type=float, default=60.0, show_default=True,
                  help="Seconds --wait waits at most.")  # fmt: skip
    @click.option("--cancel", metavar="OP", help="Cancel operation OP (pending or running).")
    @click.option("--events", is_flag=True,
                  help="Show each operation's history: every state it was in, when, and "
                  "who asked it to stop or settled it.")  # fmt: skip
    @click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")
    def ops_command(
        session_id: str,
        store_spec: str,
        wait_for: str | None,
        timeout: float,
        cancel: str | None,
        events: bool,
        as_json: bool,
    ) -> None:
        """List the operations a session's tools returned (background work among them):
        kind, state, attempts, result or error; --events adds each one's history (every
        state change with its time, who asked it to stop, who settled it). --wait OP
        polls the store until OP is done, failed, cancelled or unknown; --cancel OP asks
        OP to stop: a pending one is cancelled at once, a running one by the program
        running it, at the operation's next heartbeat (add --wait OP to see it end)."""
        from openprogram.core import _secrets
        from openprogram.operations._records import record_of

        with opened_store(store_spec) as store:
            sid = resolve_id(store, session_id)
            rows = getattr(store, "operations", None)
            if rows is None:
                raise click.ClickException(f"the store {store.url} records no operations")
            if cancel is not None:
                _cancel(store, sid, cancel)
            records = [record_of(row) for row in rows(sid)]
            if wait_for is not None:
                if not any(r.id == wait_for for r in records):
                    raise click.ClickException(f"session {sid} has no operation {wait_for!r}")
                deadline = time.monotonic() + timeout
                while True:
                    (record,) = [r for r in records if r.id == wait_for]
                    if record.state not in ("pending", "running"):
                        break
                    if time.monotonic() >= deadline:
                        raise click.ClickException(
                            f"operation {wait_for} is still {record.state} after {timeout:g} s"
                        )
                    time.sleep(0.2)  # another process records it: the store is polled
                    records = [record_of(row) for row in rows(sid)]
                records = [record]
            history: dict[str, list[dict[str, Any]]] = {}
            read = getattr(store, "operation_events", None)
            if events and callable(read):
                for event in read(sid):
                    history.setdefault(event.operation, []).append(event._asdict())
        # masked as stored; a row written raw before masking covered operations is masked here
        dumped = _secrets.scrub_value([r.model_dump(mode="json") for r in records])
        history = _secrets.scrub_value(history)
        if as_json:
            if events:
                for row in dumped:
                    row["events"] = history.get(row["id"], [])
            say(json_text(dumped, indent=2))
            return
        if not records:
            say(styled(f"session {sid} has no operations", newlines=False))
        for r, shown in zip(records, dumped, strict=True):
            done = json_text(shown["result"]) if r.state == "done" else ""
            outcome = shown["error"] if r.error else done
            say(
                styled(r.id, newlines=False, bold=True),
                f"  {r.kind} v{r.version}  ",
                styled(r.state, newlines=False, fg=_COLOUR.get(r.state)),
                f"  attempts={r.attempts}{'  background' if r.background else ''}  ",
                styled(elide(outcome or "", 200), newlines=False, dim=True),
            )
            for event, count, last in collapsed(_Event(**e) for e in history.get(r.id, [])):
                again = f" (×{count}, the last at {_when(last)})" if count > 1 else ""
                say(
                    f"    {_when(event.at)}  ",
                    styled(f"{event.state:<9}", newlines=False, fg=_COLOUR.get(event.state)),
                    "  ",
                    styled(elide(event.detail or "", 300) + again, newlines=False),
                )

    return ops_command


class _Event(NamedTuple):
    operation: str
    at: float
    state: str
    detail: str | None


def _when(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d} UTC"


def _cancel(store: Any, sid: str, id: str) -> None:
    """`--cancel OP`: record the request (any process may: the store keeps it), then
    cancel a pending operation at once when no program holds the session; a program
    that does, stops it itself (a pending one before it starts, a running one at its
    next heartbeat)."""
    from openprogram.agentic.questions import answerer
    from openprogram.errors import SessionLocked
    from openprogram.operations.tracker import tracker
    from openprogram.session.session import Session

    ask = getattr(store, "request_cancel", None)
    if ask is None:
        raise click.ClickException(f"the store {store.url} takes no cancel requests")
    state = ask(sid, id, at=time.time(), by=answerer())
    if state is None:
        found = [row for row in store.operations(sid) if row.id == id]
        if not found:
            raise click.ClickException(f"session {sid} has no operation {id!r}")
        raise click.ClickException(f"operation {id} is {found[0].state}: it is not running")
    session = Session.open(store, sid)
    try:
        with session:  # no program runs the session: a pending one is cancelled here
            record = tracker(session).cancel(id)
    except SessionLocked:  # a program runs it: it acts on the request
        say(f"asked operation {id} to stop: the program running session {sid} stops it")
        return
    finally:
        session.close()
    if record.state == "running":  # its program ended while it ran: nobody runs it now
        say(
            f"asked operation {id} to stop: it was running when its program ended; the "
            "session's next resumed run cancels it instead of running it (one of kind "
            "effect='once' becomes unknown: it may have happened)"
        )
