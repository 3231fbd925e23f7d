"""Captions by layout, one rule for every source: `caption_of()` says which text names a
control beside it, as a form lays one out, and `captioned()` gives the controls of a
component list theirs from its text components.

A caption is the nearest text on the control's row ending just left of it (further left
where captions and controls stand in two columns, a form's), else the nearest text
ending just above it and starting where it starts (a multi-line field captioned above,
a web form's fields), with no control between. The tree's labelled-by relation, where
there is one, comes first (tree/_tree_elements.py); the accessibility tree's labels and
the pixels' OCR-read text lines go through this rule. A field or drop-down is
captioned so, and on pixels so is any other control that draws no word (a number
field taken for a button, a colour well, a slider, a switch: a small one first by the
text just right of it, as a check box's); a control inside a captioned one (a spin
box's arrows, a date field's calendar button, a drop-down's caret) takes its caption.
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
_COLUMN_GAP = 300  # px a caption may stand left of its control in a column of captions
_COLUMN_ALIGN = 4  # px the captions of a column, and their controls, start apart at most
_TOGGLE_H = 28  # px: a control no higher, at most _TOGGLE_W times as wide, is a toggle's size
_TOGGLE_W = 2.5
_NO_CAPTION = frozenset({"text", "grid", "link", "tab"})  # named by what they draw
_PARTED = frozenset({"field", "dropdown", "button"})  # kinds whose parts take their caption
_PART_END = 40  # px a part of a taller control ends left of its right end, at most
_CONTROL_H = 64  # px: a control no higher holds its parts anywhere inside it
_BAND_H = 40  # px: a heading's bar found on pixels is no higher


def caption_of(box: Box, texts: Sequence[tuple[Box, str]], controls: Sequence[Box]) -> str | None:
    """The text among `texts` (boxes and their text) that captions the control at `box`:
    left of it on its row (its middle within the control's rows, ending at most
    max(2 × height, 120) px left of it, the nearest: a form may stand its captions in
    a column of their own), else above it (ending at most 14 px above its top, starting
    within 16 px of its left edge, the nearest), else left of it up to 300 px when
    another text starting where it starts stands so on the row of another control
    starting where this one starts (a column of captions beside a column of fields; a
    sidebar's links beside a form captioned above are no such column); never
    one with another of `controls` between them, nor one inside the control, nor a long
    line (over 10 words on its row, 6 above it). None when there is none."""
    x, y, w, h = box
    best: tuple[int, str] | None = None
    far: tuple[int, tuple[int, int, int, int], str] | None = None
    reach = max(2 * h, _GAP)
    for (tx, ty, tw, th), text in texts:
        if not _short(text, _MAX_ROW_WORDS):
            continue
        gap = x - (tx + tw)
        if not (-2 <= gap <= _COLUMN_GAP and y <= ty + th / 2 <= y + h):
            continue
        between = (tx + tw, y, max(x - tx - tw, 0), h)
        if _any_inside(between, controls, box):
            continue
        if gap <= reach and (best is None or gap < best[0]):
            best = (gap, text)
        elif gap > reach and (far is None or gap < far[0]):
            far = (gap, (tx, ty, tw, th), text)
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
    if best is not None:  # a caption above comes before a far column's (a sidebar's)
        return best[1]
    if far is not None and _in_columns(far[1], box, texts, controls):
        return far[2]
    return None


def captioned(components: Sequence[Component]) -> list[Component]:
    """`components` with each that has no caption given the one caption_of() finds among
    the labelled text components, unless it says what the component's label says (a
    field named by its caption): each field and drop-down, and each other control but a
    link or tab that draws no word (unread(): its label None, a value or a glyph), by a
    text that says a word (not a value, '3'), when pixels found it (the tree names its
    own and links its captions, tree/_tree_elements.py); a
    toggle-sized one (no higher than 28 px, at most 2.5 times as wide) first by the text
    starting just right of it on its row, as a check box is named. A control that draws
    no word, or a text, that is part of a larger control takes its caption, else its
    label when that says a word (as the tree path's spin parts: fusion._spin_parts),
    instead (_outer: a spin box's arrows, a date field's calendar, a text area's grip)."""
    texts = [(c.box, c.label) for c in components if c.kind == "text" and c.label]
    if not texts:
        return list(components)
    controls = [c.box for c in components if c.kind not in ("text", "grid")]
    words = [(box, text) for box, text in texts if not unread(text)]  # not a value, '3'
    out = list(components)
    inner = [_outer(c, components) for c in components]
    for n, component in enumerate(components):
        if component.caption is not None or inner[n] is not None:
            continue
        pixels = component.source == "pixels"
        caption = None
        if component.kind in CAPTIONED:
            caption = caption_of(component.box, texts, controls)
        elif pixels and component.kind not in _NO_CAPTION and unread(component.label):
            _, _, w, h = component.box
            if h <= _TOGGLE_H and w <= _TOGGLE_W * h:
                caption = _right_of(component.box, words, controls)
            caption = caption or caption_of(component.box, words, controls)
        if caption is not None and _bare(caption) != _bare(component.label or ""):
            out[n] = replace(component, caption=caption)
    out = _banded(out)
    for n, component in enumerate(components):
        part_of = inner[n]
        if part_of is None or component.caption is not None:
            continue
        outer = out[part_of]
        name = outer.caption or (None if unread(outer.label) else outer.label)
        if name is not None:
            out[n] = replace(component, caption=name)
    return out


def _banded(components: list[Component]) -> list[Component]:
    """`components` with each field or drop-down of the tree that has neither name nor
    caption captioned by a band just above it: a control found on pixels (the tree
    lists no such control) that draws a few words in a bar (a panel's heading,
    Poedit's "Translation" over its text box), which becomes the text it is."""
    bands = {
        n: c
        for n, c in enumerate(components)
        if c.source == "pixels"
        and c.kind in ("field", "button")
        and not unread(c.label)
        and c.box[3] <= _BAND_H
    }
    if not bands:
        return components
    out = list(components)
    for component in components:
        if (
            component.source != "accessibility"
            or component.kind not in CAPTIONED
            or component.label
            or component.caption is not None
        ):
            continue
        texts = [(band.box, band.label or "") for band in bands.values()]
        controls = [c.box for c in components if c.kind not in ("text", "grid")]
        caption = caption_of(component.box, texts, controls)
        n = None if caption is None else _below(component.box, bands, caption)
        if n is None:
            continue
        out[n] = replace(out[n], kind="text")
        at = components.index(component)
        out[at] = replace(out[at], caption=caption)
    return out


def _below(box: Box, bands: dict[int, Component], caption: str) -> int | None:
    """The band labelled `caption` standing above `box` (its bottom at most 14 px above
    the top of `box`), if it is one."""
    for n, band in bands.items():
        bottom = band.box[1] + band.box[3]
        if band.label == caption and -2 <= box[1] - bottom <= _ABOVE:
            return n
    return None


def unread(label: str | None) -> bool:
    """Whether `label` says no word a user reads as a control's name: None, or nothing
    of two letters running (a value, '3'; a glyph OCR read off an icon, '<', 'u')."""
    return label is None or not any(_lettered(word) for word in label.split())


def _lettered(word: str) -> bool:
    run = 0
    for ch in word:
        run = run + 1 if ch.isalpha() else 0
        if run >= 2:
            return True
    return False


def _outer(component: Component, components: Sequence[Component]) -> int | None:
    """The position of the smallest field, drop-down or button, larger than `component`,
    that holds its centre (anywhere in one up to 64 px high: a button's icon, a
    field's magnifier; in a taller one, ending near its right end, within 1.5 × its
    height and at most 40 px: a text area's grip), or, up to 64 px high, that it
    starts just right of (within 3 px) on its rows (a spin box's arrows beside its
    field, not a text area's scroll bar), when `component`
    is found on pixels and draws no word (unread()), or is a text (a field's value;
    in a button only one that draws no word); else None."""
    if component.source != "pixels" or component.kind in ("grid", "link", "tab"):
        return None
    value = component.kind == "text"  # a field's own text, its value: any words
    if not value and not unread(component.label):
        return None
    x, y, w, h = component.box
    cx, cy = x + w / 2, y + h / 2
    best: tuple[int, int] | None = None
    for n, other in enumerate(components):
        ox, oy, ow, oh = other.box
        if other.kind not in _PARTED or ow * oh <= w * h or other is component:
            continue
        if value and other.kind == "button" and not unread(component.label):
            continue  # a button's text is its label, not a part
        if not oy <= cy <= oy + oh or (best is not None and ow * oh >= best[0]):
            continue
        near_end = oh <= _CONTROL_H or ox + ow - (x + w) <= min(1.5 * oh, _PART_END)
        inside = ox <= cx <= ox + ow and near_end
        # a spin box's arrows stand beside its field; beside a taller control (a text
        # area) stands its scroll bar, no part of what the caption names
        beside = abs(x - (ox + ow)) <= 3 and h <= oh + 4 and oh <= _CONTROL_H
        if inside or beside:
            best = (ow * oh, n)
    return None if best is None else best[1]


def _right_of(box: Box, texts: Sequence[tuple[Box, str]], controls: Sequence[Box]) -> str | None:
    """The text starting just right of a toggle-sized control at `box` on its row (its
    middle within the control's rows, at most 2 × height + 20 px right of it), with no
    control between."""
    x, y, w, h = box
    best: tuple[int, str] | None = None
    for (tx, ty, _, th), text in texts:
        gap = tx - (x + w)
        if not (-2 <= gap <= 2 * h + 20 and abs(ty + th / 2 - (y + h / 2)) <= h):
            continue
        if not _short(text, _MAX_ROW_WORDS) or (best and gap >= best[0]):
            continue
        if not _any_inside((x + w, y, max(gap, 0), h), controls, box):
            best = (gap, text)
    return None if best is None else best[1]


def _in_columns(
    text: Box, box: Box, texts: Sequence[tuple[Box, str]], controls: Sequence[Box]
) -> bool:
    """Whether another of `texts` starts where `text` starts and stands on the row of
    another of `controls` that starts where `box` starts, left of it: a column of
    captions beside a column of controls."""
    for (ox, oy, ow, oh), _ in texts:
        if (ox, oy, ow, oh) == text or abs(ox - text[0]) > _COLUMN_ALIGN:
            continue
        for cx, cy, cw, ch in controls:
            if (cx, cy, cw, ch) == box or abs(cx - box[0]) > _COLUMN_ALIGN:
                continue
            if cy <= oy + oh / 2 <= cy + ch and 0 < cx - (ox + ow) <= _COLUMN_GAP:
                return True
    return False


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
