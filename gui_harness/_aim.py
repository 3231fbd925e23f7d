"""Whether the element a click aims at is still where the observation saw it: `aim()`.

An app can still be laying out when it is observed (a window that grows once its
styles load, a toolbar that arrives late and pushes the sheet down): a click on the
observed spot then lands on a neighbour. Before a pointer action on an element,
dispatch_action compares the observed pixels around the aim point with the screen as it
is now. Unchanged: the click goes where planned. Moved: the same pixels are found nearby,
in one place only, and the click follows them. Changed beyond recognition: the action is
refused once, so the planner looks again. Also where on an element a click acts
(`click_point`): a wide or expanded control is clicked on its label, not its middle.
Knows nothing of the desktop or the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from PIL import Image

__all__ = ["Aim", "aim", "area", "click_point", "differs", "shows_change"]

_HALF_W, _HALF_H = 64, 32
"""The patch compared: up to this far either side of the aim point, within the element."""
_MIN_HALF = 12  # a patch at least this far either side, taking in the element's surroundings
_SEARCH = 160
"""How far (image pixels) a moved patch is looked for, either way."""
_DIFFERENT = 40  # grey levels two pixels differ by to count as different (not a hover tint)
_CHANGED = 0.03  # the share of different pixels that makes a patch changed (a caret is less)
_MATCH_MSE = 60.0  # mean squared grey difference of a patch found moved: drawn the same
_MIN_STD = 6.0  # a patch flatter than this (a blank cell, a plain panel) cannot be located
_SEEN_CHANGE = 12  # pixels: fewer changed on a whole screen is no visible effect
_PRESSED = frozenset({"button", "checkbox", "radio", "tab"})  # kinds a click acts on as a whole
_WIDE = (4.0, 160)  # a box this many times wider than high, and this many pixels: wide
_LINE = 14  # px; a control lower than this holds no line of text to aim at
_TALL = 48  # px; an expanded control this high holds what it revealed below its title
_INK = 48  # grey levels from a box's background that make a pixel ink (a glyph's core)


@dataclass(frozen=True)
class Aim:
    """What aim() found: `shift` (dx, dy) in image pixels to add to the click (0, 0 when
    the element is where it was), or `changed` when its pixels are no longer to be found."""

    shift: tuple[int, int] = (0, 0)
    changed: bool = False


def area(
    point: tuple[int, int], box: tuple[int, int, int, int], size: tuple[int, int]
) -> tuple[int, int, int, int]:
    """The part of a screen of `size` (image pixels) that aim() needs of it now: the
    patch around `point` in element `box`, _SEARCH pixels around, as (left, top, right,
    bottom); grab only that."""
    left, top, right, bottom = _patch(point, box, *size)
    width, height = size
    return (
        max(0, left - _SEARCH),
        max(0, top - _SEARCH),
        min(width, right + _SEARCH),
        min(height, bottom + _SEARCH),
    )


def aim(
    observed: Image.Image,
    now: Image.Image,
    point: tuple[int, int],
    box: tuple[int, int, int, int],
) -> Aim:
    """Compare `observed` (the observation's screenshot) with `now`, the screen's
    area(point, box, observed.size) as it is just before the action, around `point` in
    the element `box`; both in image pixels (`now` at the observation's scale)."""
    x0, y0, x1, y1 = area(point, box, observed.size)
    if now.size != (x1 - x0, y1 - y0):
        return Aim(changed=True)  # the screen itself changed size
    patch = _patch(point, box, *observed.size)
    left, top, right, bottom = patch
    if right - left < 4 or bottom - top < 4:
        return Aim()
    before = _grey(observed, patch)
    after = _grey(now, (left - x0, top - y0, right - x0, bottom - y0))
    if _share_different(before, after) <= _CHANGED:
        return Aim()
    found = _find(before, np.asarray(now.convert("L")))
    if found is None:
        return Aim(changed=True)
    return Aim(shift=(found[0] + x0 - left, found[1] + y0 - top))


def _patch(
    point: tuple[int, int], box: tuple[int, int, int, int], width: int, height: int
) -> tuple[int, int, int, int]:
    """(left, top, right, bottom) around `point`: within the element as far as it goes,
    and never less than _MIN_HALF either side (an element's edges place it)."""
    x, y = point
    bx, by, bw, bh = box
    half_w = max(_MIN_HALF, min(_HALF_W, x - bx, bx + bw - x))
    half_h = max(_MIN_HALF, min(_HALF_H, y - by, by + bh - y))
    return (
        max(0, x - half_w),
        max(0, y - half_h),
        min(width, x + half_w),
        min(height, y + half_h),
    )


def _grey(image: Image.Image, patch: tuple[int, int, int, int]) -> np.ndarray:
    return np.asarray(image.crop(patch).convert("L"), dtype=np.int16)


def differs(before: Image.Image, after: Image.Image) -> bool:
    """Whether two pictures of one size differ as aim() counts it: more than a caret's
    or a hover tint's worth of pixels changed."""
    if before.size != after.size:
        return True
    whole = (0, 0, *before.size)
    return _share_different(_grey(before, whole), _grey(after, whole)) > _CHANGED


def shows_change(before: Image.Image, after: Image.Image) -> bool:
    """Whether `after` shows any change from `before` (one size; a whole screen) beyond
    a blinking caret's or a hover tint's: what a click that acted leaves, however small
    (a tick in a check box, an expander's arrow turned)."""
    if before.size != after.size:
        return True
    whole = (0, 0, *before.size)
    different = np.abs(_grey(before, whole) - _grey(after, whole)) > _DIFFERENT
    count = int(np.count_nonzero(different))
    if count < _SEEN_CHANGE:
        return False
    columns = np.flatnonzero(different.any(axis=0))
    return int(columns[-1] - columns[0]) > 3  # a caret is a column or two


def _share_different(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.count_nonzero(np.abs(a - b) > _DIFFERENT)) / a.size


def _find(before: np.ndarray, area: np.ndarray) -> tuple[int, int] | None:
    """Where (left, top) in `area` the `before` pixels are now: the one good match, or
    None when there is none or more than one (a pattern that repeats, like a sheet's
    empty cells, places nothing)."""
    if float(before.std()) < _MIN_STD:
        return None
    template = before.astype(np.uint8)
    if area.shape[0] < template.shape[0] or area.shape[1] < template.shape[1]:
        return None
    scores = cv2.matchTemplate(area, template, cv2.TM_SQDIFF) / template.size
    best, _, (bx, by), _ = cv2.minMaxLoc(scores)
    if best > _MATCH_MSE:
        return None
    # a second good match away from the first: the pixels repeat, so the place is unknown
    near = 4
    scores[max(0, by - near) : by + near + 1, max(0, bx - near) : bx + near + 1] = np.inf
    if float(scores.min()) <= _MATCH_MSE:
        return None
    return (bx, by)


def click_point(image: Image.Image | np.ndarray | None, component: Any) -> tuple[int, int]:
    """Where a click on `component` (its `kind`, `box` and `states`) acts, in image
    pixels: its middle, except on a wide control whose middle is blank and an expanded
    one (an expander's title above what it revealed). Those act only on their own
    region (a GTK expander's arrow and label, a list row's label, not the gap beside a
    switch), so the click goes to the middle of the label: the leftmost run of ink in
    the control's first line of ink (`image`: the observation's screenshot; None, or a
    box with no ink, gives the middle)."""
    x, y, w, h = (int(v) for v in component.box)
    middle = (x + w // 2, y + h // 2)
    if image is None or component.kind not in _PRESSED:
        return middle
    expanded = "expanded" in tuple(getattr(component, "states", ())) and h > _TALL
    wide = w >= _WIDE[0] * h and w >= _WIDE[1] and h >= _LINE  # a slider's track has no label
    if not (expanded or wide):
        return middle
    grey = np.asarray(image.convert("L") if isinstance(image, Image.Image) else image)
    if grey.ndim == 3:
        grey = cv2.cvtColor(np.ascontiguousarray(grey[:, :, :3]), cv2.COLOR_RGB2GRAY)
    # 2 px in: the control's own outline is not ink
    x0, y0 = max(x + 2, 0), max(y + 2, 0)
    x1, y1 = min(x + w - 2, grey.shape[1]), min(y + h - 2, grey.shape[0])
    if x1 - x0 < 4 or y1 - y0 < 4:
        return middle
    crop = grey[y0:y1, x0:x1].astype(np.int16)
    ink = np.abs(crop - int(np.median(crop))) >= _INK
    bands = _runs(np.asarray(ink.any(axis=1)), gap=1)
    if not bands:
        return middle
    # the first line when expanded (the title), else the line across the middle
    mid_row = middle[1] - y0
    top, bottom = bands[0] if expanded else min(bands, key=lambda b: _distance(b, mid_row))
    if bottom - top < _LINE // 2:
        return middle  # no line of text: a track, a rule
    pieces = _runs(np.asarray(ink[top:bottom].any(axis=0)), gap=max(10, bottom - top))
    mid_column = middle[0] - x0
    if not expanded and any(_distance(piece, mid_column) <= 4 for piece in pieces):
        return middle  # a label across the middle: a centred caption
    left, right = pieces[0]
    return (x0 + (left + right) // 2, y0 + (top + bottom) // 2)


def _runs(flags: np.ndarray, *, gap: int) -> Sequence[tuple[int, int]]:
    """(start, stop) of the runs of True in `flags`, joined across up to `gap` Falses."""
    where = np.flatnonzero(flags)
    if not len(where):
        return []
    breaks = np.flatnonzero(np.diff(where) > gap + 1)
    starts = np.concatenate([[where[0]], where[breaks + 1]])
    stops = np.concatenate([where[breaks], [where[-1]]]) + 1
    return list(zip(starts.tolist(), stops.tolist(), strict=True))


def _distance(run: tuple[int, int], at: int) -> int:
    """How far `at` is from the run [start, stop): 0 inside it."""
    return max(run[0] - at, at - (run[1] - 1), 0)
