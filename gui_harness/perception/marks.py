"""Set-of-marks for the planner: `draw_marks()` numbers the boxes on a screenshot copy,
`describe()` lists the same components as text.

Both read components from detect.py and change nothing. The colour of a box tells its
kind (see KIND_COLOURS); its tag shows the index the planner refers to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from gui_harness.perception._pixels import ImageLike, pil_image
from gui_harness.perception.component import Component, Kind

__all__ = ["KIND_COLOURS", "Described", "describe", "draw_marks", "read_description"]

KIND_COLOURS: dict[Kind, tuple[int, int, int]] = {
    "button": (220, 40, 40),
    "field": (20, 150, 50),
    "checkbox": (235, 130, 0),
    "radio": (200, 120, 0),
    "dropdown": (0, 140, 140),
    "tab": (170, 30, 120),
    "link": (30, 60, 170),
    "icon": (150, 50, 200),
    "text": (20, 100, 230),
    "grid": (110, 110, 20),
}
"""RGB outline and tag colour of each component kind."""

_OTHER_COLOUR = (90, 90, 90)  # a kind added to detect.Kind before it got a colour here

_FONT_FILES = (
    "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf",
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
)

_Rect = tuple[int, int, int, int]  # x0, y0, x1, y1 (exclusive)


def draw_marks(
    image: ImageLike, components: Sequence[Component], *, line_width: int = 2, font_size: int = 13
) -> Image.Image:
    """A copy of `image` with each component's box outlined and a numbered tag (with a
    tick when the component is checked or selected).

    Outlines are drawn just outside the boxes, so they cover no text. Tags sit above a
    box's top-left corner when there is room and no earlier tag is there, else at the
    next free spot around it. `font_size` is in pixels.
    """
    marked = pil_image(image).copy()
    draw = ImageDraw.Draw(marked)
    font = _font(font_size)
    for component in components:
        x, y, w, h = _outline(component, line_width)
        draw.rectangle(
            (x, y, x + w - 1, y + h - 1),
            outline=KIND_COLOURS.get(component.kind, _OTHER_COLOUR),
            width=line_width,
        )
    placed: list[_Rect] = []
    for component in components:
        text = str(component.index)
        if "checked" in component.states or "selected" in component.states:
            text += "\u2713"  # a tick: the picture shows what the text list's states say
        left, top, right, bottom = (round(v) for v in draw.textbbox((0, 0), text, font=font))
        tag_w, tag_h = right - left + 6, bottom - top + 4
        tag = _place(_outline(component, line_width), (tag_w, tag_h), marked.size, placed)
        placed.append(tag)
        draw.rectangle(
            (tag[0], tag[1], tag[2] - 1, tag[3] - 1),
            fill=KIND_COLOURS.get(component.kind, _OTHER_COLOUR),
        )
        draw.text((tag[0] + 3 - left, tag[1] + 2 - top), text, font=font, fill=(255, 255, 255))
    return marked


def describe(components: Sequence[Component]) -> str:
    """One line per component for the planner, e.g.
    ``#3 checkbox at (120, 84, 13x13) "Subscribe" [checked, focused]``.

    The numbers are x, y, width x height in image pixels; the label, when known, is quoted
    as a JSON string, and so is the caption beside it that names it, when it has one
    (``#5 dropdown at (260, 48, 180x24) "/root" captioned "Look in:"``); the states,
    when there are any, follow in brackets. A grid names
    the cells it shows, e.g. ``cells A1:F20 (6 columns, 20 rows)``. No components give an
    empty string.
    """
    lines = []
    for component in components:
        x, y, w, h = component.box
        line = f"#{component.index} {component.kind} at ({x}, {y}, {w}x{h})"
        if component.label:
            line += " " + json.dumps(component.label, ensure_ascii=False)
        if component.caption:
            line += " captioned " + json.dumps(component.caption, ensure_ascii=False)
        if component.states:
            line += " [" + ", ".join(component.states) + "]"
        if component.grid is not None and component.grid.span():
            rows, columns = component.grid.shape
            line += f" cells {component.grid.span()} ({columns} columns, {rows} rows)"
        lines.append(line)
    return "\n".join(lines)


_QUOTED = r'"(?:[^"\\]|\\.)*"'  # a JSON string, as describe() writes labels and captions
_LINE = re.compile(
    rf"^#(\d+) (\w+) at \((\d+), (\d+), (\d+)x(\d+)\)(?: ({_QUOTED}))?"
    rf"(?: captioned ({_QUOTED}))?(?: \[([^\]]*)\])?(?: cells (\S+))?",
    re.M,
)


@dataclass(frozen=True)
class Described:
    """One component as a describe() line gives it back (read_description)."""

    index: int
    kind: str
    box: tuple[int, int, int, int]
    label: str = ""
    caption: str = ""
    states: frozenset[str] = frozenset()
    cells: str = ""


def read_description(text: str) -> list[Described]:
    """The components of describe()'s lines found in `text` (a prompt, say), in order:
    the one reading of that format, for policies and tests that plan from the text."""
    return [
        Described(
            int(index),
            kind,
            (int(x), int(y), int(w), int(h)),
            json.loads(label) if label else "",
            json.loads(caption) if caption else "",
            frozenset(states.split(", ")) if states else frozenset(),
            cells,
        )
        for index, kind, x, y, w, h, label, caption, states, cells in _LINE.findall(text)
    ]


def _outline(component: Component, line_width: int) -> tuple[int, int, int, int]:
    x, y, w, h = component.box
    return (x - line_width, y - line_width, w + 2 * line_width, h + 2 * line_width)


def _place(
    box: tuple[int, int, int, int], tag: tuple[int, int], size: tuple[int, int], placed: list[_Rect]
) -> _Rect:
    x, y, w, h = box
    tag_w, tag_h = tag
    spots = [
        (x, y - tag_h),  # above the top-left corner
        (x - tag_w, y),  # left of it
        (x, y + h),  # below the bottom-left corner
        (x + w - tag_w, y - tag_h),  # above the top-right corner
        (x, y),  # inside the top-left corner
    ]
    limit_x, limit_y = max(size[0] - tag_w, 0), max(size[1] - tag_h, 0)
    inside = [(sx, sy) for sx, sy in spots if 0 <= sx <= limit_x and 0 <= sy <= limit_y]
    # Spots pushed back onto the image would cover the box's own content: try them last.
    pushed = [(min(max(sx, 0), limit_x), min(max(sy, 0), limit_y)) for sx, sy in spots]
    for sx, sy in inside + pushed:
        rect = (sx, sy, sx + tag_w, sy + tag_h)
        if not any(_overlaps(rect, other) for other in placed):
            return rect
    sx, sy = pushed[0]
    return (sx, sy, sx + tag_w, sy + tag_h)


def _overlaps(a: _Rect, b: _Rect) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@lru_cache(maxsize=8)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    for file in _FONT_FILES:
        if Path(file).exists():
            return ImageFont.truetype(file, size)
    return ImageFont.load_default(size=size)
