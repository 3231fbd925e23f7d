"""Captions by layout, one rule for every source: `caption_of()` says which text names a
control beside it, as a form lays one out, and `captioned()` gives the fields and
drop-downs of a component list theirs from its text components.

A caption is the nearest text on the control's row ending just left of it, else the
nearest text ending just above it and starting where it starts (a multi-line field
captioned above, a web form's fields), with no control between. The tree's
labelled-by relation, where there is one, comes first (tree/_tree_elements.py); the
accessibility tree's labels and the pixels' OCR-read text lines go through this rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from gui_harness.perception.component import Component, Kind

__all__ = ["CAPTIONED", "caption_of", "captioned"]

Box = tuple[int, int, int, int]

CAPTIONED: frozenset[Kind] = frozenset({"field", "dropdown"})
"""Kinds named by a caption beside them rather than by what they show (a field's text,
a drop-down's current option)."""

_GAP = 120  # px a caption may stand left of its control (a form's column of captions;
# twice its height when taller)
_ABOVE = 14  # px between a caption's bottom and the top of the control it names
_ALIGN = 16  # px a caption above may start left or right of its control's left edge
_MAX_WORDS = 6  # a caption above is a few words; a longer line is the page's text
_MAX_ROW_WORDS = 10  # one on its row may say more ("Delay of auto-selection in ... mode:")


def caption_of(box: Box, texts: Sequence[tuple[Box, str]], controls: Sequence[Box]) -> str | None:
    """The text among `texts` (boxes and their text) that captions the control at `box`:
    left of it on its row (its middle within the control's rows, ending at most
    max(2 × height, 120) px left of it, the nearest: a form may stand its captions in
    a column of their own), else above it (ending at most 14 px above its top, starting
    within 16 px of its left edge, the nearest); never
    one with another of `controls` between them, nor one inside the control, nor a long
    line (over 10 words on its row, 6 above it). None when there is none."""
    x, y, w, h = box
    best: tuple[int, str] | None = None
    reach = max(2 * h, _GAP)
    for (tx, ty, tw, th), text in texts:
        if not _short(text, _MAX_ROW_WORDS):
            continue
        gap = x - (tx + tw)
        if -2 <= gap <= reach and y <= ty + th / 2 <= y + h and (best is None or gap < best[0]):
            between = (tx + tw, y, max(x - tx - tw, 0), h)
            if not _any_inside(between, controls, box):
                best = (gap, text)
    if best is not None:
        return best[1]
    for (tx, ty, _, th), text in texts:
        if not _short(text):
            continue
        gap = y - (ty + th)
        if -2 <= gap <= _ABOVE and abs(tx - x) <= _ALIGN and (best is None or gap < best[0]):
            between = (x, ty + th, w, max(gap, 0))
            if not _any_inside(between, controls, box):
                best = (gap, text)
    return best[1] if best is not None else None


def captioned(components: Sequence[Component]) -> list[Component]:
    """`components` with each field and drop-down that has no caption given the one
    caption_of() finds among the labelled text components, unless it says what the
    component's label says (a field named by its caption)."""
    texts = [(c.box, c.label) for c in components if c.kind == "text" and c.label]
    if not texts:
        return list(components)
    controls = [c.box for c in components if c.kind not in ("text", "grid")]
    out = []
    for component in components:
        if component.kind in CAPTIONED and component.caption is None:
            caption = caption_of(component.box, texts, controls)
            if caption is not None and _bare(caption) != _bare(component.label or ""):
                component = replace(component, caption=caption)
        out.append(component)
    return out


def _short(text: str, words: int = _MAX_WORDS) -> bool:
    return 0 < len(text.split()) <= words and any(ch.isalnum() for ch in text)


def _any_inside(between: Box, controls: Sequence[Box], own: Box) -> bool:
    """Whether a control other than `own` lies mostly inside the strip `between`."""
    bx, by, bw, bh = between
    if bw <= 0 or bh <= 0:
        return False
    for box in controls:
        if box == own:
            continue
        cx, cy, cw, ch = box
        ix = min(bx + bw, cx + cw) - max(bx, cx)
        iy = min(by + bh, cy + ch) - max(by, cy)
        if ix > 0 and iy > 0 and ix * iy >= 0.5 * cw * ch:
            return True
    return False


def _bare(text: str) -> str:
    return text.rstrip(": ").casefold()
