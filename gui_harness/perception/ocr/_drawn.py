"""A tree's name checked against the text drawn in its box, for ocr_worker.py: which
named components are read as well (`doubted()`), and what their label becomes once
read (`reconciled()`).

A label is what the user reads. Two classes of tree names are not: an internal name,
an identifier the program uses ("start_group", "applyButton", "emblem-default") on a
control that draws other text (the tree's own labels inside the control rename it
first: _tree_elements._drawn; this is for the controls whose text the tree does not
give), and a drop-down's name, which may be its caption ("Font Family") or its current
option's icon name ("Emblem Default") while it draws its current option ("Sans",
"Andrea"). Such a component is read like an unnamed one; the drawn text, when it is
not the name read with a letter or two wrong, becomes the label, and a drop-down's name
its caption when it has none. A lone letter read off an icon-sized control is its icon
misread (a magnifier as "Q"), and changes nothing.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import replace

from gui_harness.perception.component import Component

__all__ = ["doubted", "program_name", "reconciled"]

_KINDS = frozenset({"button", "tab", "link", "dropdown"})  # named by text drawn in the box
_IDENTIFIER = (
    re.compile(r"^_?[A-Za-z0-9]+(?:_[A-Za-z0-9]+)+_?$"),  # snake_case: "start_group"
    re.compile(r"^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$"),  # camelCase: "applyButton"
    re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)+$"),  # kebab-case: "emblem-default"
)
_LOWER_WORD = re.compile(r"^[a-z]{2,}$")
_SAME = 0.7  # similarity of name and drawn text (letters and digits only) that is agreement
_ICON = 48  # px; a control no larger either way may draw an icon, not text


def identifier(name: str) -> bool:
    """Whether `name` is one identifier-like word ("start_group", "applyButton",
    "emblem-default"), a name for the program rather than words for the user."""
    return any(pattern.match(name) for pattern in _IDENTIFIER)


def program_name(name: str) -> bool:
    """Whether `name` is a word for the program, not one written for the user: an
    identifier, or one lower-case word ("multiply", "result": a calculator's keys named
    by what they do while they draw "×", "=")."""
    return identifier(name) or bool(_LOWER_WORD.match(name))


def doubted(component: Component) -> bool:
    """Whether `component`'s label, a tree name, needs the text drawn in its box to
    check it: a button, tab, link or drop-down named by an identifier, or a drop-down."""
    return (
        component.source == "accessibility"
        and component.label is not None
        and component.kind in _KINDS
        and (component.kind == "dropdown" or identifier(component.label))
    )


def reconciled(component: Component, drawn: str) -> Component:
    """`component` (doubted()) labelled by `drawn`, the text OCR read in its box, when
    that says something else than its name: an identifier's drawn text unless it holds
    the identifier ("start_group.txt"); a drop-down's unless the name says it or is said
    by it, and then its name goes to its caption when it has none and is no identifier.
    Unchanged when nothing readable was drawn (an icon, an empty drop-down)."""
    name = component.label or ""
    text = " ".join(drawn.split())
    if not _readable(text, component.box):
        return component
    bare_name, bare_text = _squeezed(name), _squeezed(text)
    if bare_text and _similar(bare_name, bare_text):
        return component  # its name, read with a letter or two wrong
    if identifier(name):
        if bare_text and bare_name in bare_text:
            return component  # the identifier is what it draws ("start_group.txt")
        return component.with_label(text)  # words or glyphs: "Apply", "("
    if not bare_text or bare_name in bare_text or bare_text in bare_name:
        return component  # its current option, or that read in part
    caption = component.caption if component.caption is not None else name
    return replace(component, label=text, caption=caption)


def _readable(text: str, box: tuple[int, int, int, int]) -> bool:
    """Whether `text` is text drawn, not an icon misread: anything but a lone letter,
    and on an icon-sized control a word of two letters or a number."""
    squeezed = text.replace(" ", "")
    if not squeezed or (len(squeezed) == 1 and squeezed.isalpha()):
        return False
    if box[2] <= _ICON and box[3] <= _ICON:
        letters = max((sum(ch.isalpha() for ch in word) for word in text.split()), default=0)
        return letters >= 2 or any(ch.isdigit() for ch in text)
    return True


def _squeezed(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _similar(a: str, b: str) -> bool:
    return a == b or difflib.SequenceMatcher(None, a, b).ratio() >= _SAME
