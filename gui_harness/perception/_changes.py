"""Detection again only where the screen changed: `Redetector`.

Owns the previous frame with its pixel components, the changed region between two frames
(a diff of the grey frames, grown by a margin and to every old component it touches) and
the rules for when a whole detection is needed instead. detect.py does the detecting;
perceive.py asks for each frame's pixel components. Start at Redetector.detect().
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np

from gui_harness.perception._pixels import rgb_array
from gui_harness.perception.detect import Component, detect_components, reading_order

__all__ = ["Redetector"]

_NEAR = 8  # px around a change whose components are detected again
_CONTEXT = 48  # px of pixels around them that detection sees: its longest kernel's length
_FULL_SHARE = 0.4  # a region over this share of the frame: detect it all again
_CUT = 2  # px; a component found this near a crop's side may be cut by it

_Box = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive ends)


@dataclass(frozen=True)
class _Frame:
    grey: np.ndarray
    components: tuple[Component, ...]
    max_components: int


class Redetector:
    """Pixel components of successive frames of one screen, detected again only in the
    region that changed since the previous frame (plus context), old ones kept elsewhere.

    The result equals a whole detection of the frame; a whole detection runs when there
    is no previous frame, the size or max_components differs, over 40 % of the frame
    changed, the change is near the screen's edge, or a component found there may continue
    past the crop or join an old one. Safe to share between threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: _Frame | None = None
        self.incremental = 0
        """How many detections reused the previous frame (for the benchmarks and tests)."""

    def detect(self, image: object, grey: np.ndarray, *, max_components: int) -> list[Component]:
        """The pixel components of `image` (PIL or numpy RGB; `grey` is its grey array),
        as detect_components(image, max_components=max_components) finds them."""
        with self._lock:
            last = self._last
        found = None
        if last is not None and last.max_components == max_components:
            found = _again(last, image, grey, max_components)
        if found is None:
            found = detect_components(image, max_components=max_components, grey=grey)
        else:
            self.incremental += 1
        with self._lock:
            self._last = _Frame(grey.copy(), tuple(found), max_components)
        return found

    def forget(self) -> None:
        """Drop the previous frame: the next detection is a whole one."""
        with self._lock:
            self._last = None


def _again(
    last: _Frame, image: object, grey: np.ndarray, max_components: int
) -> list[Component] | None:
    """The frame's components from the previous ones and a detection of the changed
    region; None when a whole detection is needed."""
    if last.grey.shape != grey.shape:
        return None
    changed = _changed(last.grey, grey)
    if changed is None:
        return list(last.components)
    height, width = grey.shape
    size = (width, height)
    region = _region(changed, [c.box for c in last.components], size)
    if _area(region) > _FULL_SHARE * width * height:
        return None
    x0, y0, x1, y1 = crop = _grown(region, _CONTEXT, size)
    if x0 == 0 or y0 == 0 or x1 == width or y1 == height:
        return None  # a whole detection closes outlines the screen's edge cuts; a crop cannot
    colour = rgb_array(image)
    found = detect_components(
        np.ascontiguousarray(colour[y0:y1, x0:x1]),
        grey=np.ascontiguousarray(grey[y0:y1, x0:x1]),
        max_components=max_components,
        image_edges=False,
    )
    kept = [c for c in last.components if not _overlaps(c.box, region)]
    fresh = []
    for component in found:
        x, y, w, h = component.box
        box = (x + x0, y + y0, w, h)
        if not _overlaps(box, region):
            continue  # outside the change: the previous frame's components stand there
        if not _inside(box, crop) or any(_overlaps(box, _corners(c.box)) for c in kept):
            return None  # it may continue past the crop, or join an old one
        fresh.append(Component(0, component.kind, box, None, component.confidence))
    if len(kept) + len(fresh) >= max_components:
        return None  # the cut to max_components ranks the whole frame's components
    return reading_order([*kept, *fresh])


def _changed(before: np.ndarray, after: np.ndarray) -> _Box | None:
    """The bounding box of the pixels that differ; None when none does."""
    diff = before != after
    rows = np.flatnonzero(diff.any(axis=1))
    if not len(rows):
        return None
    columns = np.flatnonzero(diff.any(axis=0))
    return (int(columns[0]), int(rows[0]), int(columns[-1]) + 1, int(rows[-1]) + 1)


def _region(changed: _Box, boxes: list[tuple[int, int, int, int]], size: tuple[int, int]) -> _Box:
    """`changed` grown by _NEAR, then by every old box it overlaps, until no more joins."""
    region = _grown(changed, _NEAR, size)
    pending = [_corners(box) for box in boxes]
    grew = True
    while grew:
        grew = False
        rest = []
        for box in pending:
            if _overlaps_box(box, region):
                region = (
                    min(region[0], box[0]),
                    min(region[1], box[1]),
                    max(region[2], box[2]),
                    max(region[3], box[3]),
                )
                grew = True
            else:
                rest.append(box)
        pending = rest
    return region


def _grown(box: _Box, margin: int, size: tuple[int, int]) -> _Box:
    x0, y0, x1, y1 = box
    width, height = size
    return (
        max(0, x0 - margin),
        max(0, y0 - margin),
        min(width, x1 + margin),
        min(height, y1 + margin),
    )


def _corners(box: tuple[int, int, int, int]) -> _Box:
    x, y, w, h = box
    return (x, y, x + w, y + h)


def _area(box: _Box) -> int:
    return (box[2] - box[0]) * (box[3] - box[1])


def _overlaps(box: tuple[int, int, int, int], region: _Box) -> bool:
    """Whether the (x, y, w, h) `box` and `region` share a pixel."""
    return _overlaps_box(_corners(box), region)


def _overlaps_box(a: _Box, b: _Box) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _inside(box: tuple[int, int, int, int], crop: _Box) -> bool:
    """Whether `box` keeps _CUT pixels from every side of `crop`."""
    x, y, w, h = box
    return (
        x >= crop[0] + _CUT
        and y >= crop[1] + _CUT
        and x + w <= crop[2] - _CUT
        and y + h <= crop[3] - _CUT
    )
