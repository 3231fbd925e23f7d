"""Naming a pixel grid's cells after its own headers: `crops()` and `named()`.

A grid found on pixels knows its cells' geometry, not their names: a sheet scrolled to row
40 would still call its top-left cell A1. Its header row and column say: the column
headers above the first two body columns hold their letters ("C", "D"), the row headers
left of the first two body rows their numbers ("40", "41"). OCR reads those four cells
(ocr_worker.py queues them like any label); `named()` sets the grid's first column and
row when they read as a spreadsheet's, one after the other (a data table's titles, "Qty"
and "Price", are no column letters), and leaves the grid as it was otherwise. Knows no
OCR engine.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

import numpy as np

from gui_harness.perception.component import Component

_LETTERS = re.compile(r"[A-Z]{1,3}")
_NUMBER = re.compile(r"[0-9]{1,7}")
_DIGIT_LOOKALIKES = str.maketrans({"O": "0", "o": "0", "l": "1", "I": "1", "|": "1"})
_INSET = 2  # px inside a header cell's rules


def crops(grey: np.ndarray, component: Component) -> list[np.ndarray]:
    """The grey crops of the column headers over the first two body columns, then the
    row headers left of the first two body rows; none for a grid without both headers
    and two body rows and columns, or one whose names came from the app (an
    accessibility tree's)."""
    grid = component.grid
    if grid is None or component.source != "pixels":
        return []
    if grid.header_rows < 1 or grid.header_columns < 1 or min(grid.shape) < 2:
        return []
    rows, columns = grid.rows, grid.columns
    top, body_top = rows[0], rows[grid.header_rows]
    left, body_left = columns[0], columns[grid.header_columns]
    found = [
        *(_cut(grey, columns[c], top, columns[c + 1], body_top) for c in _two(grid.header_columns)),
        *(_cut(grey, left, rows[r], body_left, rows[r + 1]) for r in _two(grid.header_rows)),
    ]
    return [crop for crop in found if crop is not None] if all(c is not None for c in found) else []


def named(component: Component, texts: Sequence[str | None]) -> Component:
    """`component` whose grid starts at the column and row its headers' `texts` name
    (from crops(), in its order); unchanged unless they read as consecutive column
    letters and consecutive row numbers."""
    grid = component.grid
    if grid is None or len(texts) != 4 or not all(texts):
        return component
    first, second = (_column(str(text)) for text in texts[:2])
    top, below = (_row(str(text)) for text in texts[2:])
    if first is None or second != first + 1 or top is None or below != top + 1 or top < 1:
        return component
    found = dataclasses.replace(grid, first_column=first, first_row=top)
    return dataclasses.replace(component, grid=found)


def _two(start: int) -> range:
    return range(start, start + 2)


def _column(text: str) -> int | None:
    """The 0-based column that header letters name ("A" 0, "AA" 26), or None."""
    letters = text.strip().upper().replace(" ", "")
    if not _LETTERS.fullmatch(letters):
        return None
    column = 0
    for letter in letters:
        column = column * 26 + ord(letter) - ord("A") + 1
    return column - 1


def _row(text: str) -> int | None:
    number = text.strip().translate(_DIGIT_LOOKALIKES).replace(" ", "")
    return int(number) if _NUMBER.fullmatch(number) else None


def _cut(grey: np.ndarray, x0: int, y0: int, x1: int, y1: int) -> np.ndarray | None:
    height, width = grey.shape
    x0, y0 = max(0, x0 + _INSET), max(0, y0 + _INSET)
    x1, y1 = min(width, x1 - _INSET + 1), min(height, y1 - _INSET + 1)
    if x1 - x0 < 4 or y1 - y0 < 4:
        return None
    return grey[y0:y1, x0:x1]
