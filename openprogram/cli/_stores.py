"""Opening what a command names: a store (--store), a session by id or unique prefix, a
node by reference; each failure a ClickException saying what to do. Start at
opened_session.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from openprogram.cli._options import text_argument
from openprogram.cli._print import say
from openprogram.core.dag import ContextDAG, Node
from openprogram.echo import echo, mask_url
from openprogram.errors import OpenProgramError

if TYPE_CHECKING:
    from openprogram.store.base import Store

__all__ = ["find_node", "opened_session", "opened_store", "resolve_id"]


@contextmanager
def opened_store(spec: str) -> Iterator[Any]:
    from openprogram.store import open_store

    if spec in ("memory", ":memory:", "sqlite:///:memory:"):
        raise click.ClickException(
            f"--store {echo(spec)} is in memory and keeps nothing between processes; pass a "
            "SQLite file or a postgresql:// URL"
        )
    if "://" not in spec and not Path(spec).expanduser().exists():
        raise click.ClickException(
            f"no session store at {echo(spec)}. Record runs into it with Session({echo(spec)}), "
            "or point --store (or OPENPROGRAM_STORE) at an existing store."
        )
    try:
        store, _ = open_store(spec)
    except (OpenProgramError, ImportError) as exc:  # ImportError names the extra to install
        raise click.ClickException(str(exc)) from exc
    if store is None:
        raise click.ClickException(
            "an in-memory store keeps nothing between processes; pass --store with a "
            "SQLite file or a postgresql:// URL"
        )
    try:
        yield store
    except OpenProgramError as exc:  # a store failing mid-command: its message says why
        raise click.ClickException(str(exc)) from exc
    finally:
        store.close()


def resolve_id(store: Store, session_id: str) -> str:
    if store.session(text_argument(session_id, "ID")) is not None:
        return session_id
    known: list[str] = [info.id for info in store.list_sessions()]
    matches = [s for s in known if s.startswith(session_id)]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise click.ClickException(
            f"{echo(session_id)} matches {len(matches)} sessions ({', '.join(matches[:5])}); "
            "give more characters"
        )
    recent = ", ".join(known[-5:]) or "none"
    raise click.ClickException(
        f"no session {echo(session_id)} in {mask_url(store.url)} (recent: {recent}). "
        "List them with `openprogram sessions list`."
    )


@contextmanager
def opened_session(spec: str, session_id: str) -> Iterator[Any]:
    from openprogram.session.session import Session

    with opened_store(spec) as store:
        full_id = resolve_id(store, session_id)
        started = time.perf_counter()
        try:
            session = Session.open(store, full_id)
        except OpenProgramError as exc:
            raise click.ClickException(str(exc)) from exc
        took = time.perf_counter() - started
        if took > 1:
            say(f"loaded {len(session.dag):,} nodes in {took:.1f} s", err=True)
        yield session


def find_node(dag: ContextDAG, reference: str) -> Node:
    from openprogram.display.calls import resolve_node

    try:
        return resolve_node(dag, reference)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
