"""Controls made of parts that pixel detection reads inside one box: the buttons of a
toolbar, the tabs of a tab strip, the two arrows of a spin box. Private to detect.py,
which calls these on the boxes it found.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from gui_harness.perception.detect import Kind

__all__ = ["PART_OF_CONTROL_H", "Found", "bar_cells", "spin_buttons", "tabs"]

PART_OF_CONTROL_H = 48  # px; a box up to this high owns the much lower boxes inside it

Found = tuple["Kind", tuple[int, int, int, int], float]


def bar_cells(thin: np.ndarray, controls: list[Found]) -> list[Found]:
    """The buttons of toolbars: inside a low, wide box, three or more separate marks
    (icons, single glyphs), each narrower than the bar is high, at a regular pitch; each
    becomes a button one pitch wide and as high as the bar's inside."""
    cells: list[Found] = []
    for _, (x, y, w, h), _ in controls:
        if h > PART_OF_CONTROL_H or w < 3 * h:
            continue
        columns = np.count_nonzero(thin[y + 3 : y + h - 3, x + 3 : x + w - 3], axis=0) > 0
        ink = np.flatnonzero(columns)
        if len(ink) < 3:
            continue
        gap = max(6, h // 3)  # wider than a word space
        breaks = np.flatnonzero(np.diff(ink) > gap)
        starts = np.concatenate([ink[:1], ink[breaks + 1]])
        ends = np.concatenate([ink[breaks], ink[-1:]]) + 1
        if len(starts) < 3 or (ends - starts).max() > h:
            continue
        centres = (starts + ends) / 2
        pitches = np.diff(centres)
        if np.ptp(pitches) > 3 or pitches.min() < 0.8 * h:
            continue
        pitch = float(np.median(pitches))
        for centre in centres.tolist():
            left = x + 3 + round(centre - pitch / 2)
            cells.append(("button", (max(left, x + 1), y + 1, round(pitch), h - 2), 0.5))
    return cells


def tabs(found: list[Found]) -> list[Found]:
    """Buttons in a row of three or more of one height, touching or nearly, are tabs."""
    buttons = sorted(
        (i for i, (kind, _, _) in enumerate(found) if kind == "button"),
        key=lambda i: (found[i][1][1], found[i][1][0]),
    )
    runs: list[list[int]] = []
    for i in buttons:
        bx, by, _, bh = found[i][1]
        for run in runs:
            px, py, pw, ph = found[run[-1]][1]
            if abs(by - py) <= 2 and abs(bh - ph) <= 2 and -2 <= bx - (px + pw) <= 3:
                run.append(i)
                break
        else:
            runs.append([i])
    tabbed = list(found)
    for run in runs:
        if len(run) >= 3:
            for i in run:
                tabbed[i] = ("tab", found[i][1], 0.6)
    return tabbed


def spin_buttons(grey: np.ndarray, found: list[Found]) -> list[Found]:
    """`found` with each spin box's arrow column split into its two buttons: a box no
    wider than high holding two marks, one in each half, each mirror-symmetric left to
    right and the lower the upper turned upside down (the up and down arrows)."""
    result: list[Found] = []
    for kind, box, confidence in found:
        x, y, w, h = box
        halves = None
        if kind in ("button", "icon") and 14 <= h <= PART_OF_CONTROL_H and w <= 1.3 * h:
            halves = _arrow_halves(grey[y : y + h, x : x + w])
        if halves is None:
            result.append((kind, box, confidence))
            continue
        top = halves
        result.append(("button", (x, y, w, top), 0.6))
        result.append(("button", (x, y + top, w, h - top), 0.6))
    return result


def _arrow_halves(patch: np.ndarray) -> int | None:
    """Where a column holding an up and a down arrow splits (rows from its top), or None
    when `patch` does not hold two such marks."""
    background = int(np.median(patch))
    ink = np.abs(patch.astype(np.int16) - background) >= 60
    rows = np.flatnonzero(ink.any(axis=1))
    if len(rows) < 4:
        return None
    gaps = np.flatnonzero(np.diff(rows) > 1)
    if len(gaps) != 1:
        return None  # not exactly two bands of ink
    upper = ink[rows[0] : rows[gaps[0]] + 1]
    lower = ink[rows[gaps[0] + 1] : rows[-1] + 1]
    if upper.shape != lower.shape or upper.shape[0] < 3:
        return None
    columns = np.flatnonzero(upper.any(axis=0))
    mark = upper[:, columns[0] : columns[-1] + 1]
    if mark.shape[1] >= patch.shape[1] - 2:
        return None  # a mark across the whole box is a border, not an arrow
    symmetric = np.count_nonzero(mark != mark[:, ::-1]) <= 0.1 * mark.size
    flipped = np.count_nonzero(upper != lower[::-1]) <= 0.1 * upper.size
    narrowing = upper[0].sum() != upper[-1].sum()  # a triangle, not a bar or a dot
    if not (symmetric and flipped and narrowing):
        return None
    return int(rows[gaps[0]] + rows[gaps[0] + 1] + 1) // 2
