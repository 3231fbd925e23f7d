"""What the bounded walk asks of each object of an app's accessibility tree, and what
it does with the answers.

Owns `TreeRead`, the reading half of _tree_walk.py's `AppWalk`: an object read is
asked its role (once per app: it does not change) and states; one that shows then its
name (the description standing in for none), its box, the caption it is labelled by
(its relation set, or the labels beside it), and its children, unless it manages its
descendants: then a table becomes one grid (_tree_grid.py) and another list gives all
its children when there are few, else the run of them that shows (_tree_list.py).
Bounded by MAX_NODES objects and MAX_CHILDREN children enumerated. Keeping a walk
current (refresh, check) and measuring the app's drawing offset (finish) are
_tree_walk.py's job.
"""

from __future__ import annotations

import functools
from typing import Any

from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_grid import GridRead
from gui_harness.perception.tree._tree_list import ListRead
from gui_harness.perception.tree._tree_node import CLASS_NAME, Element, extents, shows

__all__ = ["MAX_CHILDREN", "MAX_NODES", "TreeRead"]

MAX_NODES = 4000
"""Objects one walk of one app reads at most."""
_MANAGES = 1 << atspi.MANAGES_DESCENDANTS


def window_part(element: Element) -> bool:
    """Whether `element` is a part of a window (its child) that shows, with a box: a GTK 3
    popover is one, drawn over an earlier part (_tree_windows.popup_covers)."""
    return (
        len(element.order) == 2
        and element.run is None
        and element.grid is None
        and "box" in element.answered
        and element.box is not None
        and shows(element)
    )


def _overlap(one: Element, other: Element) -> bool:
    """Whether the boxes of `one` and `other` (both known) share any pixel."""
    assert one.box is not None and other.box is not None
    x, y, w, h = one.box
    ox, oy, ow, oh = other.box
    return x < ox + ow and ox < x + w and y < oy + oh and oy < y + h


MAX_CHILDREN = 400
"""Children a container may have for the walk to enumerate them (a managed list with
more gives the ones that show: _tree_list.ListRead)."""


class TreeRead:
    """The objects of app `app` read on `pipeline` (`elements`), and the calls that read
    them: AppWalk's parameters and state (see AppWalk), and what it sends for each
    object it visits (_visit(), then _decide() once role and states are known)."""

    def __init__(
        self,
        pipeline: atspi.Pipeline,
        app: str,
        roles: dict[tuple[str, str], int],
        screen: tuple[int, int],
        *,
        showing_reported: bool = True,
        own_drawing_offset: bool = False,
        quiet_tabs: bool = False,
        quiet_moves: bool = False,
        quiet_popovers: bool = False,
        tells_windows: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.tells_windows = tells_windows
        self.quiet_tabs = quiet_tabs
        self.quiet_moves = quiet_moves
        self.quiet_popovers = quiet_popovers
        self.app = app
        self.screen = screen
        self.showing_reported = showing_reported
        self.own_drawing_offset = own_drawing_offset
        self._menu_bars: list[Element] = []
        self.offset: int | None = 0
        """How far below its boxes the app's own drawing is (see finish()); None when a
        walk cut short could not tell."""
        self.roles = roles
        self.elements: list[Element] = []
        self.truncated = False
        self._calls = atspi.Calls(pipeline)

    @property
    def answered(self) -> int:
        """How many of the walk's calls on its current pipeline were answered."""
        return self._calls.answered

    @property
    def unsaid(self) -> list[Element]:
        """The parts read that the toolkit changes without an event, which each snapshot
        of a kept walk asks again (AppWalk.check()): the lists that manage their items
        (Qt adds, removes and scrolls their items unsaid: a file view filled after the
        dialog showed); with `quiet_tabs`, the tab lists that show (Qt adds a tab, or
        moves the selection between tabs, unsaid); and with `quiet_popovers`, a window's
        parts drawn over an earlier part (`window_part`: GTK 3 draws a popover as one,
        and slides it into place with no event but bounds-changed, which is not watched;
        Qt's windows hold all their widgets as overlapping parts, 15 calls a dialog)."""
        parts = sorted((e for e in self.elements if window_part(e)), key=lambda e: e.order)
        over = {
            id(e)
            for n, e in enumerate(parts)
            if self.quiet_popovers and any(_overlap(e, p) for p in parts[:n])
        }
        return [
            e
            for e in self.elements
            if e.run is not None
            or (e.grid is None and "count" in e.answered and e.states & _MANAGES)
            or (self.quiet_tabs and e.role == atspi.PAGE_TAB_LIST and "children" in e.answered)
            or id(e) in over
        ]

    def _send(self, message: Any, callback: Any) -> None:
        self._calls.send(message, callback)

    def _visit(
        self,
        app: str,
        path: str,
        order: tuple[int, ...],
        box: tuple[int, int, int, int] | None = None,
        *,
        item: bool = False,
        inside: bool = False,
    ) -> None:
        """Read the object at `path` (its box already, when `box` is given: a long
        list's item; `item`: inside one; `inside`: below a reported element)."""
        if len(self.elements) >= MAX_NODES:
            self.truncated = True
            return
        element = Element(app, path, order)
        if box is not None:
            element.box = box
            element.answered.add("box")
        element.item = item or box is not None
        element.inside = inside
        self.elements.append(element)
        role = self.roles.get((app, path))
        if role is not None:
            element.role = role
            element.answered.add("role")
        else:
            self._send(
                atspi.call(app, path, atspi.ACCESSIBLE, "GetRole"),
                lambda body: self._got(element, "role", body),
            )
        self._send(
            atspi.call(app, path, atspi.ACCESSIBLE, "GetState"),
            lambda body: self._got(element, "states", body),
        )

    def _got(self, element: Element, what: str, body: tuple[Any, ...] | None) -> None:
        if body is None:
            element.answered.add(f"no-{what}")
            return
        if what == "role":
            element.role = int(body[0])
            self.roles[(element.app, element.path)] = element.role
        elif what == "states":
            element.states = atspi.state_bits(body)
        elif what == "count":
            element.count = int(body[0][1])
        elif what == "name":
            element.name = str(body[0][1])
        elif what == "box":
            x, y, w, h = (int(v) for v in body[0])
            element.box = (x, y, w, h)
        elif what == "attributes":
            element.native = body[0].get("toolkit") == "gtk"
        element.answered.add(what)
        if {"role", "states"} <= element.answered and "decided" not in element.answered:
            element.answered.add("decided")
            self._decide(element)

    def _decide(self, element: Element) -> None:
        """With role and states known: read more, descend, or stop here."""
        bits = element.states
        if not self.showing_reported and bits & (1 << atspi.VISIBLE):
            bits = element.states = bits | (1 << atspi.SHOWING)
        if not (bits & (1 << atspi.SHOWING) and bits & (1 << atspi.VISIBLE)):
            return  # nothing under an object that does not show can show
        # LibreOffice's formula bar input line: a focusable scroll pane around a drawing
        # area, with no text object of its own; it is where the user types a formula
        element.input_line = (
            self.own_drawing_offset
            and element.role == atspi.SCROLL_PANE
            and bool(bits & (1 << atspi.FOCUSABLE))
        )
        reported = element.role in atspi.ROLE_KINDS or element.input_line
        element.reported = reported
        # a window: its name and box tell which of the desktop's windows it is (_tree_windows)
        window = len(element.order) == 1
        if not reported and (
            (element.role == atspi.POPUP_MENU and not window)
            or len(element.order) == 2
            or element.role in atspi.SCROLLERS
        ):
            # a popup's, or a window's part's: where a popup drawn in its window is, and
            # what it covers (_tree_windows.popup_covers; Java reports a popup's items
            # where its menu is: menu_shifts); a part may have no box (LibreOffice's); a
            # scroll pane's: what shows of what it holds (_tree_elements)
            self._calls.send(
                extents(element), lambda body: self._got(element, "box", body), optional=True
            )
        if element.role == atspi.SCROLL_BAR:  # what holds it may clip what it scrolls
            for above in self.elements:
                if (
                    len(above.order) >= len(element.order) - 2
                    and element.order[: len(above.order)] == above.order
                    and {"box", "asked box"}.isdisjoint(above.answered)
                ):
                    above.answered.add("asked box")
                    box = functools.partial(self._got, above, "box")
                    self._calls.send(extents(above), box, optional=True)
        if self.own_drawing_offset and element.role == atspi.MENU_BAR:
            self._menu_bars.append(element)
            self._send(extents(element), lambda body: self._got(element, "box", body))
        if self.own_drawing_offset and (
            reported or element.role in atspi.TABLE_ROLES or element.role == atspi.MENU_BAR
        ):
            self._send(
                atspi.call(element.app, element.path, atspi.ACCESSIBLE, "GetAttributes"),
                lambda body: self._got(element, "attributes", body),
            )
        managed = bool(bits & _MANAGES)
        grid = managed and element.role in atspi.TABLE_ROLES
        if element.role == atspi.LABEL and element.inside:
            # the text of a control GTK 4 leaves unnamed (a path bar's, a sidebar row's)
            self._send(
                atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "Name"),
                lambda body: self._got(element, "name", body),
            )
            # a label GTK 4 keeps but does not draw (a drop-down's other choice) is 0×0
            self._send(extents(element), lambda body: self._got(element, "box", body))
        if reported or grid or window:
            self._send(
                atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "Name"),
                lambda body: self._got_name(element, body),
            )
            if reported and element.role in atspi.CAPTIONED_ROLES:
                self._send(
                    atspi.call(element.app, element.path, atspi.ACCESSIBLE, "GetRelationSet"),
                    lambda body: self._relations(element, body),
                )
            if "box" not in element.answered:
                self._send(extents(element), lambda body: self._got_box(element, body, grid=grid))
        if grid:
            return
        if not managed:
            if not (element.item and reported):
                self._children(element)
            return  # a list's item: what it holds is read only when it has no name
        # a managed container may hold millions of children: count them first

        def counted(body: tuple[Any, ...] | None) -> None:
            self._got(element, "count", body)
            if 0 < element.count <= MAX_CHILDREN:
                self._children(element)
            elif element.count > MAX_CHILDREN:
                self._send(extents(element), lambda box: self._list(element, box))

        self._send(
            atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "ChildCount"), counted
        )

    def _got_name(self, element: Element, body: tuple[Any, ...] | None) -> None:
        """A name; without one (or with GTK 4's stand-in, the widget's class), the
        description stands in (LibreOffice's Name Box and sidebar buttons have only
        that; Qt's tooltip of an icon-only tab or button), but for an item (a list's
        cell holding an icon and a name: its name comes from within, see _tree_elements)."""
        name = "" if body is None else str(body[0][1]).strip()
        if (
            body is None
            or (name and not CLASS_NAME.match(name))
            or element.role in atspi.ITEM_ROLES
        ):
            self._named(element, body)
            return
        self._send(
            atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "Description"),
            lambda described: self._named(element, described or body),
        )

    def _relations(self, element: Element, body: tuple[Any, ...] | None) -> None:
        """A relation set: the name of the first object labelling `element` (a caption
        beside it, linked by a labelled-by relation only) is read as its caption. With
        none, the names and boxes of the labels beside it (its siblings) are read: the
        one just left of it may be its caption, unlinked (Qt 5's file dialog's "Look
        in:"; see _tree_elements). A relation to what is no label (Qt links a spin box
        with no caption to its group box, and names it so) gives its `group`, and the
        labels beside it are read as well."""
        if body is None:
            return
        for kind, targets in body[0]:
            if int(kind) == atspi.LABELLED_BY and targets:
                app, path = (str(v) for v in targets[0])
                name = atspi.get_property(app, path, atspi.ACCESSIBLE, "Name")
                self._send(
                    atspi.call(app, path, atspi.ACCESSIBLE, "GetRole"),
                    functools.partial(self._labelled_by, element, name),
                )
                return
        self._read_siblings(element)

    def _labelled_by(self, element: Element, name: Any, role: tuple[Any, ...] | None) -> None:
        """What labels `element` has role `role`: a label's `name` (a message asking for
        it) is its caption; a group box's is its `group`, and the labels beside it are
        read as well."""

        def captioned(named: tuple[Any, ...] | None) -> None:
            if named is not None:
                element.caption = str(named[0][1])

        def grouped(named: tuple[Any, ...] | None) -> None:
            if named is not None:
                element.group = str(named[0][1])

        if role is None or int(role[0]) == atspi.LABEL:
            self._send(name, captioned)
            return
        self._send(name, grouped)
        self._read_siblings(element)

    def _read_siblings(self, element: Element) -> None:
        """Read the names and boxes of the labels beside `element` (its siblings)."""
        parent = element.order[:-1]
        for sibling in self.elements:
            if (
                sibling.role == atspi.LABEL
                and sibling.order[:-1] == parent
                and len(sibling.order) == len(element.order)
                and shows(sibling)
                and not {"name", "asked"} & sibling.answered
            ):
                sibling.answered.add("asked")
                self._send(
                    atspi.get_property(sibling.app, sibling.path, atspi.ACCESSIBLE, "Name"),
                    functools.partial(self._got, sibling, "name"),
                )
                self._send(extents(sibling), functools.partial(self._got, sibling, "box"))

    def _named(self, element: Element, body: tuple[Any, ...] | None) -> None:
        first = "name" not in element.answered
        self._got(element, "name", body)
        if first and element.item and not element.name.strip():
            self._children(element)  # a list's cell holding an icon and a name

    def _got_box(self, element: Element, body: tuple[Any, ...] | None, *, grid: bool) -> None:
        self._got(element, "box", body)
        if grid and element.box is not None:
            element.grid = GridRead(element.app, element.path, element.box, self.screen)
            element.grid.start(self._send, lambda read: self._items(element, read))

    def _items(self, element: Element, read: GridRead) -> None:
        """A table of items (a file view; not a spreadsheet): its cells that show are
        read too, as a long list's are (the grid alone has no text)."""
        if read.spreadsheet:
            return

        def counted(body: tuple[Any, ...] | None) -> None:
            self._got(element, "count", body)
            if element.count > 0:
                self._list(element, None, box=element.box)

        self._send(
            atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "ChildCount"), counted
        )

    def _list(
        self,
        element: Element,
        body: tuple[Any, ...] | None,
        box: tuple[int, int, int, int] | None = None,
    ) -> None:
        """With a long list's box (`body`, a GetExtents reply, or `box` known): read the
        run of its children that shows."""
        if box is None:
            self._got(element, "box", body)
            box = element.box if body is not None else None
        element.run = ListRead(
            element.app, element.path, element.count, box or (0, 0, 0, 0), self.screen
        )
        if box is None:  # no box: which children show cannot be told
            element.run.failed = True
            return

        def found(index: int, app: str, path: str, box: tuple[int, int, int, int]) -> None:
            self._visit(app, path, (*element.order, index), box)

        element.run.start(self._send, found)

    def _children(self, parent: Element) -> None:
        def got(body: tuple[Any, ...] | None) -> None:
            if body is None:
                return
            parent.count = len(body[0])
            parent.answered.add("children")
            for number, (app, path) in enumerate(body[0]):
                self._visit(
                    str(app),
                    str(path),
                    (*parent.order, number),
                    item=parent.item,
                    inside=parent.inside or parent.reported,
                )

        self._send(atspi.call(parent.app, parent.path, atspi.ACCESSIBLE, "GetChildren"), got)
