"""UI element detection on screenshots: `Component` and `detect_components()`.

Owns the OpenCV pipeline (edges → rectangles → controls; the remaining edges → text lines
and icons) and the reading-order numbering. Labels are filled later by memory.py and
ocr.py. Start at detect_components().
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

import cv2
import numpy as np

from gui_harness.perception._pixels import ImageLike, grey_array

__all__ = [
    "KINDS",
    "SOURCES",
    "STATES",
    "Component",
    "Kind",
    "Source",
    "State",
    "detect_components",
    "reading_order",
]

Kind = Literal["button", "field", "checkbox", "icon", "text", "radio", "dropdown", "link", "tab"]
"""What a component is: a push button, a text entry, a check box, an icon, a line of
text, a radio button, a drop-down chooser, a link or a tab. Pixel detection guesses it
from geometry and fill, so treat it as a hint; the accessibility tree knows it."""

KINDS: tuple[Kind, ...] = get_args(Kind)

State = Literal["checked", "selected", "focused", "disabled", "expanded"]
"""A state a component is in, as the accessibility tree reports it."""

STATES: tuple[State, ...] = get_args(State)

Source = Literal["pixels", "accessibility"]
"""Where a component came from: pixel detection, or an app's accessibility tree."""

SOURCES: tuple[Source, ...] = get_args(Source)

_CANNY = (30, 90)
_KERNEL = np.ones((3, 3), np.uint8)
_TEXT_KERNEL = np.ones((1, 7), np.uint8)  # closes letter and word gaps, never line gaps
_CONTROL_H = (10, 100)  # pixels; taller outlines are panels, shorter ones glyphs or lines
_CHECKBOX_SIDE = (10, 24)
_TEXT_H = (6, 64)


@dataclass(frozen=True, slots=True)
class Component:
    """One UI element found on a screenshot.

    `index` is 1-based in reading order (rows top to bottom, then left to right);
    `box` is (x, y, width, height) in image pixels; `label` is its text when memory or
    OCR supplied one; `confidence` (0–1) is how sure detection is about `kind`.
    `states` are the states the accessibility tree reported (pixels report none) and
    `source` is where the component came from.
    """

    index: int
    kind: Kind
    box: tuple[int, int, int, int]
    label: str | None = None
    confidence: float = 0.5
    states: tuple[State, ...] = ()
    source: Source = "pixels"

    @property
    def center(self) -> tuple[int, int]:
        """The middle of the box, in image pixels: where a click on it lands."""
        x, y, w, h = self.box
        return (x + w // 2, y + h // 2)

    def with_label(self, label: str | None) -> Component:
        """A copy carrying `label`."""
        return replace(self, label=label)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: index, kind, box as [x, y, w, h], label, confidence, states
        and source."""
        return {
            "index": self.index,
            "kind": self.kind,
            "box": list(self.box),
            "label": self.label,
            "confidence": round(self.confidence, 3),
            "states": list(self.states),
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Component:
        """The component `to_dict()` described."""
        x, y, w, h = (int(v) for v in data["box"])
        return cls(
            index=int(data["index"]),
            kind=data["kind"],
            box=(x, y, w, h),
            label=data.get("label"),
            confidence=float(data.get("confidence", 0.5)),
            states=tuple(data.get("states", ())),
            source=data.get("source", "pixels"),
        )


def detect_components(image: ImageLike, *, max_components: int = 200) -> list[Component]:
    """Find buttons, fields, checkboxes, icons and text lines on a screenshot.

    `image` is a PIL image or a uint8 numpy array (RGB, RGBA or grey). Returns at most
    `max_components` components numbered in reading order, without labels; when there
    are more, controls are kept first, then the largest text lines and icons. Each
    calling thread keeps about 12 bytes per pixel of scratch images for its next call.
    """
    grey = grey_array(image)
    edges = cv2.Canny(grey, *_CANNY, edges=_scratch.get("edges", grey.shape, np.uint8))
    thick = cv2.dilate(edges, _KERNEL, dst=_scratch.get("thick", grey.shape, np.uint8))
    controls = _controls(grey, thick)
    texts = _text_lines(edges, controls)
    found = controls + texts
    if len(found) > max_components:
        ranked = sorted(
            found,
            key=lambda c: (c[0] in ("text", "icon"), -c[1][2] * c[1][3]),
        )
        found = ranked[:max_components]
    return reading_order(
        [Component(0, kind, box, None, confidence) for kind, box, confidence in found]
    )


def reading_order(components: Sequence[Component]) -> list[Component]:
    """`components` sorted into rows (by vertical centre, with a tolerance) then by x,
    and renumbered from 1."""
    by_centre = sorted(components, key=lambda c: (c.box[1] + c.box[3] / 2, c.box[0]))
    rows: list[list[Component]] = []
    anchor_y = anchor_h = 0.0
    for component in by_centre:
        centre = component.box[1] + component.box[3] / 2
        tolerance = max(8.0, 0.5 * min(component.box[3], anchor_h))
        if rows and centre - anchor_y <= tolerance:
            rows[-1].append(component)
        else:
            rows.append([component])
            anchor_y, anchor_h = centre, float(component.box[3])
    ordered = [c for row in rows for c in sorted(row, key=lambda c: c.box[0])]
    return [replace(c, index=i) for i, c in enumerate(ordered, start=1)]


_Found = tuple[Kind, tuple[int, int, int, int], float]


def _boxes(binary: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounding boxes (N×4 int array: x, y, w, h) of every connected blob, nested ones
    too, and for each the (w, h) of its largest hole (0, 0 when it has none)."""
    contours, hierarchy = cv2.findContours(binary, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_SIMPLE)
    if hierarchy is None:
        return np.zeros((0, 4), np.int64), np.zeros((0, 2), np.int64)
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
    return rects[outer], holes[outer]


class _Scratch(threading.local):
    """Per-thread scratch images reused between calls: fresh multi-megabyte arrays cost
    page faults on every call, which once took half the detection time."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: type) -> np.ndarray:
        array = self.arrays.get(name)
        if array is None or array.shape != shape or array.dtype != dtype:
            array = self.arrays[name] = np.empty(shape, dtype)
        return array


_scratch = _Scratch()


class _Sums:
    """Box sums over an image through its integral image, vectorised over many boxes."""

    def __init__(self, image: np.ndarray, name: str) -> None:
        self.height, self.width = image.shape
        table = _scratch.get(name, (self.height + 1, self.width + 1), np.int32)
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
        return total / np.maximum(area, 1)


def _controls(grey: np.ndarray, thick: np.ndarray) -> list[_Found]:
    """Rectangular outlines of control size, classified, with nested duplicates merged."""
    boxes, holes = _boxes(thick)
    width = grey.shape[1]
    x, y, w, h = boxes.T
    # An outline, unlike a word, encloses one hole nearly its own size. A tick can cut
    # up a small box's hole or fill it: small squares need less, or none if their
    # corners are sharp (checked below).
    square = (np.maximum(w, h) <= _CHECKBOX_SIDE[1] + 2) & (np.abs(w - h) <= 0.3 * h)
    share = np.where(square, 0.25, 0.5)
    hollow = (holes[:, 0] >= share * w) & (holes[:, 1] >= share * 0.8 * h)
    keep = (h >= _CONTROL_H[0]) & (h <= _CONTROL_H[1]) & (w >= 10) & (w <= 0.9 * width)
    keep &= hollow | square
    boxes, solid = boxes[keep], ~hollow[keep]
    if not len(boxes):
        return []
    x, y, w, h = boxes.T
    edge = _Sums(thick, "thick sums")
    # An outline is a rectangle when the middle of each side is covered by a straight
    # run of edges 2 px deep: the middles only, so rounded corners pass; at a few
    # depths, as a 3-D relief puts its strongest edge a pixel or two inside the outer one.
    mx0, mx1 = x + w * 3 // 20, x + w * 17 // 20
    my0, my1 = y + h * 3 // 20, y + h * 17 // 20
    depth = np.arange(3)[:, None]
    same = np.zeros((3, 1), np.int64)  # broadcasts a per-box value over the depths
    sides = edge.mean(
        np.concatenate([mx0 + same, mx0 + same, x + depth, x + w - 2 - depth]),
        np.concatenate([y + depth, y + h - 2 - depth, my0 + same, my0 + same]),
        np.concatenate([mx1 + same, mx1 + same, x + 2 + depth, x + w - depth]),
        np.concatenate([y + 2 + depth, y + h - depth, my1 + same, my1 + same]),
    )
    sides = sides.reshape(4, 3, -1).max(axis=1) / 255.0
    rect = sides.min(axis=0) >= 0.85
    if solid.any():
        # A filled square is a ticked box only with square corners; an "o" has none.
        corners = edge.mean(
            np.concatenate([x, x + w - 3, x, x + w - 3]),
            np.concatenate([y, y, y + h - 3, y + h - 3]),
            np.concatenate([x + 3, x + w, x + 3, x + w]),
            np.concatenate([y + 3, y + 3, y + h, y + h]),
        )
        rect &= ~solid | (corners.reshape(4, -1).min(axis=0) / 255.0 >= 0.5)
    if not rect.any():
        return []
    boxes = _merge_nested(boxes[rect])
    # The dilation grew each outline by a pixel, and Canny marks the outer side of a step.
    boxes = boxes + np.array([2, 2, -3, -3])
    x, y, w, h = boxes.T
    # deep enough to clear a sunken 3D border and a focus ring (Tk: 2 px + 2 px)
    inset = np.where(h >= 30, 6, np.where(h >= 24, 4, 3))
    ix0, iy0, ix1, iy1 = x + inset, y + inset, x + w - inset, y + h - inset
    # Inside, and the 4 px ring just outside the outline, in one pass over the integral.
    total, area = _Sums(grey, "grey sums").sums(
        np.concatenate([ix0, x - 5, x - 1]),
        np.concatenate([iy0, y - 5, y - 1]),
        np.concatenate([ix1, x + w + 5, x + w + 1]),
        np.concatenate([iy1, y + h + 5, y + h + 1]),
    )
    total, area = total.reshape(3, -1), area.reshape(3, -1)
    inside = total[0] / np.maximum(area[0], 1)
    ring = (total[1] - total[2]) / np.maximum(area[1] - area[2], 1)
    third = np.maximum((ix1 - ix0) // 3, 1)
    ink = (
        edge.mean(
            np.concatenate([ix0, ix0 + third, ix1 - third]),
            np.concatenate([iy0, iy0, iy0]),
            np.concatenate([ix0 + third, ix1 - third, ix1]),
            np.concatenate([iy1, iy1, iy1]),
        ).reshape(3, -1)
        / 255.0
    )
    return [
        _classify((int(x[i]), int(y[i]), int(w[i]), int(h[i])), inside[i], ring[i], ink[:, i])
        for i in range(len(boxes))
    ]


def _classify(
    box: tuple[int, int, int, int], inside: float, ring: float, ink: np.ndarray
) -> _Found:
    """Kind of a rectangle from its shape, its inside's brightness against its
    surroundings, and where its ink (edge density in its left, middle, right thirds) is."""
    _, _, w, h = box
    aspect = w / h
    small = _CHECKBOX_SIDE[0] <= min(w, h) and max(w, h) <= _CHECKBOX_SIDE[1]
    if small and 1 / 1.3 <= aspect <= 1.3:
        return ("checkbox", box, 0.8)
    left, middle, right = (float(v) for v in ink)
    empty = max(left, middle, right) < 0.01
    balanced = min(left, right) >= 0.6 * max(left, right) or middle > 1.5 * max(left, right)
    centred = middle >= 0.01 and balanced
    left_heavy = left > 0.02 and right < 0.3 * left
    # Entry fields are white, or near black in dark themes, and set off from around them.
    plain = inside >= 190 or inside <= 80
    if plain and aspect >= 2 and abs(inside - ring) >= 10 and not centred:
        return ("field", box, 0.85)
    if plain and aspect >= 3 and (empty or (left_heavy and not centred)):
        return ("field", box, 0.6)
    return ("button", box, 0.5 if empty else 0.75)


def _merge_nested(boxes: np.ndarray) -> np.ndarray:
    """Merge nested outlines: an inner duplicate (a fill inside its border) and the one
    control-sized child of a composite control give way to the outer box; a panel that
    holds several controls, or a much smaller one, gives way to them."""
    x0, y0 = boxes[:, 0], boxes[:, 1]
    x1, y1 = x0 + boxes[:, 2], y0 + boxes[:, 3]
    slack = 2
    contains = (
        (x0[:, None] <= x0[None, :] + slack)
        & (y0[:, None] <= y0[None, :] + slack)
        & (x1[:, None] >= x1[None, :] - slack)
        & (y1[:, None] >= y1[None, :] - slack)
    )
    np.fill_diagonal(contains, False)
    inset = np.maximum.reduce(
        [
            np.abs(x0[None, :] - x0[:, None]),
            np.abs(y0[None, :] - y0[:, None]),
            np.abs(x1[:, None] - x1[None, :]),
            np.abs(y1[:, None] - y1[None, :]),
        ]
    )
    duplicate = contains & (inset <= 6)
    # Identical boxes contain each other: keep the first of them.
    same = duplicate & duplicate.T
    duplicate &= ~(same & np.tri(len(boxes), k=-1, dtype=bool))
    alive = ~duplicate.any(axis=0)
    children = contains & ~duplicate & alive[None, :]
    count = children.sum(axis=1)
    tallest_child = np.where(children, boxes[None, :, 3], 0).max(axis=1, initial=0)
    panel = (count >= 2) | ((count == 1) & (tallest_child < 0.6 * boxes[:, 3]))
    composite_child = children & ((count == 1) & ~panel)[:, None]
    alive &= ~panel & ~composite_child.any(axis=0)
    return boxes[alive]


def _text_lines(edges: np.ndarray, controls: list[_Found]) -> list[_Found]:
    """Lines of text and icons: the edges outside controls, joined horizontally."""
    free = _scratch.get("free", edges.shape, np.uint8)
    np.copyto(free, edges)
    for _, (cx, cy, cw, ch), _ in controls:
        free[max(0, cy - 2) : cy + ch + 2, max(0, cx - 2) : cx + cw + 2] = 0
    joined = cv2.dilate(free, _TEXT_KERNEL, dst=_scratch.get("joined", edges.shape, np.uint8))
    boxes = _boxes(joined)[0]
    if not len(boxes):
        return []
    boxes[:, 0] += 3  # undo the kernel's growth: 3 px each side
    boxes[:, 2] -= 6
    tall = boxes[:, 3]
    boxes = _join_words(boxes[(tall >= _TEXT_H[0]) & (tall <= _TEXT_H[1])])
    keep = (boxes[:, 2] >= 4) & (boxes[:, 2] * boxes[:, 3] >= 40)
    found: list[_Found] = []
    for bx, by, bw, bh in boxes[keep].tolist():
        if bh >= 16 and 0.6 <= bw / bh <= 1.6:
            found.append(("icon", (bx, by, bw, bh), 0.5))
        else:
            found.append(("text", (bx, by, bw, bh), 0.6))
    return found


def _join_words(boxes: np.ndarray) -> np.ndarray:
    """Join blobs on one line whose gap is under about half their height: the word gaps
    of large text, which the fixed dilation kernel leaves open."""
    lines: list[list[int]] = []  # x0, y0, x1, y1 of each line so far
    open_lines: list[list[int]] = []
    for x, y, w, h in boxes[np.argsort(boxes[:, 0], kind="stable")].tolist():
        x1, y1 = x + w, y + h
        open_lines = [line for line in open_lines if x - line[2] <= 40]
        for line in open_lines:
            line_h = line[3] - line[1]
            overlap = min(y1, line[3]) - max(y, line[1])
            gap = x - line[2]
            similar = overlap >= 0.6 * min(h, line_h) and max(h, line_h) <= 2 * min(h, line_h)
            if similar and -2 <= gap <= max(4, 0.6 * max(h, line_h)):
                line[0], line[1] = min(line[0], x), min(line[1], y)
                line[2], line[3] = max(line[2], x1), max(line[3], y1)
                break
        else:
            line = [x, y, x1, y1]
            lines.append(line)
            open_lines.append(line)
    joined = np.array(lines, np.int64).reshape(-1, 4)
    joined[:, 2:] -= joined[:, :2]
    return joined
