"""A bounded walk of one app's accessibility tree, for apps a Collection query cannot read
(GTK 4 and Qt have no Collection interface; LibreOffice's never answers: its spreadsheet
has millions of cells), kept current across snapshots.

Owns `AppWalk` (an element read is _tree_node.py's `Element`; what each object is asked,
and descending into what shows, is _tree_read.py's `TreeRead`, its base). start() reads
the app's windows and all that shows in them; refresh() reads again what the tree's
events say changed, check() what the toolkit changes unsaid (`unsaid`: managed lists,
Qt's tab lists); finish() measures how
far LibreOffice misplaces what it draws itself. Every call is pipelined
(_atspi.Pipeline), so the walk costs the app's own answering time, bounded by a node cap
and the caller's deadline. Turning elements into components is accessibility.py's job.
"""

from __future__ import annotations

import functools
import itertools
import time
from typing import Any

from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_list import child_box
from gui_harness.perception.tree._tree_node import (
    Element,
    extents,
    outermost,
    prefixes,
    shows,
    within,
)
from gui_harness.perception.tree._tree_read import TreeRead, window_part

__all__ = ["AppWalk"]

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
_HOPS = 4  # Parent calls up from an object never read to one that was


class AppWalk(TreeRead):
    """Walks app `app` from its root object on `pipeline`, reusing the roles in `roles`
    ((app, path) → role; an object's role does not change) and adding to them; `screen`
    is (width, height), which a grid's visible cells are clipped to. `showing_reported=False`
    is for a toolkit that sets SHOWING on windows only (GTK 4.8): there VISIBLE counts
    as showing, and is recorded so in the element's states. `own_drawing_offset=True` is
    for LibreOffice on GTK 3, which reports what it draws itself (all but the GTK widgets,
    whose attributes say toolkit=gtk) as if its GTK menu bar took no room: finish() moves
    those boxes down by the menu bar's height. `quiet_tabs=True` is for Qt, which adds a
    tab or moves the selection between tabs without a word: its tab bars are among what
    each snapshot asks whether it changed (check()), and are read again whenever its tree
    changed (refresh()), so no tab is missing and no two say "selected".
    `quiet_popovers=True` is for GTK 3, which draws a popover as a part of its window
    over the others and slides it into place (or moves it) telling only bounds-changed:
    such a part's box is among what each snapshot asks again (check()), and a part that
    moved is read again with its items.
    `quiet_moves=True` is for GTK 4, which reports a widget's new size but not a move:
    when anything in a window changed size or what it holds, every box in that window is
    read again (what comes after an expander that opened has moved down, unsaid).
    `tells_windows=True` is for GTK 3, which tells when a window comes or goes (a menu's
    own window): a kept walk then has its windows listed again (refresh(windows=True))
    rather than the app read afresh.

    start() sends the first calls; the pipeline's run() does the rest. Afterwards
    `elements` holds what was read, `complete` says whether the walk finished, and
    `skipped` counts managed lists whose children were left out (the list would not
    say which of them show).
    """

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

    def refresh(
        self, pipeline: atspi.Pipeline, paths: dict[str, set[str]], *, windows: bool = False
    ) -> None:
        """Read again, on `pipeline`, the objects at `paths` (those that sent tree
        events, with the events' names), keeping the rest of the last walk. With
        `windows` (a window came or went), the app's windows are listed again: one not
        read before is read with all that shows in it, one gone is dropped with what it
        held, the others are kept as the rest is (_relist). An object
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
            tops = {e.order[:1] for e in moved + deep}
            moved += [e for e in self.elements if e.order in tops and shows(e)]
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
        for element in self.unsaid:  # the parts kept that change unsaid (see check())
            if not within(element, inside) and not within(element, shifted):
                self._check(element)
        if windows:  # (before the calls up from what was never read: a new window's items)
            self._relist(inside)
        for path, events in paths.items():
            if (
                path != atspi.ROOT
                and path not in by_path
                and events & (_SUBTREE_CHANGES | _GRID_MOVES)
            ):
                self._from_known(path, _HOPS, inside)

    def _relist(self, done: list[tuple[int, ...]]) -> None:
        """The app root's children, its windows, listed again: a window not read before
        is read with all that shows in it (numbered by its place among them, or after the
        windows kept when a kept one holds that number; added to `done`, what this
        refresh reads whole), one no longer listed is dropped with all below it, and the
        windows read before are kept as they are."""

        def listed(body: tuple[Any, ...] | None) -> None:
            if body is None:
                return
            now = [(str(app), str(path)) for app, path in body[0]]
            known = {e.path: e for e in self.elements if len(e.order) == 1}
            paths = {path for _, path in now}
            gone = [e.order for e in known.values() if e.path not in paths]
            if gone:
                self.elements = [e for e in self.elements if not within(e, gone)]
                self._menu_bars = [b for b in self._menu_bars if not within(b, gone)]
            used = {e.order[0] for e in known.values() if e.path in paths}
            for number, (app, path) in enumerate(now):
                if path in known:
                    continue
                index = number if number not in used else max(used) + 1
                used.add(index)
                done.append((index,))
                self._visit(app, path, (index,))

        self._send(atspi.call(self.app, atspi.ROOT, atspi.ACCESSIBLE, "GetChildren"), listed)

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

    def check(self, pipeline: atspi.Pipeline) -> None:
        """Ask each part the toolkit changes unsaid (`unsaid`), on `pipeline`, whether
        it still holds and shows what was read: its child count; for a long list the box
        of the last visible child read; for a tab list which of its tabs are selected. A
        part where any of these changed, or a long list where no child was seen showing,
        is read again with all below it (a tab list with the pages it switches: what
        holds it); the rest of the last walk is kept. The pipeline's run() does the
        reading. refresh() checks the parts it does not read again the same way."""
        self._on(pipeline)
        for element in self.unsaid:
            self._check(element)

    def _check(self, element: Element) -> None:
        if element.role == atspi.PAGE_TAB_LIST and element.run is None:
            self._check_tabs(element)
            return
        managed = element.states & (1 << atspi.MANAGES_DESCENDANTS) and "count" in element.answered
        if window_part(element) and not managed:
            self._check_place(element)
            return
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

    def _check_place(self, part: Element) -> None:
        """A window's part asked its box again: when it moved or changed size (a GTK 3
        popover sliding into place), it is read again with all it holds."""

        def placed(body: tuple[Any, ...] | None) -> None:
            now = tuple(int(v) for v in body[0]) if body is not None else None
            if now != part.box:
                self._again(part)

        self._send(extents(part), placed)

    def _check_tabs(self, tabs: Element) -> None:
        """A tab list's count and its tabs' selected states asked again: when either
        changed, what holds the list (its pages too) is read again."""
        holder = next((e for e in self.elements if e.order == tabs.order[:-1]), tabs)
        stale: list[bool] = []

        def again(changed: bool) -> None:
            if changed and not stale:
                stale.append(True)
                self._again(holder)

        def counted(body: tuple[Any, ...] | None) -> None:
            again(body is None or int(body[0][1]) != tabs.count)

        self._send(atspi.get_property(tabs.app, tabs.path, atspi.ACCESSIBLE, "ChildCount"), counted)
        selected = 1 << atspi.SELECTED
        for tab in self.elements:
            if tab.order[:-1] != tabs.order or tab.role != atspi.PAGE_TAB:
                continue

            def stated(body: tuple[Any, ...] | None, was: int = tab.states & selected) -> None:
                again(body is None or atspi.state_bits(body) & selected != was)

            self._send(atspi.call(tab.app, tab.path, atspi.ACCESSIBLE, "GetState"), stated)

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
