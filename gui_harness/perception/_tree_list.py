"""The visible items of a long list that manages its descendants (a file view of
thousands of files, a long tree that is no table), read without enumerating it: `ListRead`.

A list's children are in order, so the ones on screen are one run of consecutive
indices: a bisection over the index (Accessible.GetChildAtIndex, then the child's
Component.GetExtents) finds the first child whose box reaches below the list's top, and
the children from there are read forward, a window at a time and pipelined, until one
starts below the list's bottom. About 2 × log2(children) calls in sequence, then two a
child read (the walk reads the items it is handed as any other object).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gui_harness.perception import _atspi as atspi

__all__ = ["ListRead", "child_box"]

MAX_ITEMS = 400
"""Children a list's read goes through at most, from the first visible one on."""
_WINDOW = 24  # children asked for at once when reading forward

Box = tuple[int, int, int, int]
Send = Callable[[Any, Callable[[tuple[Any, ...] | None], None]], None]
Found = Callable[[int, str, str, Box], None]
"""Called with a visible child's index, bus name, path and box (clipped to the list)."""


class ListRead:
    """Reads which of the `count` children of list `path` of app `app` show inside its
    screen box `box` (clipped to `screen`). start(send, found) sends the first calls
    through `send` (the walk's, so it counts them) and calls `found` for each visible
    child as the pipeline runs. `failed` says the list would not tell (a child or its
    box could not be had while looking for the visible ones)."""

    def __init__(self, app: str, path: str, count: int, box: Box, screen: tuple[int, int]) -> None:
        self.app = app
        self.path = path
        self.count = count
        x, y, w, h = box
        x0, y0 = max(x, 0), max(y, 0)
        x1, y1 = min(x + w, screen[0]), min(y + h, screen[1])
        self.box = (x0, y0, max(x1 - x0, 0), max(y1 - y0, 0))
        self.failed = False
        self.first: int | None = None
        """The index reading forward started at, once the bisection found it."""
        self.items = 0
        """Visible children found."""
        self.last: tuple[int, Box] | None = None
        """The last visible child found: its index and whole box (a list that scrolls
        without an event moves it: see AppWalk.check())."""
        self._send: Send | None = None
        self._found: Found | None = None
        self._low, self._high = 0, count

    def start(self, send: Send, found: Found) -> None:
        """Look for the first visible child (nothing when the list shows no pixel)."""
        self._send, self._found = send, found
        if self.box[2] <= 0 or self.box[3] <= 0 or self.count <= 0:
            return
        self._probe()

    # -- internals -----------------------------------------------------------------------

    def _probe(self) -> None:
        """One step of the bisection: is the middle child above the list's top?"""
        if self._low >= self._high:
            self.first = self._low
            self._read_from(self._low)
            return
        middle = (self._low + self._high) // 2

        def placed(_: str, __: str, box: Box | None) -> None:
            if box is None:
                self.failed = True
                return
            if box[1] + box[3] <= self.box[1]:  # above what shows
                self._low = middle + 1
            else:
                self._high = middle
            self._probe()

        self._child(middle, placed)

    def _read_from(self, start: int) -> None:
        """Read the next window of children; go on while none starts below the list."""
        stop = min(start + _WINDOW, self.count, (self.first or 0) + MAX_ITEMS)
        if start >= stop:
            return
        answers: dict[int, tuple[str, str, Box | None]] = {}

        def placed(index: int, app: str, path: str, box: Box | None) -> None:
            answers[index] = (app, path, box)
            if len(answers) < stop - start:
                return
            bottom = self.box[1] + self.box[3]
            for number in range(start, stop):
                app, path, box = answers[number]
                if box is None:
                    continue
                if box[1] >= bottom:
                    return  # below the list: every later child is too
                clipped = _intersection(box, self.box)
                if clipped is not None and self._found is not None:
                    self.items += 1
                    self.last = (number, box)
                    self._found(number, app, path, clipped)
            self._read_from(stop)

        for index in range(start, stop):
            self._child(index, functools.partial(placed, index))

    def _child(self, index: int, then: Callable[[str, str, Box | None], None]) -> None:
        assert self._send is not None
        child_box(self._send, self.app, self.path, index, then)


def child_box(
    send: Send, app: str, path: str, index: int, then: Callable[[str, str, Box | None], None]
) -> None:
    """Ask for the child at `index` of `path`, then its screen box; `then` gets the child's
    bus name, path and box (None when either went unanswered)."""

    def got_child(body: tuple[Any, ...] | None) -> None:
        if body is None or str(body[0][1]) == "/org/a11y/atspi/null":
            then("", "", None)
            return
        child_app, child = str(body[0][0]), str(body[0][1])

        def got_box(reply: tuple[Any, ...] | None) -> None:
            if reply is None:
                then(child_app, child, None)
                return
            x, y, w, h = (int(v) for v in reply[0])
            then(child_app, child, (x, y, w, h))

        send(
            atspi.call(
                child_app, child, atspi.COMPONENT, "GetExtents", "u", (atspi.COORDS_SCREEN,)
            ),
            got_box,
        )

    send(atspi.call(app, path, atspi.ACCESSIBLE, "GetChildAtIndex", "i", (index,)), got_child)


def _intersection(a: Box, b: Box) -> Box | None:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)
