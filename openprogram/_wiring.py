"""The makers of the process defaults, provided by the package root to the layers below.

core/_context.py falls back on a default Session and Runtime when a call has none, but
both are made by layers above it; core/node.py's notebook views are drawn by
openprogram.display, above it too. The package root (openprogram/__init__.py), which
stands above every layer, provides their factories here when it is imported; importing
this module costs nothing, so the root stays lazy. Start at provide().
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["factory", "provide"]

_factories: dict[str, Callable[[], Any]] = {}


def provide(kind: str, make: Callable[[], Any]) -> None:
    """How the process default `kind` ("session" or "runtime") is made, or ("views") how
    the notebook views are loaded."""
    _factories[kind] = make


def factory(kind: str) -> Callable[[], Any]:
    """The maker of the process default `kind`; LookupError when none was provided."""
    try:
        return _factories[kind]
    except KeyError:
        raise LookupError(
            f"no maker of the default {kind} was provided (openprogram/__init__.py provides "
            "them when the package is imported)"
        ) from None
