"""Tables and spreadsheets on pixels: `find_grids()` reads a ruled grid's column and row
boundaries from its ruling lines, so a sheet is one `grid` component, not a field per cell.

A ruling line is a run of pixels darker (or lighter) than the pixels two above and two
below it (two left and right for a vertical one), at least _RUN long. A grid is a
connected lattice of such lines with three or more rows and two or more columns of cells
of control height, neighbouring lines a cell apart (the two outlines of separate
buttons, a few pixels apart, are no grid). `cell_contents()` looks again at what the
cells hold with the rules painted over (a web table's check boxes, icon links, values).
Private to detect.py.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import cv2
import numpy as np

from gui_harness.perception.cells import Grid
from gui_harness.perception.component import Component, Kind

_T = TypeVar("_T", bound=tuple[str, tuple[int, int, int, int], float])

__all__ = ["cell_contents", "find_grids"]

_STEP = 10  # grey levels a ruling line differs from both sides by (Calc's: 63 on white)
_RUN = 40  # px; a shorter straight run is a control's side or a glyph's stroke
_COVER = 0.8  # share of the grid's width (height) a row (column) boundary runs along
_MERGE = 3  # px; lines this close are one boundary (a 2 px rule, a header's double line)
_CELL = (10, 400)  # px; cell sides outside this are no table's
_HEADER_STEP = 12  # grey levels a header row's (column's) fill differs from the body's


def find_grids(grey: np.ndarray) -> list[tuple[tuple[int, int, int, int], Grid]]:
    """The ruled grids on a grey screenshot: each one's box (x, y, w, h) and its cells
    (boundaries in image pixels, with a header row and column when their fill differs
    from the body's, as a spreadsheet's letters and numbers do)."""
    height, width = grey.shape
    if height < 3 * _CELL[0] or width < _RUN:
        return []
    grids = []
    for x, y, w, h in _lattice_regions(grey):
        for (gx, gy, gw, gh), grid in _grids_in(grey[y : y + h, x : x + w]):
            grids.append(
                (
                    (gx + x, gy + y, gw, gh),
                    Grid(
                        tuple(c + x for c in grid.columns),
                        tuple(r + y for r in grid.rows),
                        grid.header_rows,
                        grid.header_columns,
                    ),
                )
            )
    return grids


def _lattice_regions(grey: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Where grids may be, from a cheap first look on every fourth pixel along the lines:
    the boxes of the lattices of long horizontal and vertical ruling lines that cross in
    12 places or more, as a grid of three rows and two columns does at least. Most
    screens have none (a form's fields have short sides, a panel's outline crosses
    itself four times)."""
    height, width = (grey.shape[0] // 4) * 4, (grey.shape[1] // 4) * 4
    grey = grey[:height, :width]
    rows = _lines(np.ascontiguousarray(grey[:, ::4]), axis=0, gap=2, run=_RUN // 4)
    if np.count_nonzero(rows.max(axis=1)) < 4:
        return []
    columns = _lines(np.ascontiguousarray(grey[::4, :]), axis=1, gap=2, run=3 * _CELL[0] // 4)
    # both on one grid of 4×4 blocks: a block holds a line when any of its pixels does
    near = np.ones((3, 3), np.uint8)
    rows = cv2.dilate(rows.reshape(height // 4, 4, width // 4).max(axis=1), near)
    columns = cv2.dilate(columns.reshape(height // 4, width // 4, 4).max(axis=2), near)
    crossings = cv2.bitwise_and(rows, columns)
    count, crossing = cv2.connectedComponents(crossings)
    if count - 1 < 12:
        return []
    _, lattice, stats, _ = cv2.connectedComponentsWithStats(cv2.bitwise_or(rows, columns))
    inside = crossings > 0
    pairs = np.unique(np.stack([crossing[inside], lattice[inside]]), axis=1)
    per_lattice = np.bincount(pairs[1], minlength=len(stats))
    regions = []
    for label in np.flatnonzero(per_lattice >= 12).tolist():
        bx, by, bw, bh, _ = (int(v) for v in stats[label])
        x0, y0 = max(bx * 4 - 8, 0), max(by * 4 - 8, 0)
        x1, y1 = min((bx + bw) * 4 + 8, grey.shape[1]), min((by + bh) * 4 + 8, grey.shape[0])
        regions.append((x0, y0, x1 - x0, y1 - y0))
    return regions


def _grids_in(grey: np.ndarray) -> list[tuple[tuple[int, int, int, int], Grid]]:
    """The grids in one region where the first look found a lattice (see find_grids)."""
    horizontal = _lines(grey, axis=0, gap=2)
    vertical = _lines(grey, axis=1, gap=2)
    lattice = cv2.bitwise_or(horizontal, vertical)
    contours, _ = cv2.findContours(lattice, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    grids = []
    for contour in contours:
        x, y, w, h = cv2.boundingRect(contour)
        if w < 2 * _RUN or h < 3 * _CELL[0]:
            continue
        rows_mask, columns_mask = horizontal[y : y + h, x : x + w], vertical[y : y + h, x : x + w]
        if _lattice(rows_mask, columns_mask) is None:
            continue
        # a grid: look again for the 1 px rules that text close by hid from the first look
        crop = grey[y : y + h, x : x + w]
        found = _lattice(
            cv2.bitwise_or(rows_mask, _lines(crop, axis=0, gap=1)),
            cv2.bitwise_or(columns_mask, _lines(crop, axis=1, gap=1)),
        )
        if found is None:
            continue
        columns, rows = found
        columns = tuple(x + c for c in columns)
        rows = tuple(y + r for r in rows)
        header_rows, header_columns = _headers(grey, columns, rows)
        box = (columns[0], rows[0], columns[-1] - columns[0] + 1, rows[-1] - rows[0] + 1)
        grids.append((box, Grid(columns, rows, header_rows, header_columns)))
    return grids


def cell_contents(
    image: np.ndarray | None,
    grey: np.ndarray,
    found: list[_T],
    grids: list[tuple[tuple[int, int, int, int], Grid]],
    detect: Callable[[np.ndarray, np.ndarray, int], list[Component]],
) -> list[_T | tuple[Kind, tuple[int, int, int, int], float]]:
    """`found` with what each grid's cells hold looked for again inside the grid, its
    rules painted over with the fill beside them: a ruled cell's outline made a field or
    a button of it, which swallowed what it holds (a web table's check boxes, icon links,
    sort links, values). What `found` has inside a grid gives way to that look; in a
    header cell only text goes (the grid names those cells); links and controls stay.
    `image`: the screen's RGB (None: grey only); `detect`: detection on a crop that
    touches no screen edge (detect.py's, grids left out)."""
    if not grids:
        return list(found)
    height, width = grey.shape
    kept: list[_T | tuple[Kind, tuple[int, int, int, int], float]] = [
        item for item in found if _grid_at(item[1], grids) is None
    ]
    for (gx, gy, gw, gh), grid in grids:
        x0, y0 = max(gx, 0), max(gy, 0)
        x1, y1 = min(gx + gw, width), min(gy + gh, height)
        if x1 - x0 < 10 or y1 - y0 < 10:
            continue
        crop = np.array(grey[y0:y1, x0:x1])
        colour = np.array(image[y0:y1, x0:x1]) if image is not None else crop
        for rows, axis in ((grid.rows, 0), (grid.columns, 1)):
            origin = y0 if axis == 0 else x0
            for line in rows:
                _paint_over(crop, line - origin, axis)
                if colour is not crop:
                    _paint_over(colour, line - origin, axis)
        for c in detect(colour, crop, 200):
            box = (c.box[0] + x0, c.box[1] + y0, c.box[2], c.box[3])
            where = _grid_at(box, [((gx, gy, gw, gh), grid)])
            if where is not None and where[2] and c.kind == "text":
                continue
            kept.append((c.kind, box, c.confidence))
    return kept


def _paint_over(pixels: np.ndarray, line: int, axis: int) -> None:
    """Paint the rule at `line` (a row when `axis` is 0, a column when 1) of `pixels`,
    up to 4 px thick from a pixel before it, with the pixels 3 before it (after it at
    the crop's start)."""
    size = pixels.shape[axis]
    start, stop = max(line - 1, 0), min(line + 4, size)
    if start >= stop:
        return
    source = line - 3 if line - 3 >= 0 else min(stop, size - 1)
    if axis == 0:
        pixels[start:stop] = pixels[source : source + 1]
    else:
        pixels[:, start:stop] = pixels[:, source : source + 1]


def _grid_at(
    box: tuple[int, int, int, int], grids: list[tuple[tuple[int, int, int, int], Grid]]
) -> tuple[int, int, bool] | None:
    """(row, column, in a header) of the cell of `grids` `box`'s centre is in; None when
    it is in no grid."""
    x, y, w, h = box
    cx, cy = x + w / 2, y + h / 2
    for (gx, gy, gw, gh), grid in grids:
        if gx <= cx < gx + gw and gy <= cy < gy + gh:
            c = min(int(np.searchsorted(grid.columns, cx, side="right")) - 1, len(grid.columns) - 2)
            r = min(int(np.searchsorted(grid.rows, cy, side="right")) - 1, len(grid.rows) - 2)
            return r, c, r < grid.header_rows or c < grid.header_columns
    return None


def _lines(grey: np.ndarray, *, axis: int, gap: int, run: int = _RUN) -> np.ndarray:
    """A mask of the straight ruling lines across `axis` (0: horizontal lines; 1:
    vertical ones), each at least _RUN long; the one-pixel gaps where lines cross are
    bridged. A line pixel differs, the same way, from both pixels `gap` away across the
    line: 2 finds 1-3 px rules, 1 finds a 1 px rule with text close by. `run`: the
    shortest line kept, in pixels."""
    mask = np.zeros_like(grey)
    if axis == 0:
        before, middle, after = grey[: -2 * gap], grey[gap:-gap], grey[2 * gap :]
        out = mask[gap:-gap]
        bridge, kernel = np.ones((1, 3), np.uint8), np.ones((1, run), np.uint8)
    else:
        before, middle, after = grey[:, : -2 * gap], grey[:, gap:-gap], grey[:, 2 * gap :]
        out = mask[:, gap:-gap]
        bridge, kernel = np.ones((3, 1), np.uint8), np.ones((run, 1), np.uint8)
    darker = cv2.subtract(cv2.min(before, after), middle)
    lighter = cv2.subtract(middle, cv2.max(before, after))
    cv2.threshold(cv2.max(darker, lighter), _STEP - 1, 255, cv2.THRESH_BINARY, dst=out)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, bridge)
    return cv2.morphologyEx(mask, cv2.MORPH_OPEN, kernel)


def _boundaries(mask: np.ndarray, axis: int, span: tuple[int, int]) -> list[int]:
    """Positions of the lines in `mask` (0: rows, 1: columns) that run along at least
    _COVER of `span` (start, stop along the other axis), lines within _MERGE merged."""
    start, stop = span
    if axis == 0:
        cover = mask[:, start:stop].sum(axis=1, dtype=np.int32)
    else:
        cover = mask[start:stop, :].sum(axis=0, dtype=np.int32)
    positions = np.flatnonzero(cover.ravel() >= 255 * _COVER * (stop - start))
    merged: list[int] = []
    for position in positions.tolist():
        if merged and position - merged[-1] <= _MERGE:
            continue
        merged.append(position)
    return merged


def _lattice(
    horizontal: np.ndarray, vertical: np.ndarray
) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Column and row boundaries (relative to the crop) of the grid the two line masks
    of one connected lattice make, or None when they make none."""
    height, width = horizontal.shape
    xspan, yspan = (0, width), (0, height)
    rows: list[int] = []
    columns: list[int] = []
    for _ in range(3):  # narrow both spans to the grid until they hold still
        rows = _boundaries(horizontal, 0, xspan)
        columns = _boundaries(vertical, 1, yspan)
        if len(rows) < 4 or len(columns) < 3:
            return None
        if (xspan, yspan) == ((columns[0], columns[-1] + 1), (rows[0], rows[-1] + 1)):
            break
        xspan, yspan = (columns[0], columns[-1] + 1), (rows[0], rows[-1] + 1)
    # cells cut off by the grid's container (a sheet's last column and row, its
    # headers at the window's edge): the lines run on past the last boundary
    columns = _extend(columns, [horizontal[r] for r in rows])
    rows = _extend(rows, [vertical[:, c] for c in columns if c < width])
    steps = np.diff(rows), np.diff(columns)
    if any(s.min() < _CELL[0] or s.max() > _CELL[1] for s in steps):
        return None
    return tuple(columns), tuple(rows)


def _extend(boundaries: list[int], lines: list[np.ndarray]) -> list[int]:
    """`boundaries` with the ends of the `lines` that cross them added, where most of
    them run on a cell's side (_CELL[0]) or more past the first or last boundary."""
    ends = [np.flatnonzero(line) for line in lines]
    ends = [e for e in ends if len(e)]
    if len(ends) < 0.5 * len(lines):
        return boundaries
    first = int(np.median([e[0] for e in ends]))
    last = int(np.median([e[-1] for e in ends]))
    if first <= boundaries[0] - _CELL[0]:
        boundaries = [first, *boundaries]
    if last >= boundaries[-1] + _CELL[0]:
        boundaries = [*boundaries, last]
    return boundaries


def _headers(grey: np.ndarray, columns: tuple[int, ...], rows: tuple[int, ...]) -> tuple[int, int]:
    """Whether the first row and the first column are headers: their cells' fill (the
    median inside each, off the lines) differs by _HEADER_STEP or more from the body's
    on every body row (a striped table's rows take turns; its first row is the fill of
    one of them, its first column the fill of each row, and neither is a header)."""

    def fill(x0: int, x1: int, y0: int, y1: int) -> float:
        inside = grey[y0 + 2 : y1 - 1, x0 + 2 : x1 - 1]
        return float(np.median(inside)) if inside.size else -1.0

    body = [fill(columns[1], columns[-1], rows[r], rows[r + 1]) for r in range(1, len(rows) - 1)]
    left = [fill(columns[0], columns[1], rows[r], rows[r + 1]) for r in range(1, len(rows) - 1)]
    top = fill(columns[1], columns[-1], rows[0], rows[1])
    header_rows = int(min(abs(top - b) for b in set(body)) >= _HEADER_STEP)
    header_columns = int(
        np.median(np.abs(np.array(left) - np.array(body))) >= _HEADER_STEP
        and abs(np.median(left) - np.median(body)) >= _HEADER_STEP
    )
    return header_rows, header_columns
