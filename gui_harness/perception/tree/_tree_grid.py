"""The visible cells of a table that manages its descendants (a spreadsheet, a big tree
view), read from its accessibility tree without enumerating its children: `GridRead`.

The cells at the table's top-left and bottom-right visible corners (Component.
GetAccessibleAtPoint) give the visible rows and columns (from an A1-style cell name, else
the Table interface); one cell per visible column and per visible row then gives the
boundaries, which become a cells.Grid. About 2 × (rows + columns) calls, all pipelined.
Whether the corner cells are named A1-style tells a spreadsheet from a table of items
(a file view), whose visible cells the walk also reads (_tree_list.py).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from gui_harness.perception._pixels import clip_box
from gui_harness.perception.cells import Grid
from gui_harness.perception.tree import _atspi as atspi

__all__ = ["GridRead"]

MAX_LINES = 150
"""Visible rows (and columns) a grid reads at most; the rest are left out of its Grid."""
_A1 = re.compile(r"^\$?([A-Z]{1,3})\$?(\d{1,7})$")
_INSET = 3  # pixels inside the table's corners where its corner cells are looked up

Send = Callable[[Any, Callable[[tuple[Any, ...] | None], None]], None]


class GridRead:
    """Reads the visible cells of table `path` of app `app`, whose screen box is `box`
    (clipped to `screen`). start(send) sends the first calls through `send` (the walk's,
    so it counts them); `grid` is the result once the pipeline ran, or None when the
    table did not tell which cells show. `spreadsheet` says whether a corner cell was
    named A1-style; `then`, given to start(), is called with the read once both corners
    are answered."""

    def __init__(
        self,
        app: str,
        path: str,
        box: tuple[int, int, int, int],
        screen: tuple[int, int],
    ) -> None:
        self.app = app
        self.path = path
        self._screen = screen
        self.box = clip_box(box, screen) or (max(box[0], 0), max(box[1], 0), 0, 0)
        self.grid: Grid | None = None
        self.spreadsheet = False
        self._then: Callable[[GridRead], None] | None = None
        self._send: Send | None = None
        self._corners: list[tuple[int, int] | None] = [None, None]
        self._corner_answers = 0
        self._columns: dict[int, tuple[int, int]] = {}
        self._rows: dict[int, tuple[int, int]] = {}
        self._lines_pending = 0
        self._range: tuple[int, int, int, int] | None = None

    def start(self, send: Send, then: Callable[[GridRead], None] | None = None) -> None:
        """Look up the cells at the visible corners."""
        self._send, self._then = send, then
        x, y, w, h = self.box
        if w <= 2 * _INSET or h <= 2 * _INSET:
            return
        points = [(x + _INSET, y + _INSET), (x + w - _INSET, y + h - _INSET)]
        for corner, (px, py) in enumerate(points):
            send(
                atspi.at_point(self.app, self.path, px, py),
                partial(self._got_corner_cell, corner),
            )

    def shifted(self, dy: int) -> Grid | None:
        """The grid read, `dy` pixels further down (see AppWalk.offset)."""
        if self.grid is None or not dy:
            return self.grid
        rows = tuple(min(y + dy, self._screen[1]) for y in self.grid.rows)
        return dataclasses.replace(self.grid, rows=rows)

    # -- internals -----------------------------------------------------------------------

    def _got_corner_cell(self, corner: int, body: tuple[Any, ...] | None) -> None:
        assert self._send is not None
        if body is None or str(body[0][1]) == "/org/a11y/atspi/null":
            self._corner_done()
            return
        app, path = str(body[0][0]), str(body[0][1])

        def got_name(reply: tuple[Any, ...] | None) -> None:
            match = _A1.match(str(reply[0][1]).strip()) if reply is not None else None
            if match is not None:
                self.spreadsheet = True
                self._corners[corner] = (int(match.group(2)) - 1, _column_number(match[1]))
                self._corner_done()
            else:
                self._position_from_table(corner, app, path)

        self._send(atspi.get_property(app, path, atspi.ACCESSIBLE, "Name"), got_name)

    def _position_from_table(self, corner: int, app: str, path: str) -> None:
        assert self._send is not None
        send = self._send

        def got_index(body: tuple[Any, ...] | None) -> None:
            if body is None or int(body[0]) < 0:
                self._corner_done()
                return
            index = int(body[0])
            place: dict[str, int] = {}

            def got(what: str, reply: tuple[Any, ...] | None) -> None:
                place[what] = int(reply[0]) if reply is not None else -1
                if len(place) == 2:
                    if place["row"] >= 0 and place["column"] >= 0:
                        self._corners[corner] = (place["row"], place["column"])
                    self._corner_done()

            for what, method in (("row", "GetRowAtIndex"), ("column", "GetColumnAtIndex")):
                send(
                    atspi.call(self.app, self.path, atspi.TABLE, method, "i", (index,)),
                    partial(got, what),
                )

        send(atspi.call(app, path, atspi.ACCESSIBLE, "GetIndexInParent"), got_index)

    def _corner_done(self) -> None:
        self._corner_answers += 1
        if self._corner_answers < 2:
            return
        if self._then is not None:
            self._then(self)
        first, last = self._corners
        if first is None or last is None:
            return
        row0, column0 = first
        row1 = min(max(last[0], row0), row0 + MAX_LINES - 1)
        column1 = min(max(last[1], column0), column0 + MAX_LINES - 1)
        self._range = (row0, column0, row1, column1)
        lines = [("column", row0, c) for c in range(column0, column1 + 1)]
        lines += [("row", r, column0) for r in range(row0, row1 + 1)]
        self._lines_pending = len(lines)
        for kind, row, column in lines:
            self._read_cell(kind, row, column)

    def _read_cell(self, kind: str, row: int, column: int) -> None:
        assert self._send is not None
        send = self._send

        def got_cell(body: tuple[Any, ...] | None) -> None:
            if body is None:
                self._line_done()
                return
            app, path = str(body[0][0]), str(body[0][1])
            send(
                atspi.call(app, path, atspi.COMPONENT, "GetExtents", "u", (atspi.COORDS_SCREEN,)),
                got_box,
            )

        def got_box(body: tuple[Any, ...] | None) -> None:
            if body is not None:
                x, y, w, h = (int(v) for v in body[0])
                if kind == "column":
                    self._columns[column] = (x, x + w)
                else:
                    self._rows[row] = (y, y + h)
            self._line_done()

        send(
            atspi.call(self.app, self.path, atspi.TABLE, "GetAccessibleAt", "ii", (row, column)),
            got_cell,
        )

    def _line_done(self) -> None:
        self._lines_pending -= 1
        if self._lines_pending == 0:
            self.grid = self._build()

    def _build(self) -> Grid | None:
        assert self._range is not None
        row0, column0, _, _ = self._range
        x, y, w, h = self.box
        columns = _boundaries(self._columns, column0, x, x + w)
        rows = _boundaries(self._rows, row0, y, y + h)
        if len(columns) < 2 or len(rows) < 2:
            return None
        return Grid(columns=columns, rows=rows, first_column=column0, first_row=row0 + 1)


def _boundaries(
    spans: dict[int, tuple[int, int]], first: int, low: int, high: int
) -> tuple[int, ...]:
    """Boundaries of the consecutive lines from `first` that were read, clipped to
    [low, high]: each line's start, then the last one's end."""
    edges: list[int] = []
    number = first
    while number in spans:
        start, end = spans[number]
        start, end = max(start, low), min(end, high)
        if end <= start:
            break
        if not edges:
            edges.append(start)
        elif start != edges[-1]:
            edges[-1] = start  # a cell's box overlaps its neighbour's by a pixel or two
        edges.append(end)
        number += 1
    return tuple(edges)


def _column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - ord("A") + 1
    return number - 1
