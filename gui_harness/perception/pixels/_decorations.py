"""Window-manager decorations: the title bar and borders a window manager draws around a
window, which pixel detection would take for controls (a title read as a button, the
frame's buttons as check boxes). Owns `decorate()`: pixel components in a window's
decoration band (its frame outside its own box) give way to the band's real parts, the
window's title and its buttons, found by the band's pixels. Listing windows is the desktop's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from gui_harness.perception.component import Component

__all__ = ["decorate", "window_box"]

Box = tuple[int, int, int, int]
Run = tuple[int, int, int, int]  # a run of inked columns: first, past the last, its rows

_INK = 24  # grey levels a title bar pixel differs from its row's background to be drawn
_IN_BAND = 0.25  # share of a pixel component inside a band that makes it the band's
_SLIVER = 2  # px: a run of ink no wider at the bar's very ends is its bevel
_MIN_BAR = 8  # px: a band at least this high above the window is a title bar
_SQUARE = (0.35, 1.3)  # a button's sides, relative to the title bar's height
_RIGHT = ("Close window", "Maximize window", "Minimize window")  # right, outermost first
_LEFT = ("Close window", "Minimize window", "Maximize window")  # left, where none is right


def decorate(
    grey: np.ndarray,
    pixels: Sequence[Component],
    windows: Sequence[Any],
    scale: tuple[float, float] = (1.0, 1.0),
) -> list[Component]:
    """`pixels` without the components drawn in a window's decorations, and with the
    title bars' parts that show: the title (a text line named by the window's title) and
    each button ("Close window", "Maximize window", "Minimize window", outermost first:
    told apart from an app's own "Close"). `windows` are the desktop's, bottom to top,
    in screen pixels (`scale` maps them onto `grey`); one without a `frame` larger than
    its own box has no decorations. No windows: `pixels` as they are."""
    framed = [(_client(w, scale), _frame(w, scale)) for w in windows]
    if all(frame is None or frame == client for client, frame in framed):
        return list(pixels)
    outer = [frame or client for client, frame in framed]
    kept = [c for c in pixels if not _in_band(c.box, framed, outer)]
    parts: list[Component] = []
    for level, (client, frame) in enumerate(framed):
        if frame is None or frame == client:
            continue
        title = windows[level].title
        for part in _title_bar(grey, client, frame, title if isinstance(title, str) else ""):
            x, y, w, h = part.box
            centre = (x + w // 2, y + h // 2)
            if not any(_holds(above, centre) for above in outer[level + 1 :]):
                parts.append(part)
    return kept + parts


def window_box(window: Any, scale: tuple[float, float]) -> Box:
    """`window`'s box on the picture (`scale` from screen pixels): its frame when it has
    one, else its own box."""
    return _frame(window, scale) or _client(window, scale)


def _client(window: Any, scale: tuple[float, float]) -> Box:
    return _scaled((window.x, window.y, window.width, window.height), scale)


def _frame(window: Any, scale: tuple[float, float]) -> Box | None:
    frame = getattr(window, "frame", None)
    return None if frame is None else _scaled(tuple(frame), scale)


def _scaled(box: Sequence[int], scale: tuple[float, float]) -> Box:
    sx, sy = scale
    x0, y0 = round(box[0] * sx), round(box[1] * sy)
    x1, y1 = round((box[0] + box[2]) * sx), round((box[1] + box[3]) * sy)
    return (x0, y0, x1 - x0, y1 - y0)


def _holds(box: Box, point: tuple[int, int]) -> bool:
    return box[0] <= point[0] < box[0] + box[2] and box[1] <= point[1] < box[1] + box[3]


def _overlap(a: Box, b: Box) -> int:
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(w, 0) * max(h, 0)


def _in_band(box: Box, framed: Sequence[tuple[Box, Box | None]], outer: Sequence[Box]) -> bool:
    """Whether `box` is drawn in the decorations of the topmost window whose frame holds
    its centre: its centre is there, or _IN_BAND of it is."""
    x, y, w, h = box
    centre = (x + w // 2, y + h // 2)
    for level in range(len(framed) - 1, -1, -1):
        if not _holds(outer[level], centre):
            continue
        client, frame = framed[level]
        if frame is None or frame == client:
            return False
        band = _overlap(box, frame) - _overlap(box, client)
        return not _holds(client, centre) or band >= _IN_BAND * max(w * h, 1)
    return False


def _title_bar(grey: np.ndarray, client: Box, frame: Box, title: str) -> list[Component]:
    """The parts of the title bar above `client` in `frame`: its buttons, square marks
    at either end, and its title, the ink between them."""
    fx, fy, fw, _ = frame
    cx, cy, cw, _ = client
    left, right = max(cx, fx, 0), min(cx + cw, fx + fw, grey.shape[1])
    top, bottom = max(fy, 0), min(cy, grey.shape[0])
    height = bottom - top
    if height < _MIN_BAR or right - left < 2 * height:
        return []
    strip = grey[top:bottom, left:right].astype(np.int16)
    background = np.median(strip, axis=1, keepdims=True)
    ink = np.abs(strip - background) > _INK
    runs = _runs(ink)
    right_buttons = _buttons(list(reversed(runs)), ink.shape[1], height, mirrored=True)
    left_buttons = [] if right_buttons else _buttons(runs, ink.shape[1], height, mirrored=False)
    names = _RIGHT if right_buttons else _LEFT
    buttons = right_buttons or left_buttons
    parts = [
        Component(
            index=0,
            kind="button",
            box=(left + a, top + t, b - a, u - t),
            label=name,
            confidence=1.0,
        )
        for (_, (a, b, t, u)), name in zip(buttons, names, strict=False)
    ]
    # the title: the ink between the buttons (a window icon at the far end left out)
    used = {run for run, _ in buttons}
    middle = [r for r in runs if r not in used]
    if right_buttons:
        icons = {run for run, _ in _buttons(middle, ink.shape[1], height, mirrored=False)}
        middle = [r for r in middle if r not in icons]
    if middle:  # (a title the window system does not tell is left for OCR to read)
        a, b = min(r[0] for r in middle), max(r[1] for r in middle)
        t, u = min(r[2] for r in middle), max(r[3] for r in middle)
        box = (left + a, top + t, b - a, u - t)
        named = title.strip() or None
        parts.append(Component(index=0, kind="text", box=box, label=named, confidence=1.0))
    return parts


def _runs(ink: np.ndarray) -> list[Run]:
    """(first column, past the last, first row, past the last) of each run of columns
    with ink, left to right; a column inked nearly top to bottom (a border) is none, nor
    a sliver at either end."""
    rows = ink.shape[0]
    inked = ink.any(axis=0) & (ink.sum(axis=0) < 0.9 * rows)
    runs = []
    column = 0
    width = ink.shape[1]
    while column < width:
        if not inked[column]:
            column += 1
            continue
        start = column
        while column < width and inked[column]:
            column += 1
        if column - start <= _SLIVER and (start < _SLIVER or column > width - _SLIVER):
            continue  # the bar's bevel at either end
        hit = np.flatnonzero(ink[:, start:column].any(axis=1))
        runs.append((start, column, int(hit[0]), int(hit[-1]) + 1))
    return runs


def _buttons(
    runs: Sequence[Run], width: int, height: int, *, mirrored: bool
) -> list[tuple[Run, Run]]:
    """(run, the button's box as a run) for the runs that are buttons, from the end of
    `runs` (the bar's right end when `mirrored`, else its left): a square mark of a
    button's size near the end, then each mark near the last that fits in a button of
    its size beside it (a bare glyph: a minimize button's bar)."""
    found: list[tuple[Run, Run]] = []
    edge = width if mirrored else 0
    low, high = _SQUARE[0] * height, _SQUARE[1] * height
    for run in runs:
        a, b, t, u = run
        w, h = b - a, u - t
        gap = (edge - b) if mirrored else (a - edge)
        if gap > (height if not found else height // 2):
            break
        if found:  # beside a button: a mark within one of its size is one too
            _, (pa, pb, pt, pu) = found[-1]
            side = pb - pa
            if w > side + 2 or t < pt - 2 or u > pu + 2 or gap + w > side + height // 2:
                break
            middle = (a + b) // 2
            box = (middle - side // 2, middle - side // 2 + side, pt, pu)
        else:
            square = abs(w - h) <= max(3, 0.25 * max(w, h))
            if not (low <= min(w, h) and max(w, h) <= high and square):
                break
            box = run
        found.append((run, box))
        edge = a if mirrored else b
    return found
