"""What web pages draw that reads as one control but is several: a table's or a list's
row ruled above and below, a tinted alert holding its close button, a run of icon links
(a table's view/edit/delete), a check box padded into a bar's cell. `web_parts()` takes
detect_crop()'s found components and gives them back with such boxes cut into theirs;
it detects inside a box with the `Detect` it is given (detect.py's, so no import back).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING

import cv2
import numpy as np

from gui_harness.perception.component import Component, Kind

if TYPE_CHECKING:
    _Found = tuple[Kind, tuple[int, int, int, int], float]

Detect = Callable[[np.ndarray, np.ndarray, int], list[Component]]
"""Detection on a crop that touches no screen edge: (colour, grey, max_components) ->
the crop's components, in the crop's pixels (detect.py's detect_crop, grids left out)."""

_ROW_ASPECT = 8  # a row is at least this many times as wide as it is high
_ROW_H = (14, 64)
_TINT = 24  # RGB spread of an alert's background; an entry field's is grey or white
_ICON_ASPECT = (0.75, 1.5)  # an eye is wider than high
_CAPTION_H = (14, 60)
_CONTROLS = ("button", "link", "field", "dropdown", "checkbox", "radio", "tab")


def web_parts(
    image: np.ndarray | None, grey: np.ndarray, found: list[_Found], detect: Detect
) -> list[_Found]:
    """`found` with rows and alerts cut into what they hold, icon runs into icons and
    padded check boxes shrunk to their square. `image`: the screen's RGB (None: grey
    only, so no alert is told by its tint); `detect`: what finds the controls inside a
    row or a padded square."""
    rows: list[_Found] = []
    added: list[_Found] = []
    captions: list[_Found] = []  # a bar's label at its left: a click on the bar misses it
    for item in found:
        kind, (x, y, w, h), _ = item
        if kind in ("field", "button", "dropdown") and _is_wide_row(w, h):
            inner = _inside(image, grey, (x, y, w, h), detect)
            if inner is not None and (
                _holds_controls(inner)
                or (_tinted(image, (x, y, w, h)) and _holds_more_than_text(inner))
            ):
                added += inner
                continue
        if kind == "button" and w >= 4 * h and _CAPTION_H[0] <= h <= _CAPTION_H[1]:
            caption = _left_label(grey, (x, y, w, h))
            if caption is not None:
                captions.append(("text", caption, 0.5))
        rows.append(item)
    for item in added:  # a part already found on the page (a row's end button) once
        if all(_iou(item[1], o[1]) < 0.5 and not _within(item[1], o[1]) for o in rows):
            rows.append(item)
    rows += captions
    out: list[_Found] = []
    for item in rows:
        kind, (x, y, w, h), _ = item
        if kind in ("link", "text"):
            icons = _icon_run(grey, (x, y, w, h))
            if icons is not None:
                out += [("icon" if kind == "text" else "link", box, 0.5) for box in icons]
                continue
            pieces = _between_separators(grey, (x, y, w, h))
            if pieces is not None:
                out += [(kind, box, item[2]) for box in pieces]
                continue
        small = min(w, h) >= 14 and max(w, h) <= 36 and abs(w - h) <= 3
        if kind == "button" and small and not _in_control(item, rows):
            square = _padded_square(image, grey, (x, y, w, h), detect)
            if square is not None:
                out.append(square)
                continue
        out.append(item)
    return _cut_around(grey, out)


def _cut_around(grey: np.ndarray, found: list[_Found]) -> list[_Found]:
    """A wide button (a bar's cell, one group of ink) that holds another control of
    nearly its height at one end (a row's link and its Delete button, a few pixels
    apart) cut to what lies beside it; a switch's knob or a button's icon stays."""
    out: list[_Found] = []
    for item in found:
        kind, (x, y, w, h), confidence = item
        held = [
            o[1]
            for o in found
            if o is not item and o[0] != "text" and _within(o[1], item[1])
            and o[1][3] >= 0.6 * h
            and min(abs(o[1][0] - x), abs(x + w - o[1][0] - o[1][2])) <= 4
        ]  # fmt: skip
        if kind != "button" or w < 2.5 * h or not held:
            out.append(item)
            continue
        crop = grey[y : y + h, x : x + w]
        ink = _ink(crop)
        free = np.ones(w, bool)  # columns not under what it holds
        for hx, _, hw, _ in held:
            free[max(hx - x - 2, 0) : max(hx - x + hw + 2, 0)] = False
        ink &= free[None, :]
        columns = np.flatnonzero(ink.any(axis=0))
        if not len(columns):
            continue  # nothing beside what it holds
        starts, ends = _runs(columns, 8)
        for start, end in zip(starts, ends, strict=True):
            if end - start < 3:
                continue
            # the button's height, its width out to the middle of the room on each side
            left, right = start, end
            while left > 0 and free[left - 1] and not ink[:, left - 1].any():
                left -= 1
            while right < w and free[right] and not ink[:, right].any():
                right += 1
            x0 = start - (start - left) // 2 if left > 0 else 0
            x1 = end + (right - end) // 2 if right < w else w
            out.append((kind, (x + x0, y, x1 - x0, h), confidence))
    return out


def _in_control(item: _Found, found: list[_Found]) -> bool:
    """Whether `item` lies inside another control of `found` (a field's own icon button)."""
    return any(o is not item and o[0] != "text" and _within(item[1], o[1]) for o in found)


def _within(a: tuple[int, int, int, int], b: tuple[int, int, int, int], slack: int = 2) -> bool:
    """Whether box `a` lies inside box `b` (give or take `slack` px)."""
    return (
        a[0] >= b[0] - slack
        and a[1] >= b[1] - slack
        and a[0] + a[2] <= b[0] + b[2] + slack
        and a[1] + a[3] <= b[1] + b[3] + slack
    )


def _is_wide_row(w: int, h: int) -> bool:
    return _ROW_H[0] <= h <= _ROW_H[1] and w >= _ROW_ASPECT * h


def _inside(
    image: np.ndarray | None, grey: np.ndarray, box: tuple[int, int, int, int], detect: Detect
) -> list[_Found] | None:
    """What detection finds inside `box`'s outline (2 px in), in the screen's pixels."""
    x, y, w, h = box
    x0, y0, x1, y1 = x + 2, y + 2, x + w - 2, y + h - 2
    if x1 - x0 < 10 or y1 - y0 < 8:
        return None
    crop = grey[y0:y1, x0:x1]
    # items of a dark bar (a navbar: light words on a dark fill) are set apart by their
    # padding, less than its height; a dark entry's words by a space
    gap = max(h // 5, 8) if _dark_bar(crop) else max(h, 12)
    if _groups(crop, gap=gap) < (3 if gap < h else 2):
        return None  # one run of ink: an entry's text, a button's label
    colour = image[y0:y1, x0:x1] if image is not None else crop
    inner = detect(np.ascontiguousarray(colour), np.ascontiguousarray(crop), 50)
    return [
        (c.kind, (c.box[0] + x0, c.box[1] + y0, c.box[2], c.box[3]), c.confidence) for c in inner
    ]


def _dark_bar(crop: np.ndarray) -> bool:
    """Whether `crop` is a dark fill (grey 80 or darker) with light ink on it."""
    fill = int(np.median(crop))
    return fill <= 80 and int(np.percentile(crop, 99)) >= fill + 100


def _groups(crop: np.ndarray, gap: int) -> int:
    """How many runs of ink (40 grey levels off the median) `crop` holds left to right,
    runs more than `gap` px apart counted apart."""
    ink = _ink(crop)
    columns = np.flatnonzero(ink.any(axis=0))
    return int(len(columns) > 0) + int(np.count_nonzero(np.diff(columns) > gap))


def _tinted(image: np.ndarray | None, box: tuple[int, int, int, int]) -> bool:
    """Whether `box`'s inside is a tinted colour (an alert's), not an entry's grey."""
    if image is None or image.ndim != 3:
        return False
    x, y, w, h = box
    inside = image[y + 3 : y + h - 3, x + 3 : x + w - 3, :3].reshape(-1, 3)
    if not len(inside):
        return False
    median = np.median(inside, axis=0)
    return float(median.max() - median.min()) >= _TINT


def _holds_controls(inner: list[_Found]) -> bool:
    """Whether a wide box's inside reads as a row: a check box or radio with more to its
    right (a row's selection; an entry's icon ends it), two controls or more, or three
    things or more (an entry holds text and at most one button of its own)."""
    for kind, (x, _, w, _), _ in inner:
        if kind in ("checkbox", "radio") and any(o[1][0] >= x + w for o in inner):
            return True
    return sum(kind in _CONTROLS for kind, _, _ in inner) >= 2 or len(inner) >= 3


def _holds_more_than_text(inner: list[_Found]) -> bool:
    """Whether a tinted bar holds more than its text (an alert's close button)."""
    return any(kind != "text" for kind, _, _ in inner)


def _left_label(
    grey: np.ndarray, box: tuple[int, int, int, int]
) -> tuple[int, int, int, int] | None:
    """The label of a wide bar drawn at its left, away from its middle (a caption bar or
    a list item whose link is its text), else None: a button's label is centred."""
    x, y, w, h = box
    crop = grey[y + 3 : y + h - 3, x + 3 : x + w - 3]
    if crop.size == 0:
        return None
    ink = _ink(crop)
    ink[ink.mean(axis=1) > 0.5] = False  # a line along the bar
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 3 or columns[-1] >= 0.6 * crop.shape[1] or columns[0] > 0.2 * crop.shape[1]:
        return None
    rows = np.flatnonzero(ink.any(axis=1))
    return (
        x + 3 + int(columns[0]),
        y + 3 + int(rows[0]),
        int(columns[-1] - columns[0]) + 1,
        int(rows[-1] - rows[0]) + 1,
    )


def _between_separators(
    grey: np.ndarray, box: tuple[int, int, int, int]
) -> list[tuple[int, int, int, int]] | None:
    """A line of links set apart by separators ("Home › Books", "Site / Log out") cut
    into the pieces between them, else None. A separator stands alone between two
    spaces: a slash or a small chevron, narrower than half the line's height."""
    x, y, w, h = box
    if not 8 <= h <= 30 or w < 4 * h:
        return None
    crop = grey[y : y + h, x : x + w]
    ink = _ink(crop, _edge_level(crop))
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 6:
        return None
    space = max(3, h // 5)
    starts, ends = _runs(columns, space)
    separators = [
        i for i in range(1, len(starts) - 1) if _separator(ink[:, starts[i] : ends[i]], h)
    ]
    if not separators:
        return None
    pieces = []
    bounds = [-1, *separators, len(starts)]
    for a, b in itertools.pairwise(bounds):
        if b - a < 2:
            return None  # two separators side by side: not a list of links
        x0, x1 = starts[a + 1], ends[b - 1]
        rows = np.flatnonzero(ink[:, x0:x1].any(axis=1))
        pieces.append((x + x0, y + int(rows[0]), x1 - x0, int(rows[-1] - rows[0]) + 1))
    return pieces


def _separator(glyph: np.ndarray, h: int) -> bool:
    """Whether `glyph` (ink, the line's full height) is a slash or a chevron."""
    rows = np.flatnonzero(glyph.any(axis=1))
    high, wide = int(rows[-1] - rows[0]) + 1, glyph.shape[1]
    if wide > max(0.5 * h, 3) or high < 3 or len(rows) < high:
        return False  # one stroke: an "i" or a colon has a gap
    if wide <= 2:
        return False  # a bar is an "l" or an "I" as often
    top, bottom = glyph[rows[0] : rows[0] + 2], glyph[rows[-1] - 1 : rows[-1] + 1]

    def left(part: np.ndarray) -> float:
        return float(np.flatnonzero(part.any(axis=0)).mean())

    if high >= 0.6 * h and left(top) - left(bottom) >= 0.4 * wide:
        return True  # a slash leans right
    middle = glyph[rows[0] + high // 2 - 1 : rows[0] + high // 2 + 1]
    # a chevron: its point at the middle, right of both its ends, away from the baseline
    return (
        high <= 0.7 * h
        and rows[-1] <= 0.85 * h
        and left(middle) - max(left(top), left(bottom)) >= 0.3 * wide
    )


def _icon_run(
    grey: np.ndarray, box: tuple[int, int, int, int]
) -> list[tuple[int, int, int, int]] | None:
    """The icons of a line that is a run of two or more squarish glyphs of nearly the
    line's full height (one of them its full height; an eye is wider and lower) a few
    pixels apart (a table row's view, edit and delete), else None. A word's letters are
    lower than the line or narrower than high; a word is rarely square."""
    x, y, w, h = box
    if not 12 <= h <= 28 or w < 2 * h:
        return None
    crop = grey[y : y + h, x : x + w]
    ink = _ink(crop, _edge_level(crop))
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 4:
        return None
    starts, ends = _runs(columns, 2)
    if len(starts) < 2:
        return None
    icons = []
    for start, end in zip(starts, ends, strict=True):
        rows = np.flatnonzero(ink[:, start:end].any(axis=1))
        high = int(rows[-1] - rows[0]) + 1
        if high < 0.7 * h or not _ICON_ASPECT[0] <= (end - start) / high <= _ICON_ASPECT[1]:
            return None
        icons.append((x + start, y + int(rows[0]), end - start, high))
    if max(box[3] for box in icons) < 0.9 * h:
        return None  # none of the line's full height: letters of one case
    return icons


def _padded_square(
    image: np.ndarray | None, grey: np.ndarray, box: tuple[int, int, int, int], detect: Detect
) -> _Found | None:
    """A check box or radio detected alone inside a small square `box` a few pixels
    larger (a bar's cell padded around it, a table's header cell), else None."""
    x, y, w, h = box
    height, width = grey.shape
    if x < 0 or y < 0 or x + w > width or y + h > height:
        return None
    crop = np.ascontiguousarray(grey[y : y + h, x : x + w])
    ink = _ink(crop)
    inside = ink[3:-3, 3:-3]  # past an outline of its own (a table cell's)
    rows, columns = np.flatnonzero(inside.any(axis=1)), np.flatnonzero(inside.any(axis=0))
    if not len(rows) or not len(columns):
        return None
    high, wide = int(rows[-1] - rows[0]) + 1, int(columns[-1] - columns[0]) + 1
    if abs(high - wide) > 2 or not 9 <= high <= 0.8 * min(w, h) - 2:
        return None  # no square well inside it: a label, an icon filling it
    colour = np.ascontiguousarray(image[y : y + h, x : x + w]) if image is not None else crop
    inner = detect(colour, crop, 4)
    if len(inner) != 1 or inner[0].kind not in ("checkbox", "radio"):
        return None
    c = inner[0]
    if c.box[2] * c.box[3] > 0.7 * w * h:
        return None
    return (c.kind, (c.box[0] + x, c.box[1] + y, c.box[2], c.box[3]), c.confidence)


def _ink(crop: np.ndarray, background: int | None = None) -> np.ndarray:
    """Where `crop` is 40 grey levels or more off `background` (default: its median)."""
    level = int(np.median(crop)) if background is None else background
    return cv2.absdiff(crop, np.full_like(crop, level)) >= 40


def _edge_level(crop: np.ndarray) -> int:
    """The background of a line of text: the median of its top and bottom rows."""
    return int(np.median(np.concatenate([crop[0], crop[-1]])))


def _runs(columns: np.ndarray, gap: int) -> tuple[list[int], list[int]]:
    """The starts and (exclusive) ends of the runs in sorted `columns`, a run broken
    where two columns are more than `gap` apart."""
    breaks = np.flatnonzero(np.diff(columns) > gap)
    starts = np.concatenate([columns[:1], columns[breaks + 1]]).tolist()
    ends = (np.concatenate([columns[breaks], columns[-1:]]) + 1).tolist()
    return starts, ends


def _iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / max(a[2] * a[3] + b[2] * b[3] - inter, 1)
