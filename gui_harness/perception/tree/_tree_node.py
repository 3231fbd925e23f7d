"""One object of an app's accessibility tree as the bounded walk reads it.

Owns `Element` (what has been read of one object: role, states, name, box, and the
grid or run of a managed container), `CLASS_NAME` (GTK 4's stand-in name for an
unnamed widget), and the helpers on elements' places in tree order (`shows`,
`within`, `outermost`, `prefixes`) and the call reading an element's box
(`extents`). Reading the tree is _tree_read.py's and _tree_walk.py's job; turning
elements into components is _tree_elements.py's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_grid import GridRead
from gui_harness.perception.tree._tree_list import ListRead

__all__ = ["CLASS_NAME", "Element", "extents", "outermost", "prefixes", "shows", "within"]

# GTK 4 names an unnamed widget by its class: GTK's and libadwaita's ("GtkButton"), or an
# app's own widget class ("EditorSourceView": a class name ending in a widget's kind)
CLASS_NAME = re.compile(
    r"^(?:Gtk|Adw)[A-Z][A-Za-z]+$|^[A-Z][a-z]+(?:[A-Z][a-z0-9]+)+"
    r"(?:View|Row|Box|Button|Entry|Label|Bin|Widget|Window|Bar|Page|Grid|Stack|Area|List)$"
)


@dataclass
class Element:
    """One object of an app's tree as read: `order` is its path of child indices (tree
    order), `answered` what has been read of role, states, name and box."""

    app: str
    path: str
    order: tuple[int, ...] = ()
    role: int = -1
    name: str = ""
    states: int = 0
    box: tuple[int, int, int, int] | None = None
    answered: set[str] = field(default_factory=set)
    count: int = 0
    grid: GridRead | None = None
    run: ListRead | None = None  # a long managed list: its items read are those showing
    native: bool = True  # placed by its toolkit (see AppWalk's own_drawing_offset)
    input_line: bool = False  # reported as a field though its role is no field's
    item: bool = False  # a long list's item (handed by its ListRead with its box) or in one
    inside: bool = False  # below an element perception reports (a label there is read)
    reported: bool = False  # perception reports it (its role is a control's)
    caption: str = ""  # the name of what labels it (a labelled-by relation), when read
    group: str = ""  # the name of the group box its labelled-by relation points at (Qt)


def shows(element: Element) -> bool:
    """Whether `element` showed when read (so what is below it was read too)."""
    bits = element.states
    return bool(bits & (1 << atspi.SHOWING) and bits & (1 << atspi.VISIBLE))


def within(element: Element, orders: list[tuple[int, ...]]) -> bool:
    """Whether `element` is one of, or below one of, the objects at `orders`."""
    return any(element.order[: len(order)] == order for order in orders)


def outermost(elements: list[Element]) -> list[Element]:
    """`elements` without those below another of them."""
    chosen: list[Element] = []
    for element in sorted(elements, key=lambda e: len(e.order)):
        if not within(element, [c.order for c in chosen]):
            chosen.append(element)
    return chosen


def prefixes(order: tuple[int, ...]) -> list[tuple[int, ...]]:
    return [order[:length] for length in range(1, len(order) + 1)]


def extents(element: Element) -> Any:
    return atspi.call(
        element.app, element.path, atspi.COMPONENT, "GetExtents", "u", (atspi.COORDS_SCREEN,)
    )
