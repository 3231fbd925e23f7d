"""Fusion: one numbered component list from the accessibility tree and pixel detection.

Owns `fuse()`: tree components (mapped from screen to image pixels) win where they
overlap pixel ones, pixel components fill what has no tree, and the result is numbered in
reading order. Querying the tree is accessibility.py's job, detecting detect.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from gui_harness.perception.component import Component, reading_order

__all__ = ["fuse", "to_image"]

_COVERED = 0.8  # share of a box under the other's that makes the pixel one a duplicate
_SAME = 0.5  # IoU at which a pixel box and a tree box are one element
_PART_H = 0.7  # share of a field's height that a spin button's - or + spans
_PART_W = (0.6, 1.4)  # a - or + part's width, in the field's heights
_PART_GAP = 5  # px between the - and the + parts, and between the + and the field's end


def to_image(
    components: Sequence[Component], screen: tuple[int, int], image: tuple[int, int]
) -> list[Component]:
    """`components` with boxes moved from `screen` pixels to `image` pixels (the
    screenshot as perceived may be scaled down), and a grid's cell boundaries with them;
    boxes that shrink below 1 px are kept at 1 px."""
    if screen == image or not screen[0] or not screen[1]:
        return list(components)
    sx, sy = image[0] / screen[0], image[1] / screen[1]
    moved = []
    for component in components:
        x, y, w, h = component.box
        x0, y0 = round(x * sx), round(y * sy)
        x1, y1 = round((x + w) * sx), round((y + h) * sy)
        grid = component.grid
        if grid is not None:  # an accessibility grid's cell boundaries, scaled alike
            columns = tuple(round(v * sx) for v in grid.columns)
            grid = replace(grid, columns=columns, rows=tuple(round(v * sy) for v in grid.rows))
        box = (x0, y0, max(x1 - x0, 1), max(y1 - y0, 1))
        moved.append(replace(component, box=box, grid=grid))
    return moved


def fuse(
    tree: Sequence[Component], pixels: Sequence[Component], *, max_components: int = 200
) -> list[Component]:
    """One list numbered in reading order: every `tree` component, and the `pixels`
    components that no tree box really covers.

    A pixel box is covered when it is the same element as a tree box (IoU >= 0.5), when
    tree boxes hold most of it (a label inside a button, a checkbox's square inside its
    row, a line across two tabs), or, unless it is text, when it holds most of a tree
    box (a blob spanning a field and its label); a paragraph around a link stays, and so
    does a control that a stale or misaligned tree box only partly overlaps (a field
    the page moved after the tree was read). Both lists are in image pixels.
    A tree field whose pixels end in two square parts side by side (a spin button's -
    and +, which the tree does not list: GTK 3 and 4) gives them as buttons "-" and "+",
    captioned as the field is. Past `max_components`, pixel components go first,
    smallest first.
    """
    kept = [c for c in pixels if not _covered(c.box, tree, holds=c.kind != "text")]
    kept += [part for c in tree if c.kind == "field" for part in _spin_parts(c, pixels)]
    if len(tree) + len(kept) > max_components:
        room = max(max_components - len(tree), 0)
        kept = sorted(kept, key=lambda c: -c.box[2] * c.box[3])[:room]
    return reading_order([*tree[:max_components], *kept])


def _covered(box: tuple[int, int, int, int], tree: Sequence[Component], *, holds: bool) -> bool:
    x, y, w, h = box
    area = max(w * h, 1)
    parts: list[tuple[int, int, int, int]] = []  # overlaps, relative to `box`
    for other in tree:
        ox, oy, ow, oh = other.box
        x0, y0 = max(x, ox), max(y, oy)
        x1, y1 = min(x + w, ox + ow), min(y + h, oy + oh)
        if x1 <= x0 or y1 <= y0:
            continue
        inter = (x1 - x0) * (y1 - y0)
        other_area = max(ow * oh, 1)
        if inter >= _SAME * (area + other_area - inter) or inter >= _COVERED * area:
            return True
        if holds and inter >= _COVERED * other_area:
            return True
        parts.append((x0 - x, y0 - y, x1 - x, y1 - y))
    if sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in parts) < _COVERED * area:
        return False
    # Tree boxes nest (a list and its items): count the area they cover once.
    under = np.zeros((h, w), bool)
    for x0, y0, x1, y1 in parts:
        under[y0:y1, x0:x1] = True
    return int(np.count_nonzero(under)) >= _COVERED * area


def _spin_parts(field: Component, pixels: Sequence[Component]) -> list[Component]:
    """The - and + buttons at the end of `field` (a tree field) that pixel detection
    parted off it (as tabs or buttons: full height, about square, side by side, the
    last at the field's end, after a text part at least a height wide); else none."""
    x, y, w, h = field.box
    parts = sorted(
        (
            p
            for p in pixels
            if p.kind in ("tab", "button")
            and x - 2 <= p.box[0]
            and y - 3 <= p.box[1]
            and p.box[0] + p.box[2] <= x + w + 2
            and p.box[1] + p.box[3] <= y + h + 3
            and p.box[3] >= _PART_H * h
            and _PART_W[0] * h <= p.box[2] <= _PART_W[1] * h
        ),
        key=lambda p: p.box[0],
    )
    if len(parts) < 2:
        return []
    minus, plus = parts[-2], parts[-1]
    if (
        abs(plus.box[0] + plus.box[2] - (x + w)) > _PART_GAP
        or plus.box[0] - (minus.box[0] + minus.box[2]) > _PART_GAP
        or minus.box[0] - x < h
    ):
        return []
    caption = field.caption or field.label
    return [
        Component(0, "button", minus.box, "-", 0.6, (), "pixels", caption=caption),
        Component(0, "button", plus.box, "+", 0.6, (), "pixels", caption=caption),
    ]
