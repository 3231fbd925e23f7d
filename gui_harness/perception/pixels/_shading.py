"""How a box is shaded, for detect.py: a side that is only a gradient's band, which the
low-threshold edge pass marks though no line is drawn there (a Swing Metal menu bar's
fill read as an entry field's bottom border), and a 3-D relief raised from its page, lit
from the top left (a Tk menu bar, a Motif or Tk button), which an entry field never is:
fields are sunken or flat. Private to detect.py.
"""

from __future__ import annotations

import numpy as np

__all__ = ["banded", "raised"]

_STEP = 5  # grey levels between neighbouring rows that make a drawn line, not a ramp
_RELIEF = 15  # grey levels a relief's lit or shaded side differs from the inside by

Box = tuple[int, int, int, int]


def _rows(grey: np.ndarray, box: Box) -> tuple[np.ndarray, int] | None:
    """The medians of the rows from 3 px above `box` to 3 px below it over the middle
    of its width (so text inside does not count), and the screen row of the first."""
    x, y, w, h = box
    height, width = grey.shape
    x0, x1 = max(x + w * 3 // 20, 0), min(x + w * 17 // 20, width)
    top, bottom = max(y - 3, 0), min(y + h + 3, height)
    if x1 - x0 < 4 or h < 6 or bottom - top < 6:
        return None
    return np.median(grey[top:bottom, x0:x1], axis=1), top


def banded(grey: np.ndarray, box: Box) -> bool:
    """Whether `box`'s top or bottom side is no drawn line but a band of a smooth
    gradient: no two neighbouring rows within 3 px of it differ by _STEP grey levels or
    more (a fill that darkens 3 levels a row, which the Sobel operator sums into an
    edge's strength over its three rows). A drawn outline, however pale, is a step."""
    found = _rows(grey, box)
    if found is None:
        return False
    rows, top = found
    _, y, _, h = box
    steps = np.abs(np.diff(rows))
    for side in (y, y + h):
        near = steps[max(side - 3 - top, 0) : max(side + 3 - top, 0)]
        if len(near) and float(near.max()) < _STEP:
            return True
    return False


def raised(grey: np.ndarray, box: Box) -> bool:
    """Whether `box` is drawn raised: going out from its inside across the middle of its
    top side, the first row that differs from the inside by _RELIEF grey levels or more
    is lighter, and across its bottom side darker (the light from the top left of a 3-D
    relief). A sunken field has the dark line on top; a flat one the same line all
    round."""
    found = _rows(grey, box)
    if found is None:
        return False
    rows, top = found
    x, y, w, h = box
    inset = max(1, min(3, h // 4))
    x0, x1 = max(x + w * 3 // 20, 0), x + w * 17 // 20
    inside = float(np.median(grey[y + inset : y + h - inset, x0:x1]))

    def first(start: int, stop: int, step: int) -> float:
        for row in range(start, stop, step):
            if 0 <= row - top < len(rows) and abs(rows[row - top] - inside) >= _RELIEF:
                return float(rows[row - top] - inside)
        return 0.0

    return first(y + inset, y - 4, -1) > 0 and first(y + h - 1 - inset, y + h + 3, 1) < 0
