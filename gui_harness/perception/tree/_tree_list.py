"""The visible items of a long list that manages its descendants (a file view of
thousands of files, a long tree that is no table), read without enumerating it: `ListRead`.

A list's children are in order, so the ones on screen are one run of consecutive
indices. A child that shows is found by looking down the list's left edge
(Component.GetAccessibleAtPoint at a few points, then the hit's index), or, for a list
that does not answer that, by a bisection over the index (a child's box above the
list's top or not). From there the children are read forward and backward, a window at a
time and pipelined (Accessible.GetChildAtIndex, then Component.GetExtents), until one
starts below the list's bottom or a whole window shows nothing (GTK 3 places what does not
show at (-2³¹, -2³¹)). A few calls to find the run, then two a child read (the walk reads
the items it is handed as any other object), at most MAX_ITEMS children.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from gui_harness.perception._pixels import clip_box
from gui_harness.perception.tree import _atspi as atspi

__all__ = ["ListRead", "child_box"]

MAX_ITEMS = 400
"""Children a list's read goes through at most, around the first visible one found."""
_WINDOW = 24  # children asked for at once when reading forward or backward
_POINTS = (0.0, 0.125, 0.25, 0.5)  # where down the list's left edge a child is looked for
_INSET = 6  # pixels inside the list's edges where the points are
_NULL = "/org/a11y/atspi/null"

Box = tuple[int, int, int, int]
Send = Callable[[Any, Callable[[tuple[Any, ...] | None], None]], None]
Found = Callable[[int, str, str, Box], None]
"""Called with a visible child's index, bus name, path and box (clipped to the list)."""


class ListRead:
    """Reads which of the `count` children of list `path` of app `app` show inside its
    screen box `box` (clipped to `screen`). start(send, found) sends the first calls
    through `send` (the walk's, so it counts them) and calls `found` for each visible
    child as the pipeline runs. `failed` says the list would not tell (no child hit at
    a point, and a child or its box could not be had during the bisection)."""

    def __init__(self, app: str, path: str, count: int, box: Box, screen: tuple[int, int]) -> None:
        self.app = app
        self.path = path
        self.count = count
        self.box = clip_box(box, screen) or (max(box[0], 0), max(box[1], 0), 0, 0)
        self.failed = False
        self.items = 0
        """Visible children found."""
        self.last: tuple[int, Box] | None = None
        """The visible child of the highest index found: its index and whole box (a list
        that scrolls without an event moves it: see AppWalk.check())."""
        self._send: Send | None = None
        self._found: Found | None = None
        self._low, self._high = 0, count
        self._examined = 0
        self._hits: dict[int, int | None] = {}

    def start(self, send: Send, found: Found) -> None:
        """Look for a visible child (nothing when the list shows no pixel)."""
        self._send, self._found = send, found
        x, y, w, h = self.box
        if w <= 2 * _INSET or h <= 2 * _INSET or self.count <= 0:
            return
        for number, fraction in enumerate(_POINTS):
            point = (x + _INSET, y + _INSET + round(fraction * (h - 2 * _INSET)))
            send(
                atspi.at_point(self.app, self.path, *point),
                functools.partial(self._got_hit, number),
            )

    # -- internals -----------------------------------------------------------------------

    def _got_hit(self, number: int, body: tuple[Any, ...] | None) -> None:
        """A point's child: its index, when it is one of the list's own children."""
        assert self._send is not None
        if body is None or str(body[0][1]) in (_NULL, self.path):
            self._hit(number, None)
            return
        app, path = str(body[0][0]), str(body[0][1])
        place: dict[str, Any] = {}

        def got(what: str, reply: tuple[Any, ...] | None) -> None:
            place[what] = reply
            if len(place) < 2:
                return
            parent, index = place["parent"], place["index"]
            mine = parent is not None and str(parent[0][1][1]) == self.path
            self._hit(number, int(index[0]) if mine and index is not None else None)

        self._send(
            atspi.get_property(app, path, atspi.ACCESSIBLE, "Parent"),
            functools.partial(got, "parent"),
        )
        self._send(
            atspi.call(app, path, atspi.ACCESSIBLE, "GetIndexInParent"),
            functools.partial(got, "index"),
        )

    def _hit(self, number: int, index: int | None) -> None:
        self._hits[number] = index
        if len(self._hits) < len(_POINTS):
            return
        found = [self._hits[n] for n in sorted(self._hits) if self._hits[n] is not None]
        hit = found[0] if found and 0 <= (found[0] or 0) < self.count else None
        if hit is None:
            self._probe()  # no point hit a child: bisect
            return
        self._read(hit, 1)
        self._read(hit, -1)

    def _probe(self) -> None:
        """One step of the bisection: is the middle child above the list's top?"""
        if self._low >= self._high:
            self._read(self._low, 1)
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

    def _read(self, start: int, step: int) -> None:
        """Read the window of children from `start` on (`step` 1) or before it (-1); go
        on while the window showed something and none was below the list."""
        if step > 0:
            low, high = start, min(start + _WINDOW, self.count)
        else:
            low, high = max(start - _WINDOW, 0), start
        high = min(high, low + MAX_ITEMS - self._examined)
        if low >= high:
            return
        self._examined += high - low
        answers: dict[int, tuple[str, str, Box | None]] = {}

        def placed(index: int, app: str, path: str, box: Box | None) -> None:
            answers[index] = (app, path, box)
            if len(answers) < high - low:
                return
            bottom = self.box[1] + self.box[3]
            shown = below = False
            for number in range(low, high):
                app, path, box = answers[number]
                if box is None:
                    continue
                if box[1] >= bottom:
                    below = True  # below the list: every later child is too
                    break
                clipped = _intersection(box, self.box)
                if clipped is not None and self._found is not None:
                    shown = True
                    self.items += 1
                    if self.last is None or number > self.last[0]:
                        self.last = (number, box)
                    self._found(number, app, path, clipped)
            if shown and not (below and step > 0):
                self._read(high if step > 0 else low, step)

        for index in range(low, high):
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
