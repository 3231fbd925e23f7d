"""A bounded walk of one app's accessibility tree, for apps a Collection query cannot read
(GTK 4 and Qt have no Collection interface; LibreOffice's never answers: its spreadsheet
has millions of cells).

Owns `AppWalk` (an element read is _tree_node.py's `Element`). The walk descends only
into showing objects, reads each one's role and states, then the name and box of those
perception reports (and the caption an entry or a drop-down is labelled by, from its
relation set); a container that manages its descendants (a spreadsheet, a long list) is
not enumerated: a table becomes one grid read from its visible corner cells
(_tree_grid.py), another gives all its children when there are few, else the run of them
that shows (_tree_list.py). Every call is pipelined (_atspi.Pipeline), so the walk costs
the app's own answering time, bounded by a node cap and the caller's deadline. Turning
elements into components is accessibility.py's job.
"""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any

from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_grid import GridRead
from gui_harness.perception.tree._tree_list import ListRead, child_box
from gui_harness.perception.tree._tree_node import (
    CLASS_NAME,
    Element,
    extents,
    outermost,
    prefixes,
    shows,
    within,
)

__all__ = ["AppWalk"]

MAX_NODES = 4000
"""Objects one walk of one app reads at most."""
_MEASURE_S = 0.2  # the least time finish() gets to measure the drawing offset
_GRID_MOVES = frozenset({"BoundsChanged", "VisibleDataChanged"})
_SUBTREE_CHANGES = {
    "ChildrenChanged",
    "StateChanged:showing",
    "StateChanged:visible",
    "StateChanged:manages-descendants",
    # an expander that opens or closes: GTK 4 adds its child with no ChildrenChanged
    "StateChanged:expanded",
    "StateChanged:collapsed",
}
_MANAGES = 1 << atspi.MANAGES_DESCENDANTS
_HOPS = 4  # Parent calls up from an object never read to one that was
MAX_CHILDREN = 400
"""Children a container may have for the walk to enumerate them (a managed list with
more gives the ones that show: _tree_list.ListRead)."""


class AppWalk:
    """Walks app `app` from its root object on `pipeline`, reusing the roles in `roles`
    ((app, path) → role; an object's role does not change) and adding to them; `screen`
    is (width, height), which a grid's visible cells are clipped to. `showing_reported=False`
    is for a toolkit that sets SHOWING on windows only (GTK 4.8): there VISIBLE counts
    as showing, and is recorded so in the element's states. `own_drawing_offset=True` is
    for LibreOffice on GTK 3, which reports what it draws itself (all but the GTK widgets,
    whose attributes say toolkit=gtk) as if its GTK menu bar took no room: finish() moves
    those boxes down by the menu bar's height. `quiet_tabs=True` is for Qt, which adds a
    tab or moves the selection between tabs without a word: its tab bars are read again
    whenever its tree changed (refresh()), so no tab is missing and no two say "selected".
    `quiet_moves=True` is for GTK 4, which reports a widget's new size but not a move:
    when anything in a window changed size or what it holds, every box in that window is
    read again (what comes after an expander that opened has moved down, unsaid).

    start() sends the first calls; the pipeline's run() does the rest. Afterwards
    `elements` holds what was read, `complete` says whether the walk finished, and
    `skipped` counts managed lists whose children were left out (the list would not
    say which of them show).
    """

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
    ) -> None:
        self.pipeline = pipeline
        self.quiet_tabs = quiet_tabs
        self.quiet_moves = quiet_moves
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
    def skipped(self) -> int:
        """Managed lists read whose visible items could not be found."""
        return sum(1 for e in self.elements if e.run is not None and e.run.failed)

    @property
    def complete(self) -> bool:
        """Whether every call of the walk was answered and no cap cut it short."""
        return self._calls.pending == 0 and not self.truncated

    def start(self, root: str = atspi.ROOT) -> None:
        """Read the app root's children (its windows), then all that shows in them."""
        self._children(Element(self.app, root))

    def refresh(self, pipeline: atspi.Pipeline, paths: dict[str, set[str]]) -> None:
        """Read again, on `pipeline`, the objects at `paths` (those that sent tree
        events, with the events' names), keeping the rest of the last walk. An object
        whose children changed, that showed or hid, or that expanded or collapsed, is
        walked again with all below it; one that moved or scrolled has the boxes below
        it read again; one that changed itself (a state, its name, its text), whether or
        not it moved, has its states, name and box read again, but a menu, whose items
        show and hide with it and say nothing (Java's), is read again with them. A grid
        whose cursor or selection moved keeps its cells: only a scroll or a resize moves
        them; a long list is read again (which of its items show) after any event of
        its own, or a move above it; so is one that did not show when read, after any
        event of its own (Qt shows a dialog
        it made earlier with a window event alone, no change of its showing state). An
        object not read last time (under one that did not show, or under a managed
        container) is left alone: its ancestor, or the container, says when it matters;
        one that moved or showed has its nearest ancestor read again (_from_known). The
        pipeline's run() does the reading; finish() then as after start()."""
        self._on(pipeline)
        by_path = {element.path: element for element in self.elements}
        deep: list[Element] = []
        moved: list[Element] = []
        shallow: list[Element] = []
        for path, events in paths.items():
            element = by_path.get(path)
            if element is None:
                continue
            if element.grid is not None and element.run is None:
                (deep if events & _GRID_MOVES else shallow).append(element)
            elif (
                element.run is not None
                or events & _SUBTREE_CHANGES
                or not shows(element)
                or element.role == atspi.MENU  # its items show and hide with it, unsaid
            ):
                deep.append(element)  # (one that did not show had nothing below it read)
            elif events & _GRID_MOVES:
                moved.append(element)
                if events - _GRID_MOVES:  # moved and changed itself (a state, its name)
                    shallow.append(element)
            else:
                shallow.append(element)
        if self.quiet_moves and (moved or deep):  # the rest of their windows moved unsaid
            windows = {e.order[:1] for e in moved + deep}
            moved += [e for e in self.elements if e.order in windows and shows(e)]
        places = [m.order for m in moved]
        deep += [e for e in self.elements if e.run is not None and within(e, places)]
        if self.quiet_tabs:  # a few tabs each: their count and states read again
            deep += [e for e in self.elements if e.role == atspi.PAGE_TAB_LIST and shows(e)]
        chosen = outermost(deep)
        inside = [c.order for c in chosen]
        self.elements = [e for e in self.elements if not within(e, inside)]
        self._menu_bars = [bar for bar in self._menu_bars if not within(bar, inside)]
        for element in chosen:
            self._visit(element.app, element.path, element.order, inside=element.inside)
        # what moved: the boxes below it read again (a grid in it read again whole)
        shifted = [m.order for m in outermost(moved) if not within(m, inside)]
        again = {e.path for e in shallow if not within(e, inside)}
        for element in list(self.elements):
            if element.order in inside or not within(element, shifted):
                continue
            if element.grid is not None:
                self.elements.remove(element)
                self._visit(element.app, element.path, element.order, inside=element.inside)
            elif "box" in element.answered and element.path not in again:
                self._send(extents(element), functools.partial(self._got, element, "box"))
        for element in shallow:
            if element.path in again:
                self._reread(element)
        for element in self.lists:  # the managed lists kept: changed unsaid? (see check())
            if not within(element, inside) and not within(element, shifted):
                self._check(element)
        for path, events in paths.items():
            if path not in by_path and events & (_SUBTREE_CHANGES | _GRID_MOVES):
                self._from_known(path, _HOPS, inside)

    def _from_known(self, path: str, hops: int, done: list[tuple[int, ...]]) -> None:
        """An object the walk never read moved or showed (Java's popup menu, added to its
        window's layered pane with no event there): the nearest ancestor it did read, asked
        up the Parent chain (`hops` steps at most), is read again with all below it."""

        def parent(body: tuple[Any, ...] | None) -> None:
            above = str(body[0][1][1]) if body is not None else atspi.ROOT
            if above in (atspi.ROOT, "/org/a11y/atspi/null"):
                return
            known = next((e for e in self.elements if e.path == above), None)
            if known is None:
                if hops > 1:
                    self._from_known(above, hops - 1, done)
            elif not within(known, done):
                done.append(known.order)
                self._again(known)

        message = atspi.get_property(self.app, path, atspi.ACCESSIBLE, "Parent")
        self._calls.send(message, parent, optional=True)  # (it may be gone again)

    @property
    def lists(self) -> list[Element]:
        """The lists that manage their items, read: Qt adds, removes and scrolls their
        items without an event (a file view filled after the dialog showed), so each
        snapshot of a kept walk asks them again (check())."""
        return [
            e
            for e in self.elements
            if e.run is not None
            or (e.grid is None and "count" in e.answered and e.states & _MANAGES)
        ]

    def check(self, pipeline: atspi.Pipeline) -> None:
        """Ask each managed list (`lists`), on `pipeline`, whether it still holds and
        shows what was read: its child count, and for a long list the box of the last
        visible child read. A list where either changed, or a long list where no child
        was seen showing, is read again with all below it; the rest of the last walk is
        kept. The pipeline's run() does the reading. refresh() checks the lists it does
        not read again the same way."""
        self._on(pipeline)
        for element in self.lists:
            self._check(element)

    def _check(self, element: Element) -> None:
        last = element.run.last if element.run is not None else None
        if element.run is not None and last is None:
            self._again(element)  # nothing seen showing yet (still laid out, or filled)
            return
        stale: list[bool] = []

        def again(changed: bool) -> None:
            if changed and not stale:
                stale.append(True)
                self._again(element)

        def counted(body: tuple[Any, ...] | None) -> None:
            again(body is None or int(body[0][1]) != element.count)

        self._send(
            atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "ChildCount"), counted
        )
        if last is None:
            return
        index, box = last

        def placed(_: str, __: str, now: tuple[int, int, int, int] | None) -> None:
            again(now != box)

        child_box(self._send, element.app, element.path, index, placed)

    def _on(self, pipeline: atspi.Pipeline) -> None:
        """Read on `pipeline` from now on (a new snapshot's)."""
        self.pipeline = pipeline
        self._calls = atspi.Calls(pipeline)
        self.truncated = False

    def _again(self, element: Element) -> None:
        """Read `element` and everything below it again."""
        self.elements = [e for e in self.elements if not within(e, [element.order])]
        self._menu_bars = [b for b in self._menu_bars if not within(b, [element.order])]
        self._visit(element.app, element.path, element.order, inside=element.inside)

    def _reread(self, element: Element) -> None:
        """Read an object's states, and its name and box when it is reported, again."""

        def restate(body: tuple[Any, ...] | None) -> None:
            if body is None:
                return
            element.states = atspi.state_bits(body)
            if not self.showing_reported and element.states & (1 << atspi.VISIBLE):
                element.states |= 1 << atspi.SHOWING

        self._send(atspi.call(element.app, element.path, atspi.ACCESSIBLE, "GetState"), restate)
        if {"name", "box"} <= element.answered:
            self._send(
                atspi.get_property(element.app, element.path, atspi.ACCESSIBLE, "Name"),
                lambda body: self._got_name(element, body),
            )
            self._send(extents(element), lambda body: self._got(element, "box", body))

    def finish(self, deadline: float) -> None:
        """After the pipeline ran: measure what the app misplaces (own_drawing_offset:
        `offset`, which turning elements into components adds), asking a few more calls,
        answered by `deadline` or within _MEASURE_S if that has passed (a few calls; a
        walk cut short by a busy app still gets its boxes placed). `offset` is None when
        they went unanswered or the walk found no widget that tells (not yet shown). Its own
        menu bar, which it reports as showing behind the GTK one, is left out. A place
        read twice (a part read again while a part of it still was: _from_known) is
        kept once, as read last."""
        self.elements = list({e.order: e for e in self.elements}.values())
        if not self.own_drawing_offset:
            return
        deadline = max(deadline, time.monotonic() + _MEASURE_S)
        hidden = [bar.order for bar in self._menu_bars if not bar.native]
        self.elements = [
            e for e in self.elements if not any(e.order[: len(o)] == o for o in hidden)
        ]
        self.offset = self._drawing_offset(deadline)

    def _drawing_offset(self, deadline: float) -> int | None:
        """How far below where it says the app's own drawing is. A GTK widget it embeds
        (a toolbar's field) sits in a holder of its own drawing of the same width: the
        holder's box against the widget's is the error (none once the app has placed its
        window again, the menu bar's height before)."""
        by_order = {e.order: e for e in self.elements}
        bars = [b.box for b in self._menu_bars if b.native and b.box is not None]
        below = bars[0][1] + bars[0][3] if bars else 0
        embedded = next(
            (
                e
                for e in self.elements
                if e.native
                and "attributes" in e.answered
                and e.box is not None
                and e.box[1] >= below
                and e.role in atspi.ROLE_KINDS
            ),
            None,
        )
        if embedded is None:  # nothing tells: 0 would be a guess, and wrong until it is placed
            return None
        chain = [by_order[e] for e in prefixes(embedded.order) if e in by_order]
        for element in chain:
            element.answered.discard("attributes")
            self._send(
                atspi.call(element.app, element.path, atspi.ACCESSIBLE, "GetAttributes"),
                functools.partial(self._got, element, "attributes"),
            )
            self._send(extents(element), functools.partial(self._got, element, "box"))
        self.pipeline.run(deadline)
        if any("attributes" not in e.answered or "box" not in e.answered for e in chain):
            return None
        for holder, widget in itertools.pairwise(chain):
            if holder.native or not widget.native or holder.box is None or widget.box is None:
                continue
            if (holder.box[0], holder.box[2]) == (widget.box[0], widget.box[2]):
                return widget.box[1] - holder.box[1]
        return 0

    # -- internals -----------------------------------------------------------------------

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
            for number, (app, path) in enumerate(body[0]):
                self._visit(
                    str(app),
                    str(path),
                    (*parent.order, number),
                    item=parent.item,
                    inside=parent.inside or parent.reported,
                )

        self._send(atspi.call(parent.app, parent.path, atspi.ACCESSIBLE, "GetChildren"), got)
