"""Names for buttons whose one drawn mark is a symbol OCR does not read: `glyph_label()`
tells a minus, a plus, a times sign, a division sign, an equals sign and a point apart by
the shape of their ink (bars, dots, crossings), or says None. A calculator's keys draw
"−", "×", "÷", "=", "." alone in their box: OCR finds no line of text there (a mark one
glyph wide is not a line) or reads "×" as the letter "x", and trees may name the keys by
the program's words ("multiply", "result", "numeric_point"), not by what the user reads.
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["glyph_label"]

_INK = 48  # grey levels from the crop's background that make ink
_SPECK = 2  # px of ink a mark needs to count (anti-aliasing leaves lone pixels)
_FULL = 0.8  # share of a bar's or a stroke's pixels that are ink


def glyph_label(crop: np.ndarray) -> str | None:
    """ "-", "+", "×", "÷", "=" or "." when the only ink inside `crop` (grey, a button's box
    less its border) is that symbol, drawn small and near its middle; else None."""
    if min(crop.shape) < 8:
        return None
    height, width = crop.shape
    ink = (np.abs(crop.astype(np.int16) - int(np.median(crop))) > _INK).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    marks = sorted(
        (tuple(int(v) for v in stats[n, :5]) for n in range(1, count) if stats[n, 4] > _SPECK),
        key=lambda mark: mark[1],
    )
    if not 1 <= len(marks) <= 3:
        return None
    left = min(m[0] for m in marks)
    top = min(m[1] for m in marks)
    right = max(m[0] + m[2] for m in marks)
    bottom = max(m[1] + m[3] for m in marks)
    if right - left > 0.75 * width or bottom - top > 0.8 * height:
        return None  # a glyph is small beside its box: this is a word or a picture
    if abs((left + right) / 2 - width / 2) > width / 4:
        return None  # not centred: a caption's first letter, an icon beside text
    if len(marks) == 1:
        return _one(marks[0], ink, height)
    if len(marks) == 2 and all(_bar(m) for m in marks):
        upper, lower = marks
        if (
            abs(upper[2] - lower[2]) <= 2  # as wide
            and abs(upper[0] - lower[0]) <= 2  # one above the other
            and lower[1] - (upper[1] + upper[3]) >= 1  # with a gap
        ):
            return "="
    if len(marks) == 3 and _bar(marks[1]) and all(_dot(m) for m in (marks[0], marks[2])):
        bar = marks[1]
        middle = bar[0] + bar[2] / 2
        if all(abs(m[0] + m[2] / 2 - middle) <= 2 for m in (marks[0], marks[2])):
            return "÷"
    return None


def _bar(mark: tuple[int, ...]) -> bool:
    """One solid horizontal bar: 1-4 px high, at least three times as wide."""
    _, _, w, h, area = mark
    return 1 <= h <= 4 and w >= 3 * h and area >= _FULL * w * h


def _dot(mark: tuple[int, ...]) -> bool:
    _, _, w, h, area = mark
    return w <= 5 and h <= 5 and abs(w - h) <= 1 and area >= 0.5 * w * h


def _one(mark: tuple[int, ...], ink: np.ndarray, height: int) -> str | None:
    x, y, w, h, _ = mark
    if _bar(mark) and abs(y + h / 2 - height / 2) <= height / 4:
        return "-"
    if _dot(mark) and w <= 4:
        return "."
    if w < 5 or not 0.75 <= w / h <= 1.33:
        return None
    box = ink[y : y + h, x : x + w].astype(bool)
    row, column = box[h // 2, :], box[:, w // 2]
    diagonal = np.array([box[i * h // w, i] for i in range(w)])
    other = np.array([box[i * h // w, w - 1 - i] for i in range(w)])
    corners = [box[0, 0], box[0, -1], box[-1, 0], box[-1, -1]]
    if row.mean() >= _FULL and column.mean() >= _FULL and not any(corners):
        return "+"
    if diagonal.mean() >= _FULL and other.mean() >= _FULL and row.mean() < 0.5:
        return "×"
    return None
