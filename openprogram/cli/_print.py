"""What the `openprogram` commands print: say(), styled(), json_text() and data_text().

Owns the rule that text from a model, a tool or a store reaches the terminal with every
control character escaped (echo.printable): a reply, a stored name or a question cannot
set the terminal's title, write its clipboard (OSC 52) or redraw what it shows. Styles a
command adds (click.style) pass as they are. Every print of a command goes through say().
"""

from __future__ import annotations

import json
from typing import Any

import click

from openprogram.echo import printable

__all__ = ["Styled", "data_text", "json_text", "say", "styled"]


class Styled(str):
    """Text safe to print as it is: escaped, then styled by a command."""

    __slots__ = ()


def styled(text: object, *, newlines: bool = True, **style: Any) -> Styled:
    """`text` escaped (`newlines=False`: newline and tab too), then click.style(**style)."""
    shown = printable(str(text), newlines=newlines)
    return Styled(click.style(shown, **style) if style else shown)


def say(*pieces: Any, err: bool = False, nl: bool = True) -> None:
    """Print `pieces` side by side, on standard output (`err`: standard error): each one
    escaped unless it is Styled already."""
    text = "".join(p if isinstance(p, Styled) else printable(str(p)) for p in pieces)
    click.echo(text, err=err, nl=nl)


def json_text(value: object, **options: Any) -> Styled:
    """`value` as JSON (json.dumps(**options)), as data_text() prints it: valid JSON."""
    return data_text(json.dumps(value, **options))


def data_text(text: str) -> Styled:
    """A file's text for standard output (JSON, an HTML report, an export): each control
    character printable() would escape written as `\\uXXXX` instead, which JSON (and the
    JSON a report embeds) reads back as that very character, so the data stays valid and
    the terminal safe (a lone surrogate included). Only JSON strings can hold them."""
    if printable(text) == text:
        return Styled(text)
    return Styled("".join(c if printable(c) == c else f"\\u{ord(c):04x}" for c in text))
