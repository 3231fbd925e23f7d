"""Detection again only where the screen changed: `Redetector`.

Owns the previous frame with its pixel components, the changed regions between two frames
(each cluster of differing pixels, grown by a margin, to every old component it touches
but a grid, whose lattice is checked instead, and to the grid's whole cells) and
the rules for when a whole detection is needed instead. detect.py does the detecting;
perceive.py asks for each frame's pixel components. Start at Redetector.detect().
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import cv2
import numpy as np

from gui_harness.perception._pixels import rgb_array
from gui_harness.perception.cells import Grid
from gui_harness.perception.pixels._grid import find_grids
from gui_harness.perception.pixels.detect import (
    Component,
    detect_components,
    detect_crop,
    edge_background,
    reading_order,
)

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
    changed, a grid near the change is not as it was, or a component found there may
    continue past the crop or join an old one. A grid does not count as changed when
    something inside it did (a cell's text, the cell cursor): its lattice is checked
    instead. Safe to share between threads.
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
            try:
                found = _again(last, image, grey, max_components)
            except _Whole:
                found = None
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
    """The frame's components from the previous ones and a detection of each changed
    region; None when a whole detection is needed."""
    if last.grey.shape != grey.shape:
        return None
    changes = _changes(last.grey, grey)
    if not changes:
        return list(last.components)
    height, width = grey.shape
    size = (width, height)
    # a grid does not grow a region: a cell's change leaves its lattice as it was
    grown = [c.box for c in last.components if c.kind != "grid"]
    regions = _joined([_region(changed, grown, size) for changed in changes], grown, size)
    old_grids = [c for c in last.components if c.kind == "grid"]
    known = None
    near = [_grown(region, _CONTEXT, size) for region in regions]
    if any(_overlaps(c.box, crop) for c in old_grids for crop in near):
        # a crop holds part of a grid: the grids must be the previous frame's, and they
        # filter what the crops find, as in a whole detection
        known = sorted(find_grids(grey), key=lambda found: found[0])
        if known != sorted(((c.box, c.grid) for c in old_grids), key=lambda old: old[0]):
            return None
        # whole cells: a cell's outline wider than the context closes inside the crop
        while True:
            snapped = _joined(
                [_region_from(_cells(region, known), grown) for region in regions], grown, size
            )
            if snapped == regions:
                break
            regions = snapped
    if sum(_area(region) for region in regions) > _FULL_SHARE * width * height:
        return None
    kept = [
        c
        for c in last.components
        if not any(_overlaps(c.box, region) for region in regions)
        or (known is not None and c.kind == "grid")
    ]
    joins = [_corners(c.box) for c in kept if known is None or c.kind != "grid"]
    fresh: list[Component] = []
    for region in regions:
        found = _detect_in(region, image, grey, max_components, known)
        for component in found:
            if not _overlaps(component.box, region):
                continue  # outside the change: the previous frame's components stand there
            if any(_overlaps(component.box, j) for j in joins) or any(
                _overlaps(component.box, other) for other in regions if other != region
            ):
                return None  # it may join an old one, or another region's
            fresh.append(component)
    if len(kept) + len(fresh) >= max_components:
        return None  # the cut to max_components ranks the whole frame's components
    return reading_order([*kept, *fresh])


def _detect_in(
    region: _Box,
    image: object,
    grey: np.ndarray,
    max_components: int,
    known: list[tuple[tuple[int, int, int, int], Grid]] | None,
) -> list[Component]:
    """Detection of `region` with its context, in screen pixels; a component that may
    continue past the crop raises _Whole."""
    height, width = grey.shape
    x0, y0, x1, y1 = crop = _grown(region, _CONTEXT, (width, height))
    closed = (y0 == 0, y1 == height, x0 == 0, x1 == width)  # the screen's own edges
    colour = rgb_array(image)
    found = detect_crop(
        np.ascontiguousarray(colour[y0:y1, x0:x1]),
        np.ascontiguousarray(grey[y0:y1, x0:x1]),
        max_components=max_components,
        closed=closed,
        background=edge_background(grey) if any(closed) else None,
        grids=None if known is None else [_shifted(box, grid, x0, y0) for box, grid in known],
    )
    moved = []
    for component in found:
        x, y, w, h = component.box
        box = (x + x0, y + y0, w, h)
        if _overlaps(box, region) and not _inside(box, crop, closed):
            raise _Whole  # it may continue past the crop
        moved.append(Component(0, component.kind, box, None, component.confidence))
    return moved


class _Whole(Exception):
    """A crop's detection cannot stand for a whole one."""


def _changes(before: np.ndarray, after: np.ndarray) -> list[_Box]:
    """The bounding boxes of the clusters of differing pixels (pixels within 2 × _NEAR
    of each other cluster); [] when none differs."""
    changed = _changed(before, after)
    if changed is None:
        return []
    x0, y0, x1, y1 = changed
    # padded by _NEAR, so the dilation is not clipped at the mask's sides and undoes exactly
    mask = np.zeros((y1 - y0 + 2 * _NEAR, x1 - x0 + 2 * _NEAR), np.uint8)
    mask[_NEAR:-_NEAR, _NEAR:-_NEAR] = before[y0:y1, x0:x1] != after[y0:y1, x0:x1]
    dilated = cv2.dilate(mask, np.ones((2 * _NEAR + 1, 2 * _NEAR + 1), np.uint8))
    count, _, stats, _ = cv2.connectedComponentsWithStats(dilated, connectivity=8)
    boxes = []
    for x, y, w, h, _ in stats[1:count]:
        # in the mask, the dilation grew each cluster by _NEAR and the padding moved it
        # by _NEAR: its pixels start at x (y) in the frame's crop
        boxes.append(
            (x0 + int(x), y0 + int(y), x0 + int(x + w) - 2 * _NEAR, y0 + int(y + h) - 2 * _NEAR)
        )
    return boxes


def _joined(
    regions: list[_Box], boxes: list[tuple[int, int, int, int]], size: tuple[int, int]
) -> list[_Box]:
    """`regions` with those that overlap (or whose crops' contexts would see each other's
    changes within _NEAR) joined into one, grown again to the old boxes they touch."""
    regions = sorted(set(regions))
    joined = True
    while joined:
        joined = False
        for i, a in enumerate(regions):
            for b in regions[i + 1 :]:
                if _overlaps_box(_grown(a, _NEAR, size), b):
                    union = (min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3]))
                    rest = [r for r in regions if r not in (a, b)]
                    regions = sorted(set([*rest, _region_from(union, boxes)]))
                    joined = True
                    break
            if joined:
                break
    return regions


def _cells(region: _Box, grids: list[tuple[tuple[int, int, int, int], Grid]]) -> _Box:
    """`region` grown, inside each grid it overlaps, out to the ruling lines of the
    cells it touches (both lines included)."""
    x0, y0, x1, y1 = region
    for box, grid in grids:
        if not _overlaps(box, region):
            continue
        x0, x1 = _lines_around(grid.columns, x0, x1)
        y0, y1 = _lines_around(grid.rows, y0, y1)
    return (x0, y0, x1, y1)


def _lines_around(lines: tuple[int, ...], start: int, end: int) -> tuple[int, int]:
    """[start, end) grown to the nearest of `lines` at or outside each end, where any."""
    before = [line for line in lines if line <= start]
    after = [line + 1 for line in lines if line + 1 >= end]
    return (before[-1] if before else start, after[0] if after else end)


def _shifted(
    box: tuple[int, int, int, int], grid: Grid, dx: int, dy: int
) -> tuple[tuple[int, int, int, int], Grid]:
    """A grid found on the screen, in the pixels of a crop whose corner is (dx, dy)."""
    x, y, w, h = box
    return (
        (x - dx, y - dy, w, h),
        replace(
            grid,
            columns=tuple(c - dx for c in grid.columns),
            rows=tuple(r - dy for r in grid.rows),
        ),
    )


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
    return _region_from(_grown(changed, _NEAR, size), boxes)


def _region_from(region: _Box, boxes: list[tuple[int, int, int, int]]) -> _Box:
    """`region` grown by every box it overlaps, until no more joins."""
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


def _inside(
    box: tuple[int, int, int, int], crop: _Box, closed: tuple[bool, bool, bool, bool]
) -> bool:
    """Whether `box` keeps _CUT pixels from every side of `crop` that is not the screen's
    edge (`closed`: top, bottom, left, right)."""
    x, y, w, h = box
    top, bottom, left, right = closed
    return (
        (left or x >= crop[0] + _CUT)
        and (top or y >= crop[1] + _CUT)
        and (right or x + w <= crop[2] - _CUT)
        and (bottom or y + h <= crop[3] - _CUT)
    )
