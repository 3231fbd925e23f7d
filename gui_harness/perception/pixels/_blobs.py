"""Blob geometry on binary edge maps, shared by the detectors: boxes of blobs and holes,
box sums through integral images, per-thread scratch arrays. Private to perception.
"""

from __future__ import annotations

import threading

import cv2
import numpy as np

__all__ = ["Scratch", "Sums", "boxes_of", "scratch"]

_HOLE_SIDE = 14  # px; the smallest hole taken for a control's inside (word gaps are less)
_PANEL_HOLE_SIDE = 30  # px; a hole this large both ways is an inside even when notched


def boxes_of(binary: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Bounding boxes (N×4 int arrays: x, y, w, h) of every connected blob, nested ones
    too; for each the (w, h) of its largest hole (0, 0 when it has none); and the boxes
    of the rectangular holes of control size: the inside of an outline that touches its
    neighbours."""
    contours, hierarchy = cv2.findContours(binary, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if hierarchy is None:
        empty = np.zeros((0, 4), np.int64)
        return empty, np.zeros((0, 2), np.int64), empty
    parent = hierarchy[0][:, 3]
    # Bounding rects of all contours at once: min/max over each contour's run of points.
    lengths = np.fromiter(map(len, contours), np.int64, len(contours))
    points = np.concatenate(contours).reshape(-1, 2).astype(np.int64)
    starts = np.zeros(len(contours), np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    low = np.minimum.reduceat(points, starts)
    rects = np.concatenate([low, np.maximum.reduceat(points, starts) - low + 1], axis=1)
    outer = parent == -1  # RETR_CCOMP: outer boundaries have no parent, holes have one
    holes = np.zeros((len(contours), 2), np.int64)
    inner = np.flatnonzero(~outer)
    np.maximum.at(holes, parent[inner], rects[inner, 2:])
    # A control's inside is a filled rectangle; a glyph's ink or the gap between two
    # glyphs fills little of its box.
    # A wide low hole is an entry's inside (a small field touching its neighbour), never
    # a gap between glyphs.
    side = rects[inner, 2:]
    large = inner[(side >= _HOLE_SIDE).all(axis=1) | ((side[:, 0] >= 40) & (side[:, 1] >= 8))]
    area = np.array([cv2.contourArea(contours[i]) for i in large], float).reshape(-1)
    # A text area's lines join its border once dilated and notch its inside deeply; a
    # hole too large for a glyph's gap is kept with less, its outline is checked later.
    big = (rects[large, 2:] >= _PANEL_HOLE_SIDE).all(axis=1)
    filled = area >= np.where(big, 0.3, 0.75) * rects[large, 2] * rects[large, 3]
    rectangular = large[filled]
    return rects[outer], holes[outer], rects[rectangular]


class Scratch(threading.local):
    """Per-thread scratch images reused between calls: fresh multi-megabyte arrays cost
    page faults on every call, which once took half the detection time."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        array = self.arrays.get(name)
        if array is None or array.shape != shape or array.dtype != dtype:
            array = self.arrays[name] = np.empty(shape, dtype)
        return array


scratch = Scratch()


class Sums:
    """Box sums over an image through its integral image, vectorised over many boxes."""

    def __init__(self, image: np.ndarray, name: str) -> None:
        self.height, self.width = image.shape
        table = scratch.get(name, (self.height + 1, self.width + 1), np.int32)
        self.table = cv2.integral(image, sum=table, sdepth=cv2.CV_32S)

    def sums(
        self, x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Sum and area of each box [x0, x1) × [y0, y1), cut to the image."""
        xs = np.clip(np.stack([x0, x1]), 0, self.width)
        ys = np.clip(np.stack([y0, y1]), 0, self.height)
        t = self.table
        total = t[ys[1], xs[1]] - t[ys[0], xs[1]] - t[ys[1], xs[0]] + t[ys[0], xs[0]]
        return total, (xs[1] - xs[0]) * (ys[1] - ys[0])

    def mean(self, x0: np.ndarray, y0: np.ndarray, x1: np.ndarray, y1: np.ndarray) -> np.ndarray:
        """Mean value inside each box [x0, x1) × [y0, y1), cut to the image."""
        total, area = self.sums(x0, y0, x1, y1)
        mean: np.ndarray = total / np.maximum(area, 1)
        return mean
