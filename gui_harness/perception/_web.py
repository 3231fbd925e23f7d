"""What web pages draw that reads as one control but is several: a table's or a list's
row ruled above and below, a tinted alert holding its close button, a run of icon links
(a table's view/edit/delete), a check box padded into a bar's cell. `web_parts()` takes
detect_crop()'s found components and gives them back with such boxes cut into theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import cv2
import numpy as np

from gui_harness.perception.component import Kind

if TYPE_CHECKING:
    _Found = tuple[Kind, tuple[int, int, int, int], float]

_ROW_ASPECT = 8  # a row is at least this many times as wide as it is high
_ROW_H = (14, 64)
_TINT = 24  # RGB spread of an alert's background; an entry field's is grey or white
_ICON_ASPECT = (0.75, 1.35)
_CONTROLS = ("button", "link", "field", "dropdown", "checkbox", "radio", "tab")


def web_parts(image: np.ndarray | None, grey: np.ndarray, found: list[_Found]) -> list[_Found]:
    """`found` with rows and alerts cut into what they hold, icon runs into icons and
    padded check boxes shrunk to their square. `image`: the screen's RGB (None: grey
    only, so no alert is told by its tint)."""
    rows: list[_Found] = []
    added: list[_Found] = []
    for item in found:
        kind, (x, y, w, h), _ = item
        if kind in ("field", "button", "dropdown") and _is_wide_row(w, h):
            inner = _inside(image, grey, (x, y, w, h))
            if inner is not None and (
                _holds_controls(inner)
                or (_tinted(image, (x, y, w, h)) and _holds_more_than_text(inner))
            ):
                added += inner
                continue
        rows.append(item)
    for item in added:  # a part already found on the page (a row's end button) once
        if all(_iou(item[1], o[1]) < 0.5 and not _within(item[1], o[1]) for o in rows):
            rows.append(item)
    out: list[_Found] = []
    for item in rows:
        kind, (x, y, w, h), _ = item
        if kind in ("link", "text"):
            icons = _icon_run(grey, (x, y, w, h))
            if icons is not None:
                out += [("icon" if kind == "text" else "link", box, 0.5) for box in icons]
                continue
        small = min(w, h) >= 14 and max(w, h) <= 30 and abs(w - h) <= 3
        if kind == "button" and small and not _in_control(item, rows):
            square = _padded_square(image, grey, (x, y, w, h))
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
        ink = cv2.absdiff(crop, np.full_like(crop, int(np.median(crop)))) >= 40
        for hx, _, hw, _ in held:
            ink[:, max(hx - x - 2, 0) : hx - x + hw + 2] = False
        columns = np.flatnonzero(ink.any(axis=0))
        if not len(columns):
            continue  # nothing beside what it holds
        breaks = np.flatnonzero(np.diff(columns) > 8)
        starts = np.concatenate([columns[:1], columns[breaks + 1]]).tolist()
        ends = (np.concatenate([columns[breaks], columns[-1:]]) + 1).tolist()
        for start, end in zip(starts, ends, strict=True):
            rows = np.flatnonzero(ink[:, start:end].any(axis=1))
            top, high = int(rows[0]), int(rows[-1] - rows[0]) + 1
            if end - start >= 3 or high >= 6:
                box = (x + start - 2, y + top - 2, end - start + 4, high + 4)
                out.append((kind, box, confidence))
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
    image: np.ndarray | None, grey: np.ndarray, box: tuple[int, int, int, int]
) -> list[_Found] | None:
    """What detection finds inside `box`'s outline (2 px in), in the screen's pixels."""
    from gui_harness.perception.detect import detect_crop

    x, y, w, h = box
    x0, y0, x1, y1 = x + 2, y + 2, x + w - 2, y + h - 2
    if x1 - x0 < 10 or y1 - y0 < 8:
        return None
    crop = grey[y0:y1, x0:x1]
    if _groups(crop, gap=max(h, 12)) < 2:
        return None  # one run of ink: an entry's text, a button's label
    colour = image[y0:y1, x0:x1] if image is not None else crop
    inner = detect_crop(
        np.ascontiguousarray(colour),
        np.ascontiguousarray(crop),
        max_components=50,
        closed=(False,) * 4,
        grids=[],
    )
    return [
        (c.kind, (c.box[0] + x0, c.box[1] + y0, c.box[2], c.box[3]), c.confidence) for c in inner
    ]


def _groups(crop: np.ndarray, gap: int) -> int:
    """How many runs of ink (40 grey levels off the median) `crop` holds left to right,
    runs more than `gap` px apart counted apart."""
    ink = cv2.absdiff(crop, np.full_like(crop, int(np.median(crop)))) >= 40
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
    right (a row's selection; an entry's icon ends it), or two controls or more (an entry
    holds text and at most one button of its own)."""
    for kind, (x, _, w, _), _ in inner:
        if kind in ("checkbox", "radio") and any(o[1][0] >= x + w for o in inner):
            return True
    return sum(kind in _CONTROLS for kind, _, _ in inner) >= 2


def _holds_more_than_text(inner: list[_Found]) -> bool:
    """Whether a tinted bar holds more than its text (an alert's close button)."""
    return any(kind != "text" for kind, _, _ in inner)


def _icon_run(
    grey: np.ndarray, box: tuple[int, int, int, int]
) -> list[tuple[int, int, int, int]] | None:
    """The icons of a line that is a run of two or more square glyphs of the line's full
    height a few pixels apart (a table row's view, edit and delete), else None. A word's
    letters are lower than the line or narrower than high; a word is rarely square."""
    x, y, w, h = box
    if not 12 <= h <= 28 or w < 2 * h:
        return None
    crop = grey[y : y + h, x : x + w]
    background = int(np.median(np.concatenate([crop[0], crop[-1]])))
    ink = cv2.absdiff(crop, np.full_like(crop, background)) >= 40
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 4:
        return None
    breaks = np.flatnonzero(np.diff(columns) > 2)
    starts = np.concatenate([columns[:1], columns[breaks + 1]]).tolist()
    ends = (np.concatenate([columns[breaks], columns[-1:]]) + 1).tolist()
    if len(starts) < 2:
        return None
    icons = []
    for start, end in zip(starts, ends, strict=True):
        rows = np.flatnonzero(ink[:, start:end].any(axis=1))
        high = int(rows[-1] - rows[0]) + 1
        if high < 0.75 * h or not _ICON_ASPECT[0] <= (end - start) / high <= _ICON_ASPECT[1]:
            return None
        icons.append((x + start, y + int(rows[0]), end - start, high))
    return icons


def _padded_square(
    image: np.ndarray | None, grey: np.ndarray, box: tuple[int, int, int, int]
) -> _Found | None:
    """A check box or radio detected alone inside a small square `box` a few pixels
    larger (a bar's cell padded around it), else None."""
    from gui_harness.perception.detect import detect_crop

    x, y, w, h = box
    height, width = grey.shape
    if x < 0 or y < 0 or x + w > width or y + h > height:
        return None
    crop = np.ascontiguousarray(grey[y : y + h, x : x + w])
    ink = cv2.absdiff(crop, np.full_like(crop, int(np.median(crop)))) >= 40
    if ink[:2].any() or ink[-2:].any() or ink[:, :2].any() or ink[:, -2:].any():
        return None  # ink at its edge: a button's own outline, not a cell's padding
    colour = np.ascontiguousarray(image[y : y + h, x : x + w]) if image is not None else crop
    inner = detect_crop(colour, crop, max_components=4, closed=(False,) * 4, grids=[])
    if len(inner) != 1 or inner[0].kind not in ("checkbox", "radio"):
        return None
    c = inner[0]
    if c.box[2] * c.box[3] > 0.7 * w * h:
        return None
    return (c.kind, (c.box[0] + x, c.box[1] + y, c.box[2], c.box[3]), c.confidence)


def _iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / max(a[2] * a[3] + b[2] * b[3] - inter, 1)
