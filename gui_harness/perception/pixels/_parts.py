"""Controls made of parts that pixel detection reads inside one box: the buttons of a
toolbar, the tabs of a tab strip (bordered, or a notebook's borderless labels), the two
arrows of a spin box, a drop-down's caret after its text, a slider's thumb on its track.
Private to detect.py, which calls these on the boxes it found.
"""

from __future__ import annotations

import cv2
import numpy as np

from gui_harness.perception.component import Kind

__all__ = [
    "PART_OF_CONTROL_H",
    "Found",
    "bar_cells",
    "chevron_dropdowns",
    "field_buttons",
    "notebook_tabs",
    "sliders",
    "spin_buttons",
    "tabs",
]

_BAR_KERNEL = np.ones((1, 24), np.uint8)
_KERNEL_5 = np.ones((5, 5), np.uint8)
_ICON_INK = 40  # grey levels an icon's ink differs from its toolbar's background by
_BAR_H = 72  # px; a button this high or less may be a bar holding several
PART_OF_CONTROL_H = 48  # px; a box up to this high owns the much lower boxes inside it

Found = tuple[Kind, tuple[int, int, int, int], float]
Box = tuple[int, int, int, int]


def bar_cells(
    grey: np.ndarray, thin: np.ndarray, controls: list[Found]
) -> tuple[list[Found], list[Found]]:
    """The buttons of toolbars, and `controls` without the bars split into them.

    Inside a low, wide box, separate marks each become a button. At a regular pitch:
    three or more marks of `thin` (icons, single glyphs), each narrower than the bar is
    high, one pitch wide. At any pitch, in a bar six times as wide as high that is no
    entry field: four or more icons, told by their ink against the bar's background
    (over _ICON_INK grey levels; a line along the bar is no icon), each at least 0.4 of
    the bar's inside high and at most 1.5 its height wide, a drop-down arrow just right
    of one joined to it, a 1-2 px separator dropped; each padded to a square of the
    bar's inside height. A field keeps its box; a bar split into buttons is dropped."""
    cells: list[Found] = []
    kept: list[Found] = []
    for found in controls:
        kind, (x, y, w, h), _ = found
        split = None
        if h <= PART_OF_CONTROL_H and w >= 3 * h:
            split = _regular_marks(thin, (x, y, w, h))
            if split is None and kind != "field" and w >= 6 * h and h >= 16:
                split = _icons(grey, (x, y, w, h))
        if split is None and kind == "button" and h <= _BAR_H and w >= 2.2 * h:
            split = _label_groups(grey, (x, y, w, h))
        if split is None:
            kept.append(found)
        else:
            cells += split
            if kind == "field":
                kept.append(found)
    return cells, kept


def _label_groups(grey: np.ndarray, box: Box) -> list[Found] | None:
    """The buttons of a bar that reads as several: two or more groups of ink set apart
    by more than half the bar's inner height (a button group's "1 2 3" with no divider
    drawn, an app bar's title and its "LOGIN"), each group a button padded by a quarter
    of the room the bar leaves above and below it."""
    x, y, w, h = box
    crop = grey[y + 3 : y + h - 3, x + 3 : x + w - 3]
    if crop.size == 0:
        return None
    ink = cv2.absdiff(crop, np.full_like(crop, int(np.median(crop)))) >= _ICON_INK
    ink[ink.mean(axis=1) > 0.5] = False  # a line along the bar
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 2:
        return None
    breaks = np.flatnonzero(np.diff(columns) > max(8, (h - 6) // 2))
    if not len(breaks):
        return None
    starts = np.concatenate([columns[:1], columns[breaks + 1]]).tolist()
    ends = (np.concatenate([columns[breaks], columns[-1:]]) + 1).tolist()
    cells: list[Found] = []
    for start, end in zip(starts, ends, strict=True):
        rows = np.flatnonzero(ink[:, start:end].any(axis=1))
        top, high = int(rows[0]), int(rows[-1] - rows[0]) + 1
        if (end - start < 3 and high < 6) or (end - start <= 4 and high >= 0.8 * (h - 6)):
            return None  # a speck, or two buttons' borders where they meet: no labels
        pad = max(3, (h - 6 - high) // 4)
        cells.append(
            (
                "button",
                (x + 3 + start - pad, y + 3 + top - pad, end - start + 2 * pad, high + 2 * pad),
                0.5,
            )
        )
    return cells


def _regular_marks(thin: np.ndarray, box: Box) -> list[Found] | None:
    x, y, w, h = box
    columns = np.count_nonzero(thin[y + 3 : y + h - 3, x + 3 : x + w - 3], axis=0) > 0
    ink = np.flatnonzero(columns)
    if len(ink) < 3:
        return None
    gap = max(6, h // 3)  # wider than a word space
    breaks = np.flatnonzero(np.diff(ink) > gap)
    starts = np.concatenate([ink[:1], ink[breaks + 1]])
    ends = np.concatenate([ink[breaks], ink[-1:]]) + 1
    if len(starts) < 3 or (ends - starts).max() > h:
        return None
    centres = (starts + ends) / 2
    pitches = np.diff(centres)
    if np.ptp(pitches) > 3 or pitches.min() < 0.8 * h:
        return None
    pitch = float(np.median(pitches))
    return [
        ("button", (max(x + 3 + round(c - pitch / 2), x + 1), y + 1, round(pitch), h - 2), 0.5)
        for c in centres.tolist()
    ]


def _icons(grey: np.ndarray, box: Box) -> list[Found] | None:
    x, y, w, h = box
    side = h - 6
    crop = grey[y + 3 : y + h - 3, x + 3 : x + w - 3]
    ink = cv2.absdiff(crop, np.full_like(crop, int(np.median(crop)))) >= _ICON_INK
    ink[ink.mean(axis=1) > 0.5] = False  # a line along the bar
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 4:
        return None
    breaks = np.flatnonzero(np.diff(columns) > 3)
    starts = np.concatenate([columns[:1], columns[breaks + 1]]).tolist()
    ends = (np.concatenate([columns[breaks], columns[-1:]]) + 1).tolist()
    marks: list[list[int]] = []  # [start, end, top, bottom]
    for start, end in zip(starts, ends, strict=True):
        if end - start < 3:
            continue  # a separator
        rows = np.flatnonzero(ink[:, start:end].any(axis=1))
        top, bottom = int(rows[0]), int(rows[-1]) + 1
        arrow = end - start <= 8 and bottom - top <= 0.4 * side
        if arrow and marks and start - marks[-1][1] <= 6:
            marks[-1][1] = end
            continue
        marks.append([start, end, top, bottom])
    icons = [m for m in marks if m[3] - m[2] >= 0.4 * side and m[1] - m[0] <= 1.5 * h]
    if len(icons) < 4 or len(icons) < 0.75 * len(marks):
        return None
    if icons[-1][1] - icons[0][0] < 0.5 * w:
        return None
    cells: list[Found] = []
    for start, end, _, _ in icons:
        width = max(end - start + 4, side)
        cells.append(
            ("button", (x + 3 + (start + end) // 2 - width // 2, y + 3, width, side), 0.55)
        )
    return cells


def tabs(found: list[Found]) -> list[Found]:
    """Buttons in a row of three or more of one height, touching or nearly, are tabs."""
    buttons = sorted(
        (i for i, (kind, _, _) in enumerate(found) if kind == "button"),
        key=lambda i: (found[i][1][1], found[i][1][0]),
    )
    runs: list[list[int]] = []
    for i in buttons:
        bx, by, _, bh = found[i][1]
        for run in runs:
            px, py, pw, ph = found[run[-1]][1]
            if abs(by - py) <= 2 and abs(bh - ph) <= 2 and -2 <= bx - (px + pw) <= 3:
                run.append(i)
                break
        else:
            runs.append([i])
    tabbed = list(found)
    for run in runs:
        if len(run) >= 3:
            for i in run:
                tabbed[i] = ("tab", found[i][1], 0.6)
    return tabbed


def field_buttons(edges: np.ndarray, controls: list[Found]) -> list[Found]:
    """The icon buttons at the right end of entry fields (a date field's calendar, a
    search field's magnifier): a mark no wider than the field's inside is high and at
    least half as high (a drop-down's arrow is lower), within that of the field's right
    side and set apart from any text by half that; each becomes a button padded by an
    eighth of the room the field leaves above and below it."""
    found: list[Found] = []
    for kind, (x, y, w, h), _ in controls:
        if kind != "field" or h > PART_OF_CONTROL_H or w < 3 * h or h < 20:
            continue
        side = h - 6
        inner = edges[y + 3 : y + h - 3, x + 3 : x + w - 3]
        columns = np.flatnonzero(inner.any(axis=0))
        if len(columns) < 2:
            continue
        breaks = np.flatnonzero(np.diff(columns) >= side // 2)
        start = int(columns[breaks[-1] + 1]) if len(breaks) else int(columns[0])
        end = int(columns[-1]) + 1
        if len(breaks) == 0 and start < w - 6 - 2 * side:
            continue  # the field's only ink, far from its end: text
        if not (6 <= end - start <= side and end >= w - 6 - side // 2):
            continue
        rows = np.flatnonzero(inner[:, start:end].any(axis=1))
        top, high = int(rows[0]), int(rows[-1] - rows[0]) + 1
        if high < max(6, side / 2) or high > side:  # a drop-down's arrow is lower
            continue
        pad = max(1, (side - high) // 8)
        box = (x + 3 + start - pad, y + 3 + top - pad, end - start + 2 * pad, high + 2 * pad)
        found.append(("button", box, 0.5))
    return found


def notebook_tabs(
    thin: np.ndarray,
    edges: np.ndarray,
    controls: list[Found],
    panels: list[tuple[Box, bool]],
    texts: list[Found],
) -> tuple[list[Found], list[tuple[Box, bool]], list[Found]]:
    """A notebook's tab strip, read as tabs: a strip that shares a whole side with a
    page (its two outline lines run on along the page's) and holds separate labels; each
    label, padded as a tab pads it, becomes a tab, and the strip is no control or list.
    A low strip whose labels are spread out, not packed, stays, with each label a button.

    A low strip above or below its page is one of `controls`, its labels the words in
    `edges` inside it set apart by more than half its inner height; a column beside its
    page is one of `panels`, its labels the `texts` inside it. Returns `controls`,
    `panels` and `texts` with the strips replaced by their tabs.
    """
    tabs_found: list[Found] = []
    kept_controls: list[Found] = []
    for found in controls:
        cells: list[Box] = []
        packed = False
        _, _, w, h = found[1]
        if h <= PART_OF_CONTROL_H and w >= 3 * h and _attached(thin, found[1], across=False):
            cells, packed = _strip_labels(edges, found[1])
        # labels spread along a bar (a site's header or footer) are its targets, not tabs
        tabs_found += [("tab" if packed else "button", cell, 0.6) for cell in cells]
        if not packed:
            kept_controls.append(found)
    kept_panels: list[tuple[Box, bool]] = []
    taken: set[int] = set()
    for box, plain in panels:
        x, y, w, h = box
        if h < 2 * w:
            kept_panels.append((box, plain))
            continue
        inside = [
            i
            for i, (kind, (tx, ty, tw, th), _) in enumerate(texts)
            if kind == "text" and x < tx and y < ty and tx + tw < x + w and ty + th < y + h
        ]
        if len(inside) < 2 or not _attached(thin, box, across=True):
            kept_panels.append((box, plain))
            continue
        boxes = sorted((texts[i][1] for i in inside), key=lambda b: b[1])
        pitch = float(np.median(np.diff([ty + th / 2 for _, ty, _, th in boxes])))
        for tx, ty, tw, th in boxes:
            pad = max(3, round((pitch - th) / 4))
            tabs_found.append(("tab", (tx - pad, ty - pad, tw + 2 * pad, th + 2 * pad), 0.6))
        taken.update(inside)
    kept_texts = [t for i, t in enumerate(texts) if i not in taken]
    return kept_controls + tabs_found, kept_panels, kept_texts


def _attached(thin: np.ndarray, box: Box, *, across: bool) -> bool:
    """Whether `box` shares a whole side with a bigger outlined box: its top and bottom
    outline lines (`across`: a column) or its left and right ones (a low strip) run on
    straight for twice its width (height) on one side of it."""
    x, y, w, h = box
    height, width = thin.shape
    for sign in (-1, 1):
        if across:  # the rows of its top and bottom lines, left or right of it
            start, stop = (x - 2 * w, x - 2) if sign < 0 else (x + w + 2, x + 3 * w)
            bands = [thin[max(r - 3, 0) : r + 4, start:stop] for r in (y, y + h - 1)]
        else:  # the columns of its left and right lines, above or below it
            start, stop = (y - 2 * h, y - 2) if sign < 0 else (y + h + 2, y + 3 * h)
            bands = [thin[start:stop, max(c - 3, 0) : c + 4].T for c in (x, x + w - 1)]
        if start < 0 or stop > (width if across else height):
            continue
        if all(np.count_nonzero(band.any(axis=0)) >= 0.9 * (stop - start) for band in bands):
            return True
    return False


def _strip_labels(edges: np.ndarray, box: Box) -> tuple[list[Box], bool]:
    """The labels of a low strip, and whether they are packed as tabs are (one gap
    between each two, at most twice the strip's inner height). Labels are the runs of
    ink in `box` set apart by more than half its inner height (the words of one label
    are a space apart), two or more, none over half the strip wide; each is padded by a
    quarter of the room its strip leaves above and below it."""
    x, y, w, h = box
    if h > PART_OF_CONTROL_H or w < 3 * h:
        return [], False
    inner = edges[y + 3 : y + h - 3, x + 3 : x + w - 3]
    # a long straight run is the selected tab's bar, wider than its label, not a glyph
    bar = cv2.morphologyEx(inner, cv2.MORPH_OPEN, _BAR_KERNEL)
    inner = np.where(cv2.dilate(bar, _KERNEL_5) > 0, 0, inner)  # with the bar's short ends
    columns = np.flatnonzero(inner.any(axis=0))
    if len(columns) < 2:
        return [], False
    breaks = np.flatnonzero(np.diff(columns) > max(4, (h - 6) // 4))
    starts = np.concatenate([columns[:1], columns[breaks + 1]])
    ends = np.concatenate([columns[breaks], columns[-1:]]) + 1
    wide = ends - starts >= 3  # a speck (a bar's end, a border's corner) is no label
    starts, ends = starts[wide], ends[wide]
    gaps = starts[1:] - ends[:-1]
    if len(starts) < 2 or (ends - starts).max() > w / 2 or gaps.min() < (h - 6) // 2:
        return [], False
    cells = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        rows = np.flatnonzero(inner[:, start:end].any(axis=1))
        top, high = int(rows[0]), int(rows[-1] - rows[0]) + 1
        pad = max(3, (h - 6 - high) // 4)
        cells.append(
            (x + 3 + start - pad, y + 3 + top - pad, end - start + 2 * pad, high + 2 * pad)
        )
    packed = bool(np.ptp(gaps) <= 4 and gaps.max() <= 2 * (h - 6))
    return cells, packed


def spin_buttons(grey: np.ndarray, found: list[Found]) -> list[Found]:
    """`found` with each spin box's arrow column split into its two buttons: a box no
    wider than high holding two marks, one in each half, each mirror-symmetric left to
    right and the lower the upper turned upside down (the up and down arrows)."""
    result: list[Found] = []
    for kind, box, confidence in found:
        x, y, w, h = box
        halves = None
        inside = x >= 0 and y >= 0 and x + w <= grey.shape[1] and y + h <= grey.shape[0]
        if (
            inside
            and kind in ("button", "icon")
            and 14 <= h <= PART_OF_CONTROL_H
            and 0 < w <= 1.3 * h
        ):
            halves = _arrow_halves(grey[y : y + h, x : x + w])
        if halves is None:
            result.append((kind, box, confidence))
            continue
        top = halves
        result.append(("button", (x, y, w, top), 0.6))
        result.append(("button", (x, y + top, w, h - top), 0.6))
    return result


def _arrow_halves(patch: np.ndarray) -> int | None:
    """Where a column holding an up and a down arrow splits (rows from its top), or None
    when `patch` does not hold two such marks."""
    background = int(np.median(patch))
    ink = np.abs(patch.astype(np.int16) - background) >= 60
    rows = np.flatnonzero(ink.any(axis=1))
    if len(rows) < 4:
        return None
    gaps = np.flatnonzero(np.diff(rows) > 1)
    if len(gaps) != 1:
        return None  # not exactly two bands of ink
    upper = ink[rows[0] : rows[gaps[0]] + 1]
    lower = ink[rows[gaps[0] + 1] : rows[-1] + 1]
    if upper.shape != lower.shape or upper.shape[0] < 3:
        return None
    columns = np.flatnonzero(upper.any(axis=0))
    mark = upper[:, columns[0] : columns[-1] + 1]
    if mark.shape[1] >= patch.shape[1] - 2:
        return None  # a mark across the whole box is a border, not an arrow
    symmetric = np.count_nonzero(mark != mark[:, ::-1]) <= 0.1 * mark.size
    flipped = np.count_nonzero(upper != lower[::-1]) <= 0.1 * upper.size
    narrowing = upper[0].sum() != upper[-1].sum()  # a triangle, not a bar or a dot
    if not (symmetric and flipped and narrowing):
        return None
    return int(rows[gaps[0]] + rows[gaps[0] + 1] + 1) // 2


def chevron_dropdowns(grey: np.ndarray, found: list[Found]) -> list[Found]:
    """`found` with each button that ends in a drop-down's caret read as a drop-down: a
    box of control height (14-48 px), at least 2.5 times as wide as high, whose last
    mark (within 1.3 heights of its right end, inside its border) stands apart from the
    marks before it (3 px or more) and is a caret (_caret: a small chevron or solid
    triangle pointing down). A web page's plain <select> draws no divider before it."""
    result: list[Found] = []
    for kind, box, confidence in found:
        x, y, w, h = box
        if (
            kind == "button"
            and 14 <= h <= PART_OF_CONTROL_H
            and w >= 2.5 * h
            and x >= 0
            and y >= 0
            and x + w <= grey.shape[1]
            and y + h <= grey.shape[0]
            and _ends_in_caret(grey[y + 3 : y + h - 3, x + 3 : x + w - 3], h)
        ):
            result.append(("dropdown", box, 0.6))
        else:
            result.append((kind, box, confidence))
    return result


def _ends_in_caret(inside: np.ndarray, h: int) -> bool:
    if inside.size == 0:
        return False
    ink = np.abs(inside.astype(np.int16) - int(np.median(inside))) >= _ICON_INK
    columns = np.flatnonzero(ink.any(axis=0))
    if len(columns) < 2:
        return False
    # the last mark: the columns of ink after the last gap of 3 px or more
    gaps = np.flatnonzero(np.diff(columns) >= 4)
    start = int(columns[gaps[-1] + 1]) if len(gaps) else int(columns[0])
    end = int(columns[-1]) + 1
    if not len(gaps) or inside.shape[1] - start > 1.3 * h:
        return False
    return _caret(ink[:, start:end])


def _caret(mark: np.ndarray) -> bool:
    """Whether `mark` (ink, cut to its columns) is a caret pointing down: 5-16 px wide,
    2-10 px high, wider than high, mirror-symmetric left to right, its rows' spans
    narrowing downwards to its middle from its widest, in its upper half."""
    rows = np.flatnonzero(mark.any(axis=1))
    if not len(rows):
        return False
    mark = mark[rows[0] : rows[-1] + 1]
    high, wide = mark.shape
    if not (5 <= wide <= 16 and 2 <= high <= 10 and wide >= 1.3 * high):
        return False
    if np.count_nonzero(mark != mark[:, ::-1]) > 0.2 * mark.size:
        return False
    first = np.argmax(mark, axis=1)
    last = wide - 1 - np.argmax(mark[:, ::-1], axis=1)
    spans = last - first
    widest = int(np.argmax(spans))  # its top row may be fainter than the next (smoothing)
    tail = spans[widest:]
    return bool(widest <= high // 2 and (np.diff(tail) <= 0).all() and tail[0] >= tail[-1] + 3)


_TRACK_STEP = 10  # grey levels a slider's track differs from the page by


def sliders(grey: np.ndarray, found: list[Found]) -> list[Found]:
    """`found` with each slider one control across its track: a thumb (an icon, a mark
    read as text, a link or a button, 10-28 px high) on a straight track 3 px thick or more (a
    fill, or two sides) that runs on at its middle, thinner than it, three times its
    height or more (60 px or more in all) beyond it. A web range input is such a thumb
    and track; found as its thumb alone, a click landed on it but no caption named it
    (it stands above the track's start, not the thumb's)."""
    height = grey.shape[0]
    tracks: list[Box] = []
    for kind, (x, y, w, h), _ in found:
        if kind not in ("icon", "text", "link", "button", "radio", "checkbox") or not 10 <= h <= 28:
            continue
        if y < 3 or y + h + 3 > height or any(_within(t, (x, y, w, h)) for t in tracks):
            continue
        track = _track(grey, (x, y, w, h))
        if track is not None:
            tracks.append(track)
    if not tracks:
        return found
    kept = [item for item in found if not any(_within(t, item[1]) for t in tracks)]
    return kept + [("button", track, 0.6) for track in tracks]


def _track(grey: np.ndarray, box: Box) -> Box | None:
    """The slider's box whose thumb `box` may be (see sliders), else None."""
    x, y, w, h = box
    cy = y + h // 2
    rows = grey[[y + 1, *range(cy - 4, cy + 5), y + h - 2]].astype(np.int16)
    background = int(np.median(grey[y - 3]))
    off = np.abs(rows - background) >= _TRACK_STEP
    middle = off[1:-1]
    # the track: off the page both above and below its middle (its two sides, or a fill
    # 3 px thick or more: a 1-2 px rule is no track), the rows by the thumb's ends not
    # (a bar as high as the thumb, a title bar holding its close button, is no track)
    sides = middle[:4].any(axis=0) & middle[5:].any(axis=0)
    across = np.asarray(sides | middle[3:6].all(axis=0))
    on = across & ~off[0] & ~off[-1]
    left, right = x, x + w
    while left > 0 and on[left - 1]:
        left -= 1
    while right < grey.shape[1] and on[right]:
        right += 1
    beyond = (x - left) + (right - x - w)
    if beyond < 3 * h or right - left < 60 or not across[x : x + w].mean() >= 0.5:
        return None
    return (left, y, right - left, h)


def _within(outer: Box, inner: Box) -> bool:
    """Whether `inner`'s centre lies inside `outer`."""
    ox, oy, ow, oh = outer
    cx, cy = inner[0] + inner[2] / 2, inner[1] + inner[3] / 2
    return ox <= cx < ox + ow and oy <= cy < oy + oh
