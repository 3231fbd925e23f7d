"""The lines of text a component's crop holds, for ocr_worker.py: `text_lines()`.

The recogniser reads one line. A crop may hold none (an empty field, a slider's track
and knob, a switch), one, or several (a tile's name set on two lines, a text area). Rows
of ink set apart by blank rows are lines; straight lines along or across the crop
(borders, tracks, underlines) are no text and are left out when finding them; a mark
taller than any line (a vertical slider) is none either. Knows no OCR engine.
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["Lines", "lettered", "text_lines"]

_INK = 24  # grey levels off the crop's background that make a pixel ink (ocr_worker's)
_LINE_H = (4, 64)  # px; a band of ink outside this is no line of text
_SPECK = 0.4  # a band lower than this share of the tallest is part of a line (a dot, an accent)
_ICON = 1.8  # of several bands, one this many times the lowest and about square is an icon
_MAX_LINES = 3  # more lines than this are content (a text area), named by their first
_THIN = 4  # px; a rule is no deeper than this
_MARGIN = 4  # px of background kept either side of a line's ink, and _EDGE above and below
_EDGE = 2
_WORD = 1.5  # a line of letters is this many times as wide as high, or more
_LETTERS = 3  # separate marks in a word of them
_CORE = 96  # grey levels off the background of a glyph's core (not its smoothed edge)


class Lines(list[np.ndarray]):
    """The line crops of one component's crop, top to bottom; `content` when the crop
    held more lines than a label has (only the first is kept)."""

    content: bool = False


def text_lines(crop: np.ndarray) -> Lines:
    """The lines of text in a grey `crop`, each a crop of it cut to the line's columns
    and rows; a crop holding one band of ink is its own line (cut to the columns of its
    text where rules reach beyond it: a slider's track); none when it holds no ink but
    rules or marks taller than a line."""
    ink, clean = _ink(crop)
    height = ink.shape[0]
    bands = _bands(clean, ink)
    found = len(bands)
    if found > 1:  # an icon above a tile's name is no line of it
        lowest = min(b - t for t, b in bands)
        bands = [(t, b) for t, b in bands if not (b - t >= _ICON * lowest and _square(clean[t:b]))]
    lines = Lines()
    if found == 1:  # a lone line: the crop as it is, but for rules beside its text
        left, right = _columns(clean)
        if (left, right) == _columns(ink):
            lines.append(crop)
        else:
            lines.append(crop[:, max(left - _MARGIN, 0) : right + _MARGIN])
        return lines
    for top, bottom in bands[:_MAX_LINES] if len(bands) <= _MAX_LINES else bands[:1]:
        left, right = _columns(clean[top:bottom])
        rows = slice(max(top - _EDGE, 0), min(bottom + _EDGE, height))
        lines.append(crop[rows, max(left - _MARGIN, 0) : right + _MARGIN])
    lines.content = len(bands) > _MAX_LINES
    return lines


def lettered(crop: np.ndarray) -> bool:
    """Whether a grey `crop` holds a word rather than an icon: one line of ink (rules
    left out) over _WORD times as wide as high, of _LETTERS separate marks or more (an
    icon is one mark or a few about as wide as high: a magnifier, a grid's squares)."""
    ink, clean = _ink(crop)
    bands = _bands(clean, ink)
    if len(bands) != 1:
        return False
    top, bottom = bands[0]
    left, right = _columns(clean[top:bottom])
    if right - left < _WORD * (bottom - top):
        return False
    # the glyphs' cores, four-connected: a small font's letters touch at their edges
    core = clean[top:bottom, left:right] & (_contrast(crop[top:bottom, left:right]) > _CORE)
    marks, _ = cv2.connectedComponents(core.astype(np.uint8), connectivity=4)
    return marks - 1 >= _LETTERS


def _contrast(crop: np.ndarray) -> np.ndarray:
    """How far each pixel of `crop` is off its background (its median)."""
    return np.abs(crop.astype(np.int16) - int(np.median(crop)))


def _ink(crop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ink of `crop` (off its background), and that ink without rules."""
    ink = _contrast(crop) > _INK
    clean = ink.copy()
    height, width = ink.shape
    # along it, as long as a fifth of it and twice its height: borders, a track (either
    # side of its knob), an underline; a letter's stroke is shorter than its line is high
    clean[_runs(ink, max(width // 5, 2 * height, 2))] = False
    # across it, taller than two lines of the largest text: a vertical track
    clean[_runs(ink.T, max(height // 5, 2 * _LINE_H[1])).T] = False
    return ink, clean


def _runs(ink: np.ndarray, length: int) -> np.ndarray:
    """The pixels of `ink` in thin straight horizontal runs: `length` or more long, at
    most _THIN rows deep (a filled area, a selection's highlight, is no rule)."""
    rows = np.ascontiguousarray(ink, dtype=np.uint8)
    # an opening keeps only the runs of `length` or more, a second the deep ones of those
    runs = cv2.morphologyEx(rows, cv2.MORPH_OPEN, np.ones((1, length), np.uint8))
    deep = cv2.morphologyEx(runs, cv2.MORPH_OPEN, np.ones((_THIN + 1, 1), np.uint8))
    return np.asarray((runs > 0) & (deep == 0))


def _bands(clean: np.ndarray, ink: np.ndarray) -> list[tuple[int, int]]:
    """The bands of rows holding ink (`clean`: rules left out), as (top, bottom) with
    bottom exclusive: rows apart by a blank row or more (blank in `ink`, rules and all:
    a strikethrough parts no line); a band lower than _SPECK of the tallest joins the nearer one
    (an "i"'s dot, an accent, a link's underline under its descenders); bands outside
    _LINE_H are dropped, as is a band of under three inked columns."""
    rows = np.flatnonzero(clean.any(axis=1))
    if not len(rows):
        return []
    inked: np.ndarray = np.asarray(ink.any(axis=1))
    breaks = [
        int(i)
        for i in np.flatnonzero(np.diff(rows) > 1)
        if not inked[rows[i] + 1 : rows[i + 1]].all()
    ]
    starts = [int(rows[0]), *(int(rows[i + 1]) for i in breaks)]
    ends = [*(int(rows[i]) + 1 for i in breaks), int(rows[-1]) + 1]
    bands = list(zip(starts, ends, strict=True))
    tallest = max(b - t for t, b in bands)
    merged = True
    while merged and len(bands) > 1:
        merged = False
        for i, (top, bottom) in enumerate(bands):
            if bottom - top >= _SPECK * tallest:
                continue
            above = top - bands[i - 1][1] if i > 0 else None
            below = bands[i + 1][0] - bottom if i + 1 < len(bands) else None
            j = i - 1 if below is None or (above is not None and above <= below) else i + 1
            bands[min(i, j)] = (bands[min(i, j)][0], bands[max(i, j)][1])
            del bands[max(i, j)]
            merged = True
            break
    return [
        (t, b)
        for t, b in bands
        if _LINE_H[0] <= b - t <= _LINE_H[1] and np.count_nonzero(clean[t:b].any(axis=0)) >= 3
    ]


def _columns(ink: np.ndarray) -> tuple[int, int]:
    """The first inked column and the one after the last (the whole width when none)."""
    columns = np.flatnonzero(ink.any(axis=0))
    if not len(columns):
        return 0, ink.shape[1]
    return int(columns[0]), int(columns[-1]) + 1


def _square(ink: np.ndarray) -> bool:
    """Whether a band's ink is one mark about as wide as high (an icon), not a word."""
    left, right = _columns(ink)
    height: int = ink.shape[0]
    return right - left <= 1.5 * height
