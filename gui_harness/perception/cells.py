"""Addressable cells of a `grid` component: `Grid` (column and row boundaries) and the
cell names that pick one ("B3", "R3C2", or a (row, column) pair).

Pure geometry, no pixels: _grid.py finds a grid's ruling lines on a screenshot, an
accessibility source may fill one from a table's cells; the dispatcher turns a cell
name into the point a click lands on with cell_point().
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gui_harness.errors import InvalidAction

__all__ = ["Grid", "cell_box", "cell_point", "column_name", "parse_cell"]

_A1 = re.compile(r"^\s*([A-Za-z]{1,3})\s*(\d{1,7})\s*$")
_R1C1 = re.compile(r"^\s*[Rr](\d{1,7})\s*[Cc](\d{1,5})\s*$")


@dataclass(frozen=True, slots=True)
class Grid:
    """The cell geometry of a table or spreadsheet, in image pixels.

    `columns` are the x of the column boundaries left to right (n + 1 for n columns),
    `rows` the y of the row boundaries top to bottom. The first `header_rows` rows and
    `header_columns` columns are headers (a spreadsheet's column letters and row
    numbers); the cells after them are the body, named A1-style from its top-left cell,
    which is column `first_column` (0 is "A") of row `first_row` (a scrolled sheet
    shows a later one).
    """

    columns: tuple[int, ...]
    rows: tuple[int, ...]
    header_rows: int = 0
    header_columns: int = 0
    first_column: int = 0
    first_row: int = 1

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, columns) of body cells."""
        return (
            max(len(self.rows) - 1 - self.header_rows, 0),
            max(len(self.columns) - 1 - self.header_columns, 0),
        )

    def name(self, row: int, column: int) -> str:
        """The A1 name of the body cell at 0-based (`row`, `column`)."""
        return f"{column_name(self.first_column + column)}{self.first_row + row}"

    def span(self) -> str:
        """The names of the body's first and last visible cells, as "A1:F20"."""
        rows, columns = self.shape
        if not rows or not columns:
            return ""
        return f"{self.name(0, 0)}:{self.name(rows - 1, columns - 1)}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of every field (boundaries as lists)."""
        return {
            "columns": list(self.columns),
            "rows": list(self.rows),
            "header_rows": self.header_rows,
            "header_columns": self.header_columns,
            "first_column": self.first_column,
            "first_row": self.first_row,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Grid:
        """The grid `to_dict()` described."""
        return cls(
            columns=tuple(int(v) for v in data["columns"]),
            rows=tuple(int(v) for v in data["rows"]),
            header_rows=int(data.get("header_rows", 0)),
            header_columns=int(data.get("header_columns", 0)),
            first_column=int(data.get("first_column", 0)),
            first_row=int(data.get("first_row", 1)),
        )


def column_name(index: int) -> str:
    """The spreadsheet name of 0-based column `index`: 0 is "A", 25 "Z", 26 "AA"."""
    if index < 0:
        raise ValueError(f"a column index is 0 or more, not {index!r}")
    name = ""
    index += 1
    while index:
        index, rest = divmod(index - 1, 26)
        name = chr(ord("A") + rest) + name
    return name


def parse_cell(grid: Grid, cell: str | tuple[int, int]) -> tuple[int, int]:
    """The 0-based (row, column) of a body cell of `grid` named by `cell`: "B3" (A1
    style, after the grid's first_column and first_row), "R3C2" (1-based body row and
    column) or a 0-based (row, column) pair. Raises InvalidAction for a malformed name or
    a cell not on screen, naming the cells that are."""
    if isinstance(cell, tuple):
        row, column = (int(v) for v in cell)
    elif match := _A1.match(cell):
        letters, digits = match.groups()
        number = 0
        for letter in letters.upper():
            number = number * 26 + ord(letter) - ord("A") + 1
        row, column = int(digits) - grid.first_row, number - 1 - grid.first_column
    elif match := _R1C1.match(cell):
        row, column = int(match.group(1)) - 1, int(match.group(2)) - 1
    else:
        raise InvalidAction(
            f"cell={str(cell)[:40]!r} is no cell name: give one like 'B3' (column letters,"
            " row number) or 'R3C2' (row and column from 1)"
        )
    rows, columns = grid.shape
    if not (0 <= row < rows and 0 <= column < columns):
        shown = grid.span() or "none"
        raise InvalidAction(f"cell={str(cell)[:40]!r} is not on screen; the grid shows {shown}")
    return row, column


def cell_box(
    grid: Grid | Mapping[str, Any], cell: str | tuple[int, int]
) -> tuple[int, int, int, int]:
    """The (x, y, w, h) box of the body cell named `cell` (see parse_cell), in the same
    pixels as the grid's boundaries. `grid` may be a Grid or its to_dict()."""
    if not isinstance(grid, Grid):
        grid = Grid.from_dict(grid)
    row, column = parse_cell(grid, cell)
    r, c = row + grid.header_rows, column + grid.header_columns
    x0, x1 = grid.columns[c], grid.columns[c + 1]
    y0, y1 = grid.rows[r], grid.rows[r + 1]
    return (x0, y0, x1 - x0, y1 - y0)


def cell_point(component: Any, cell: str | tuple[int, int]) -> tuple[int, int]:
    """Where a click on cell `cell` of a grid component lands: the middle of the cell.

    `component` is a Component of kind "grid" or its to_dict() (the dispatcher may hold
    either). Raises InvalidAction when it has no cells or `cell` is not one of them.
    """
    grid = component.get("grid") if isinstance(component, Mapping) else component.grid
    if grid is None:
        index = component.get("index") if isinstance(component, Mapping) else component.index
        raise InvalidAction(f"component #{index} is no grid: it has no cells to address")
    x, y, w, h = cell_box(grid, cell)
    return (x + w // 2, y + h // 2)
