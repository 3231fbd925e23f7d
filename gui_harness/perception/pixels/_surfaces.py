"""Text lines cut where a window's side crosses them: detection joins ink into lines by
its pixels alone, so the first item of a popup menu opened over a page of text became
one line with the text beside it ("(ma: Configure IDLE": Tk's menu over IDLE's shell),
where the popup's side is broken by its highlighted item. A line never goes from one
window into another: the desktop's window list says where each one's sides are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gui_harness.perception.component import Component
from gui_harness.perception.pixels._decorations import window_box

__all__ = ["split_at_windows"]

_PART = 4  # px: a line reaching this far past a side on both of its sides is cut there
_BORDER = 2  # px: a window's border at its side, left out of the parts


def split_at_windows(
    pixels: Sequence[Component], windows: Sequence[Any], scale: tuple[float, float]
) -> list[Component]:
    """`pixels` with each unlabelled text line found on pixels that runs across a left or
    right side of one of `windows` (the desktop's, bottom to top, in screen pixels,
    `scale` mapping them onto the picture; a window's frame counts when it has one)
    where that side shows (no window above it there) cut into its parts on either
    side."""
    boxes = [window_box(window, scale) for window in windows]
    if not boxes:
        return list(pixels)
    out: list[Component] = []
    for component in pixels:
        x, y, w, h = component.box
        if component.kind != "text" or component.source != "pixels" or component.label:
            out.append(component)
            continue
        middle = y + h // 2
        cuts = sorted(
            {
                side
                for level, (bx, by, bw, bh) in enumerate(boxes)
                if by <= middle < by + bh
                for side in (bx, bx + bw)
                if x + _PART <= side <= x + w - _PART
                and not any(_holds(above, side, middle) for above in boxes[level + 1 :])
            }
        )
        if not cuts:
            out.append(component)
            continue
        starts, ends = [x] + [c + _BORDER for c in cuts], [c - _BORDER for c in cuts] + [x + w]
        for left, right in zip(starts, ends, strict=True):  # without the side's border
            if right - left >= _PART:
                box = (left, y, right - left, h)
                out.append(Component(0, "text", box, None, component.confidence))
    return out


def _holds(box: tuple[int, int, int, int], x: int, y: int) -> bool:
    """Whether `box` covers the point, its own sides left out (a side is where it ends)."""
    bx, by, bw, bh = box
    return bx < x < bx + bw - 1 and by <= y < by + bh
