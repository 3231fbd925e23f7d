"""Options the `openprogram` commands share: the session store (--store).

Owns `store_option` and DEFAULT_STORE, below every module that defines commands, so
cli/ (its commands, and plugins through it) take --store alike, and
`text_argument`, which refuses an argument that is not UTF-8 text (a session id, say).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from openprogram.echo import printable

__all__ = ["DEFAULT_STORE", "store_option", "text_argument"]

DEFAULT_STORE = "openprogram.db"
"""The store the session commands read when neither --store nor OPENPROGRAM_STORE is set."""

F = TypeVar("F", bound=Callable[..., Any])


def _default_store() -> str:
    from openprogram import store

    return str(getattr(store, "DEFAULT_STORE", DEFAULT_STORE))


def store_option(command: F) -> F:
    """The --store option (env OPENPROGRAM_STORE), passed to the command as store_spec."""
    return click.option(
        "--store",
        "store_spec",
        envvar="OPENPROGRAM_STORE",
        default=_default_store,
        show_default=DEFAULT_STORE,
        metavar="PATH|URL",
        help="Session store: a SQLite file, sqlite:///file.db or postgresql://… "
        "(env OPENPROGRAM_STORE).",
    )(command)


def text_argument(value: str, name: str) -> str:
    """`value` when it is UTF-8 text; click.BadParameter (exit 2) when the command line
    gave bytes that are not (Python keeps them as lone surrogates, which no store takes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise click.BadParameter(
            f"'{printable(value, newlines=False)}' is not UTF-8 text; give it as text",
            param_hint=name,
        ) from None
    return value
