"""Whether the element a click aims at is still where the observation saw it: `aim()`.

An app can still be laying out when it is observed (a window that grows once its
styles load, a toolbar that arrives late and pushes the sheet down): a click on the
observed spot then lands on a neighbour. Before a pointer action on an element,
dispatch_action compares the observed pixels around the aim point with the screen as it
is now. Unchanged: the click goes where planned. Moved: the same pixels are found nearby,
in one place only, and the click follows them. Changed beyond recognition: the action is
refused once, so the planner looks again. Knows nothing of the desktop or the agent.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from PIL import Image

__all__ = ["Aim", "aim"]

_HALF_W, _HALF_H = 64, 32
"""The patch compared: up to this far either side of the aim point, within the element."""
_MIN_HALF = 12  # a patch at least this far either side, taking in the element's surroundings
_SEARCH = 160
"""How far (image pixels) a moved patch is looked for, either way."""
_DIFFERENT = 40  # grey levels two pixels differ by to count as different (not a hover tint)
_CHANGED = 0.03  # the share of different pixels that makes a patch changed (a caret is less)
_MATCH_MSE = 60.0  # mean squared grey difference of a patch found moved: drawn the same
_MIN_STD = 6.0  # a patch flatter than this (a blank cell, a plain panel) cannot be located


@dataclass(frozen=True)
class Aim:
    """What aim() found: `shift` (dx, dy) in image pixels to add to the click (0, 0 when
    the element is where it was), or `changed` when its pixels are no longer to be found."""

    shift: tuple[int, int] = (0, 0)
    changed: bool = False


def aim(
    observed: Image.Image,
    now: Image.Image,
    point: tuple[int, int],
    box: tuple[int, int, int, int],
) -> Aim:
    """Compare `observed` (the observation's screenshot) with `now` (a screenshot taken
    just before the action, the same size) around `point` in the element `box`, both in
    image pixels."""
    if observed.size != now.size:
        return Aim(changed=True)  # the screen itself changed size
    width, height = observed.size
    patch = _patch(point, box, width, height)
    left, top, right, bottom = patch
    if right - left < 4 or bottom - top < 4:
        return Aim()
    before = _grey(observed, patch)
    after = _grey(now, patch)
    if _share_different(before, after) <= _CHANGED:
        return Aim()
    shift = _find(before, now, patch)
    return Aim(changed=True) if shift is None else Aim(shift=shift)


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


def _share_different(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.count_nonzero(np.abs(a - b) > _DIFFERENT)) / a.size


def _find(
    before: np.ndarray, screen: Image.Image, patch: tuple[int, int, int, int]
) -> tuple[int, int] | None:
    """Where the `before` pixels are now, as a shift from `patch`: the one good match
    within _SEARCH pixels, or None when there is none or more than one (a pattern that
    repeats, like a sheet's empty cells, places nothing)."""
    if float(before.std()) < _MIN_STD:
        return None
    left, top, right, bottom = patch
    width, height = screen.size
    x0, y0 = max(0, left - _SEARCH), max(0, top - _SEARCH)
    x1, y1 = min(width, right + _SEARCH), min(height, bottom + _SEARCH)
    area = np.asarray(screen.crop((x0, y0, x1, y1)).convert("L"))
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
    return (x0 + bx - left, y0 + by - top)
