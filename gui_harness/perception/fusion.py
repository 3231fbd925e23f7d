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
    Past `max_components`, pixel components go first, smallest first.
    """
    kept = [c for c in pixels if not _covered(c.box, tree, holds=c.kind != "text")]
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
