"""Options the `openprogram` commands share: the session store (--store), the provider
(--api-base, --api-key-env).

Owns `store_option` and DEFAULT_STORE, below every module that defines commands, so
cli/ (its commands, and plugins through it) take --store alike; `provider_options` and
`provider_kwargs` for the commands that talk to a model; and `text_argument`, which
refuses an argument that is not UTF-8 text (a session id, say).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from openprogram.echo import cut, printable

__all__ = [
    "DEFAULT_STORE",
    "one_store",
    "provider_kwargs",
    "provider_options",
    "store_argument",
    "store_option",
    "text_argument",
]

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


def store_argument(command: F) -> F:
    """STORE as an optional argument (passed as positional_store), or --store as every
    other command takes it (store_spec: env OPENPROGRAM_STORE, default openprogram.db);
    one_store() picks the one given."""
    command = store_option(command)
    return click.argument("positional_store", metavar="[STORE]", required=False)(command)


def one_store(positional_store: str | None, store_spec: str) -> str:
    """The store a store_argument command was given: STORE, else --store (its env, its
    default). Giving both is a usage error."""
    if positional_store is None:
        return store_spec
    from click.core import ParameterSource

    if (
        click.get_current_context().get_parameter_source("store_spec")
        is ParameterSource.COMMANDLINE
    ):
        raise click.UsageError("give the store once: as STORE or as --store, not both")
    return positional_store


def provider_options(command: F) -> F:
    """--api-base URL and --api-key-env NAME, passed to the command as api_base and
    api_key_env (turn them into Runtime keywords with provider_kwargs)."""
    command = click.option(
        "--api-key-env",
        "api_key_env",
        default=None,
        metavar="NAME",
        help="The environment variable holding the provider's API key (the key itself "
        "never goes on the command line), e.g. MY_GATEWAY_KEY.",
    )(command)
    return click.option(
        "--api-base",
        "api_base",
        default=None,
        metavar="URL",
        help="Provider URL, e.g. a local OpenAI-compatible server (openprogram serve-model's).",
    )(command)


def provider_kwargs(api_base: str | None, api_key_env: str | None) -> dict[str, Any]:
    """The Runtime keywords --api-base and --api-key-env give: api_base, and api_key read
    from the environment variable named. UsageError when that variable is not set."""
    import os

    from openprogram.errors import UsageError

    options: dict[str, Any] = {}
    if api_base:
        options["api_base"] = api_base
    if api_key_env:
        key = os.environ.get(api_key_env)
        if not key:
            name = cut(printable(api_key_env, newlines=False), 200)
            raise UsageError(
                f"--api-key-env {name}: that environment variable is not set (or is empty); "
                "export it with the provider's key"
            )
        options["api_key"] = key
    return options


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
