"""open_store(): from what a user passes as `Session(store=...)` to a Store.

Owns the spelling of stores: None/"memory", a file path, "sqlite:///relative.db" or
"sqlite:////absolute.db" (with an optional "?synchronous=FULL"), "postgresql://...",
or any object implementing the Store protocol.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import parse_qs

from openprogram.echo import echo
from openprogram.errors import UsageError
from openprogram.store.base import Store

__all__ = ["open_store"]

_POSTGRES = ("postgresql://", "postgres://")


def open_store(
    spec: object, *, read_only: bool = False, check: bool = True
) -> tuple[Store | None, bool]:
    """The store `spec` names and whether the caller opened it (and so should close it).

    None or "memory": no store (the DAG lives in memory only, nothing is recorded).
    read_only, check: passed to a SQLiteStore (see there). Raises UsageError for
    anything else that is not a store.
    """
    if spec is None or spec == "memory":
        return None, False
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str):
        if isinstance(spec, Store):
            return spec, False
        raise UsageError(
            f"store={echo(spec)} is not a store: pass None, 'memory', a file path, "
            "'sqlite:///file.db', 'postgresql://...' or a Store object"
        )
    if spec.startswith(_POSTGRES):
        from openprogram.store.postgres import PostgresStore

        return PostgresStore(spec), True
    from openprogram.store.sqlite import SQLiteStore

    if spec.startswith("sqlite://"):
        path, _, query = spec[len("sqlite://") :].partition("?")
        if not path.startswith("/") or path == "/":
            raise UsageError(
                f"store={echo(spec)}: write 'sqlite:///relative/file.db' or "
                "'sqlite:////absolute/file.db'"
            )
        options = {k: v[-1] for k, v in parse_qs(query).items()}
        synchronous = options.pop("synchronous", "NORMAL").upper()
        if options:
            raise UsageError(f"store={echo(spec)}: unknown option {echo(sorted(options)[0])}")
        sync: Any = synchronous  # a str, not the Literal: SQLiteStore checks it
        return SQLiteStore(path[1:], synchronous=sync, read_only=read_only, check=check), True
    if "://" in spec:
        raise UsageError(
            f"store={echo(spec)} has a scheme openprogram does not know; use a file path, "
            "'sqlite:///file.db' or 'postgresql://...'"
        )
    return SQLiteStore(spec, read_only=read_only, check=check), True
