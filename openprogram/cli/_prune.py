"""Retention on the command line: `openprogram sessions prune --older-than 30d` (Store.prune,
store/_prune.py), and `sessions readers` / `sessions unread READER`, what keeps a session
from prune (Store.readers / unread, store/_readers.py). Start at prune_command.
"""

from __future__ import annotations

import re

import click

from openprogram.cli._options import store_option, text_argument
from openprogram.cli._print import say
from openprogram.cli._stores import opened_store, resolve_id

__all__ = ["prune_command", "readers_command", "unread_command"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def duration(text: str) -> float:
    """Seconds of "30d", "12h", "90m", "45s", "2w" (or a plain number of seconds)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text)
    if found is None:
        raise click.BadParameter(
            f"{text!r} is no duration: write a number and a unit, as 30d, 12h, 90m or 45s",
            param_hint="--older-than",
        )
    return float(found[1]) * _UNITS[found[2] or "s"]


@click.command("prune")
@store_option
@click.option("--older-than", "older_than", required=True, metavar="AGE",
              help="Remove sessions last recorded into longer ago (30d, 12h).")  # fmt: skip
@click.option("--keep-failed", is_flag=True, help="Keep failed sessions too.")
@click.option("--dry-run", is_flag=True, help="Only say what would be removed.")
@click.option("--no-compact", "no_compact", is_flag=True,
              help="Do not shrink the file or tables afterwards (VACUUM).")  # fmt: skip
def prune_command(
    store_spec: str, older_than: str, keep_failed: bool, dry_run: bool, no_compact: bool
) -> None:
    """Remove finished sessions older than --older-than, and images only they used.

    Never removed: a session with a call running, waiting for a person or unknown, one
    with an operation pending, running or unknown, one a writer holds, one a fork reads,
    one a noted reader reads (a dataset made from it, a saved eval report: `sessions
    readers`), a queued, running or waiting run. Says why each old session stays.
    """
    seconds = duration(older_than)
    with opened_store(store_spec) as store:
        if not hasattr(store, "prune"):
            raise click.ClickException(f"{store.url} cannot prune sessions")
        report = store.prune(
            older_than=seconds, keep_failed=keep_failed, dry_run=dry_run, compact=not no_compact
        )
        left = len(store.list_sessions())  # what stays: the kept, and the newer ones
        newer = left - len(report.kept) - (len(report.removed) if dry_run else 0)
    verb = "would remove" if dry_run else "removed"
    say(f"{verb} {_count(len(report.removed), 'session')} ({report.nodes} nodes)"
        + ("" if dry_run else f", {report.blobs} images; {report.bytes_before:,} -> "
           f"{report.bytes_after:,} bytes"))  # fmt: skip
    reasons: dict[str, list[str]] = {}
    for id, why in report.kept.items():
        reasons.setdefault(why, []).append(id)
    for why, ids in sorted(reasons.items()):
        say(f"kept {len(ids)}: {why}: {_some(ids)}")
    if newer > 0:
        say(f"kept {newer}: newer than {older_than.strip()}")


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


def _some(ids: list[str], shown: int = 5) -> str:
    """The first `shown` ids, and how many more."""
    more = f" and {len(ids) - shown} more" if len(ids) > shown else ""
    return ", ".join(ids[:shown]) + more


def _readers_of(store: object) -> dict[str, list[str]]:
    """Session id -> readers, of a store that keeps readers; else a ClickException."""
    readers = getattr(store, "readers", None)
    if not callable(readers):
        raise click.ClickException(f"{getattr(store, 'url', store)} keeps no readers")
    found: dict[str, list[str]] = readers()
    return found


@click.command("readers")
@click.argument("session_id", metavar="[ID]", required=False)
@store_option
def readers_command(store_spec: str, session_id: str | None) -> None:
    """What keeps sessions from `sessions prune`: each noted reader (a dataset made from
    recorded calls, "dataset:NAME"; a saved eval report, "report:ID") and the sessions
    it reads; with ID, that session's readers. `sessions unread READER` lets them go."""
    with opened_store(store_spec) as store:
        readers = _readers_of(store)
        if session_id is not None:
            session_id = resolve_id(store, session_id)
            names = readers.get(session_id, [])
            say(f"{session_id}: " + (_some(names) if names else "no reader noted"))
            return
    sessions: dict[str, list[str]] = {}
    for id, names in readers.items():
        for name in names:
            sessions.setdefault(name, []).append(id)
    if not sessions:
        say("no reader noted: prune keeps no session for a reader")
    for name, ids in sorted(sessions.items()):
        say(f"{name}  {_count(len(ids), 'session')}: {_some(ids)}")


@click.command("unread")
@click.argument("reader", metavar="READER")
@click.argument("session_ids", metavar="[ID]...", nargs=-1)
@store_option
def unread_command(store_spec: str, reader: str, session_ids: tuple[str, ...]) -> None:
    """READER ("dataset:NAME", "report:ID": see `sessions readers`) reads the sessions
    ID... (each a full id or a unique prefix; default: every one it reads) no more:
    prune may remove them once nothing else reads them."""
    reader = text_argument(reader, "READER")
    with opened_store(store_spec) as store:
        readers = _readers_of(store)
        known = sorted({name for names in readers.values() for name in names})
        if reader not in known:
            raise click.ClickException(
                f"no reader {reader!r} in {store.url}"
                + (f"; its readers: {_some(known)}" if known else "; it notes no reader")
            )
        ids = [resolve_id(store, id) for id in session_ids]  # a prefix, as everywhere
        gone = store.unread(reader, ids or None)
    say(f"{reader} reads {_count(gone, 'session')} no more")
