"""`openprogram sessions prune --older-than 30d`: retention (Store.prune, store/_prune.py)."""

from __future__ import annotations

import re

import click

from openprogram.cli._options import store_option
from openprogram.cli._print import say
from openprogram.cli._stores import opened_store

__all__ = ["prune_command"]

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

    Never removed: a session with a call running, waiting for a person or unknown, one a
    writer holds, one a fork reads, a queued, running or waiting run.
    """
    seconds = duration(older_than)
    with opened_store(store_spec) as store:
        if not hasattr(store, "prune"):
            raise click.ClickException(f"{store.url} cannot prune sessions")
        report = store.prune(
            older_than=seconds, keep_failed=keep_failed, dry_run=dry_run, compact=not no_compact
        )
    verb = "would remove" if dry_run else "removed"
    say(f"{verb} {len(report.removed)} sessions ({report.nodes} nodes)"
        + ("" if dry_run else f", {report.blobs} images; {report.bytes_before:,} -> "
           f"{report.bytes_after:,} bytes"))  # fmt: skip
    reasons: dict[str, int] = {}
    for why in report.kept.values():
        reasons[why] = reasons.get(why, 0) + 1
    for why, count in sorted(reasons.items()):
        say(f"kept {count}: {why}")
