"""A browser's accessibility tree read by one Collection.GetMatches query (Chromium,
Gecko): the app filters its objects to the showing, visible ones of our roles, then each
match's role, states, name and box are asked, all pipelined. What a browser answers
fastest: its page can be large. Owns `CollectionQuery`; accessibility.py chooses it by
toolkit (every other app is walked: _tree_walk.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._atspi import ROLE_KINDS
from gui_harness.perception.tree._tree_node import Element

__all__ = ["CollectionQuery"]

_MATCH_ALL, _MATCH_ANY = 1, 2
_SORT_CANONICAL = 1


def _role_bits(roles: Iterable[int]) -> list[int]:
    words = [0] * 5
    for role in roles:
        words[role // 32] |= 1 << (role % 32)
    return [w - (1 << 32) if w >= 1 << 31 else w for w in words]  # D-Bus "ai" is signed


# Showing and visible (ALL of both), any attributes and interfaces (ALL of none), and ANY
# of our roles: the app filters, so only what can be on screen crosses the bus.
_RULE: tuple[Any, ...] = (
    [(1 << atspi.SHOWING) | (1 << atspi.VISIBLE), 0],
    _MATCH_ALL,
    {},
    _MATCH_ALL,
    _role_bits(set(ROLE_KINDS) - atspi.COLUMN_HEADERS),  # a page's table heads are no controls
    _MATCH_ANY,
    [],
    _MATCH_ALL,
    False,
)


class CollectionQuery:
    """One app read by one Collection.GetMatches query, then each match's role, states,
    name and box: what a browser answers fastest (its page can be large)."""

    def __init__(
        self, pipeline: atspi.Pipeline, app: str, roles: dict[tuple[str, str], int]
    ) -> None:
        self.pipeline = pipeline
        self.app = app
        self.roles = roles
        self.elements: list[Element] = []
        self._calls = atspi.Calls(pipeline)

    @property
    def complete(self) -> bool:
        return self._calls.pending == 0

    @property
    def answered(self) -> int:
        return self._calls.answered

    def start(self) -> None:
        self._send(
            atspi.call(
                self.app,
                atspi.ROOT,
                "org.a11y.atspi.Collection",
                "GetMatches",
                "(aiia{ss}iaiiasib)uib",
                (_RULE, _SORT_CANONICAL, 0, True),
            ),
            self._got_matches,
        )

    def _send(self, message: Any, callback: Any) -> None:
        self._calls.send(message, callback)

    def _got_matches(self, body: tuple[Any, ...] | None) -> None:
        if body is None:
            return
        for number, (name, path) in enumerate(body[0]):
            element = Element(str(name), str(path), (number,))
            self.elements.append(element)
            role = self.roles.get((element.app, element.path))
            if role is not None:
                element.role = role
                element.answered.add("role")
            else:
                self._detail(element, "role", atspi.call(name, path, atspi.ACCESSIBLE, "GetRole"))
            self._detail(element, "states", atspi.call(name, path, atspi.ACCESSIBLE, "GetState"))
            self._detail(element, "name", atspi.get_property(name, path, atspi.ACCESSIBLE, "Name"))
            self._detail(
                element,
                "box",
                atspi.call(name, path, atspi.COMPONENT, "GetExtents", "u", (atspi.COORDS_SCREEN,)),
            )

    def _detail(self, element: Element, what: str, message: Any) -> None:
        def got(body: tuple[Any, ...] | None) -> None:
            if body is None:
                return
            element.answered.add(what)
            if what == "role":
                element.role = int(body[0])
                self.roles[(element.app, element.path)] = element.role
            elif what == "states":
                element.states = atspi.state_bits(body)
            elif what == "name":
                element.name = str(body[0][1])
            else:
                x, y, w, h = (int(v) for v in body[0])
                element.box = (x, y, w, h)

        self._send(message, got)
