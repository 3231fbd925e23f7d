"""Fusion: one numbered component list from the accessibility tree and pixel detection.

Owns `fuse()`: tree components (mapped from screen to image pixels) win where they
overlap pixel ones, pixel components fill what has no tree, and the result is numbered in
reading order. Querying the tree is accessibility.py's job, detecting detect.py's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gui_harness.perception.detect import Component, reading_order

__all__ = ["fuse", "to_image"]

_COVERED = 0.5  # share of a pixel box under tree boxes that makes it a duplicate


def to_image(
    components: Sequence[Component], screen: tuple[int, int], image: tuple[int, int]
) -> list[Component]:
    """`components` with boxes moved from `screen` pixels to `image` pixels (the
    screenshot as perceived may be scaled down); boxes that shrink below 1 px are kept
    at 1 px."""
    if screen == image or not screen[0] or not screen[1]:
        return list(components)
    sx, sy = image[0] / screen[0], image[1] / screen[1]
    moved = []
    for component in components:
        x, y, w, h = component.box
        x0, y0 = round(x * sx), round(y * sy)
        x1, y1 = round((x + w) * sx), round((y + h) * sy)
        moved.append(replace(component, box=(x0, y0, max(x1 - x0, 1), max(y1 - y0, 1))))
    return moved


def fuse(
    tree: Sequence[Component], pixels: Sequence[Component], *, max_components: int = 200
) -> list[Component]:
    """One list numbered in reading order: every `tree` component, and the `pixels`
    components that tree boxes do not cover.

    A pixel box is covered when tree boxes overlap at least half of it (a label inside a
    button, a checkbox's square inside its row), or, unless it is text, when it holds
    most of a tree box (a blob spanning a field and its label); a paragraph around a
    link stays. Both lists are in image pixels.
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
    overlap = 0
    for other in tree:
        ox, oy, ow, oh = other.box
        ix = min(x + w, ox + ow) - max(x, ox)
        iy = min(y + h, oy + oh) - max(y, oy)
        if ix <= 0 or iy <= 0:
            continue
        inter = ix * iy
        if inter >= _COVERED * area or (holds and inter >= _COVERED * max(ow * oh, 1)):
            return True
        overlap += inter
    return overlap >= _COVERED * area
