"""UI element detection on screenshots: `detect_components()`.

Owns the OpenCV pipeline (edges → rectangles → controls; the remaining edges → text lines
and icons). Component and reading_order live in component.py (re-exported here); labels
are filled later by memory.py and ocr.py. Start at detect_components().
"""

from __future__ import annotations

import cv2
import numpy as np

from gui_harness.perception._pixels import ImageLike, grey_array
from gui_harness.perception.cells import Grid
from gui_harness.perception.component import (
    KINDS,
    SOURCES,
    STATES,
    Component,
    Kind,
    Source,
    State,
    reading_order,
)
from gui_harness.perception.pixels._blobs import Sums, boxes_of, scratch
from gui_harness.perception.pixels._framed import arrow_names, framed_tabs, stacked_arrows
from gui_harness.perception.pixels._grid import cell_contents, find_grids
from gui_harness.perception.pixels._parts import (
    PART_OF_CONTROL_H,
    bar_cells,
    chevron_dropdowns,
    field_buttons,
    notebook_tabs,
    sliders,
    spin_buttons,
    tabs,
)
from gui_harness.perception.pixels._shading import banded, raised
from gui_harness.perception.pixels._text import colour_of, large_text, links, list_rows, text_lines
from gui_harness.perception.pixels._web import web_parts

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

_CANNY = (30, 90)
_PALE_CANNY = (12, 36)  # outlines of pale flat controls: a 13-level step on white
_KERNEL = np.ones((3, 3), np.uint8)
_CONTROL_H = (10, 100)  # pixels; taller outlines are panels, shorter ones glyphs or lines
_TEXT_AREA_H = 400  # px; a taller plain outline holding lines is a page, not a text area
_CHECKBOX_SIDE = (10, 24)
_RULE_KERNEL = np.ones((1, 24), np.uint8)  # a horizontal run this long is a rule, not ink
_REPEATS = 8  # boxes of one kind and size that make repetitive content for the cap


def detect_components(
    image: ImageLike,
    *,
    max_components: int = 200,
    grey: np.ndarray | None = None,
    image_edges: bool = True,
) -> list[Component]:
    """Find buttons, fields, checkboxes, icons and text lines on a screenshot.

    `image` is a PIL image or a uint8 numpy array (RGB, RGBA or grey); links are told
    from text by their colour, so only in a colour image. Returns at most
    `max_components` components numbered in reading order, without labels but a spin
    box's arrow buttons' ('+' up, '-' down: _framed.arrow_names); when there
    are more, the controls a task acts on are kept before repetitive content (see
    _ranked). A ruled table or spreadsheet is one "grid" component whose `grid` names
    its cells, not a field per cell. Each
    calling thread keeps about 12 bytes per pixel of scratch images for its next call.
    `grey`: the image already in grey (uint8, same size), when the caller has it.
    `image_edges=False`: `image` is a crop of a larger screen, so its outermost rows and
    columns are not the screen's edges and close no outline.
    """
    if grey is None:
        grey = grey_array(image)
    return detect_crop(
        image, grey, max_components=max_components, closed=(image_edges,) * 4, grids=None
    )


def detect_crop(
    image: ImageLike,
    grey: np.ndarray,
    *,
    max_components: int,
    closed: tuple[bool, bool, bool, bool],
    background: int | None = None,
    grids: list[tuple[tuple[int, int, int, int], Grid]] | None = None,
) -> list[Component]:
    """detect_components() on a crop of a larger screen (_changes.py's changed region).

    `closed` says which of the crop's sides (top, bottom, left, right) are the screen's
    edges: outlines close there against `background`, the screen's edge_background()
    (None: this image's own). `grids`: the screen's grids, found on the whole screen, in
    the crop's pixels; they filter what the crop holds as a whole detection's would and
    are not returned (None: find the grids in the image and return them).
    """
    edges = cv2.Canny(grey, *_CANNY, edges=scratch.get("edges", grey.shape, np.uint8))
    # Outlines come from a low-threshold pass, so pale flat controls keep theirs; text
    # from the normal one, so anti-aliasing stays out of it.
    pale = cv2.Canny(grey, *_PALE_CANNY, edges=scratch.get("pale", grey.shape, np.uint8))
    if any(closed):
        _close_at_edges(grey, pale, closed, background)
    thick = cv2.dilate(pale, _KERNEL, dst=scratch.get("thick", grey.shape, np.uint8))
    controls, panels = _controls(grey, pale, thick, edges)
    controls, panels, lines = notebook_tabs(
        pale, edges, controls, panels, text_lines(edges, controls)
    )
    controls += field_buttons(edges, controls)
    controls, lines = large_text(edges, controls, lines)
    texts = list_rows(lines, [box for box, _ in panels])
    controls += [("field", box, 0.5) for box, plain in panels if plain]
    colour = colour_of(image)
    if colour is not None:
        texts = links(colour, texts)
    found = web_parts(colour, grey, spin_buttons(grey, controls + texts), _detect_inside)
    found = stacked_arrows(grey, framed_tabs(grey, chevron_dropdowns(grey, found)))
    found = sliders(grey, found)
    shown = find_grids(grey) if grids is None else []
    found = cell_contents(colour, grey, found, shown if grids is None else grids, _detect_inside)
    room = max(max_components - len(shown if grids is None else grids), 0)
    if len(found) > room:
        found = _ranked(found, grey.shape[0])[:room]
    named = arrow_names(grey, found)
    return reading_order(
        [Component(0, kind, box, named.get(box), confidence) for kind, box, confidence in found]
        + [Component(0, "grid", box, None, 0.7, grid=grid) for box, grid in shown][:max_components]
    )


def _detect_inside(image: np.ndarray, grey: np.ndarray, max_components: int) -> list[Component]:
    """detect_crop() on a crop inside the screen (no side closed, no grids): _web.py's
    look inside a row or a padded square."""
    return detect_crop(image, grey, max_components=max_components, closed=(False,) * 4, grids=[])


def edge_background(grey: np.ndarray) -> int:
    """The grey level of a screen's edges (the median of its outermost rows and columns):
    what an outline cut by the edge differs from."""
    lines = (grey[0], grey[-1], grey[:, 0], grey[:, -1])
    return int(np.median(np.concatenate(lines)))


def _ranked(found: list[_Found], height: int) -> list[_Found]:
    """`found` in the order the component cap keeps them: the controls a task acts on
    first, repetitive content last. Content repeats: eight or more boxes of one kind and
    nearly one size (a list's rows, a gallery's tiles, a table's cells) come after the
    rest; controls before text and icons; within each, what sits in the top tenth of
    the screen (menu bars, toolbars) first, then the larger first."""
    sizes: dict[tuple[str, int, int], int] = {}
    for kind, (_, _, w, h), _ in found:
        key = (kind, w // 4, h // 4)
        sizes[key] = sizes.get(key, 0) + 1
    top = 0.1 * height
    return sorted(
        found,
        key=lambda c: (
            sizes[(c[0], c[1][2] // 4, c[1][3] // 4)] >= _REPEATS,
            c[0] in ("text", "icon"),
            c[1][1] >= top,
            -c[1][2] * c[1][3],
        ),
    )


def _close_at_edges(
    grey: np.ndarray,
    edges: np.ndarray,
    closed: tuple[bool, bool, bool, bool],
    background: int | None,
) -> None:
    """Mark on `edges` the pixels of the image's outermost rows and columns on the
    `closed` sides (top, bottom, left, right) that differ from the `background` (None:
    edge_background(grey)), so a control cut off by the screen's or page's edge gets
    the side of its outline that the edge took."""
    if background is None:
        background = edge_background(grey)
    lines = (grey[0], grey[-1], grey[:, 0], grey[:, -1])
    outs = (edges[0], edges[-1], edges[:, 0], edges[:, -1])
    for line, out, side in zip(lines, outs, closed, strict=True):
        if side:
            out[np.abs(line.astype(np.int16) - background) >= _PALE_CANNY[0]] = 255


_Found = tuple[Kind, tuple[int, int, int, int], float]


def _controls(
    grey: np.ndarray, thin: np.ndarray, thick: np.ndarray, edges: np.ndarray
) -> tuple[list[_Found], list[tuple[tuple[int, int, int, int], bool]]]:
    """Rectangular outlines of control size, classified, with nested duplicates merged;
    and the panels (tall outlines holding lines), each with whether it is plain inside.

    Candidates are the blobs of the dilated edge map and the holes of both maps: where
    controls touch (a row of buttons, a close button inside a title bar, a control at
    the window's edge) their outlines fuse into one blob, but each inside survives as a
    hole, on the thin map when the gap is a pixel or two.
    """
    boxes, holes, thick_holes = boxes_of(thick)
    thin_blobs, thin_blob_holes, thin_holes = boxes_of(thin)
    # A check box or radio 2-3 px from its label joins it once dilated; on the thin map
    # its outline is a ring of its own, whose hole is over half its size.
    tw, th = thin_blobs[:, 2], thin_blobs[:, 3]
    ring = (np.minimum(tw, th) >= 12) & (np.maximum(tw, th) <= _CHECKBOX_SIDE[1] + 2)
    ring &= (np.abs(tw - th) <= 2) & (thin_blob_holes >= 0.5 * thin_blobs[:, 2:]).all(axis=1)
    thin_rings = _symmetric(grey, _lone(thin_blobs[ring], thin_blobs))
    width = grey.shape[1]
    x, y, w, h = boxes.T
    # An outline, unlike a word, encloses one hole nearly its own size. A tick can cut
    # up a small box's hole or fill it: small squares need less, or none if their
    # corners are sharp (checked below).
    square = (np.maximum(w, h) <= _CHECKBOX_SIDE[1] + 2) & (np.abs(w - h) <= 0.3 * h)
    share = np.where(square, 0.25, 0.5)
    hollow = (holes[:, 0] >= share * w) & (holes[:, 1] >= share * 0.8 * h)
    # A hole is the inside of an outline: grown back to where a blob's box would be.
    grow = np.array([-1, -1, 2, 2])  # a thin map's box to where a dilated one's would be
    boxes = np.concatenate([boxes, thick_holes + 2 * grow, thin_holes + grow, thin_rings + grow])
    added = np.ones(len(thick_holes) + len(thin_holes) + len(thin_rings), bool)
    # Blobs' boxes are exact; holes' are grown by a guess: the first wins among equals.
    source = np.repeat(
        [0, 1, 2, 3], [len(hollow), len(thick_holes), len(thin_holes), len(thin_rings)]
    )
    # A radio's ring is thin: its hole is over half its size, unlike an "o" or an "e".
    open_ = np.concatenate(
        [
            (holes[:, 0] >= 0.5 * w) & (holes[:, 1] >= 0.5 * h),
            np.ones(len(thick_holes), bool),
            np.zeros(len(thin_holes), bool),  # a solid round glyph is a thin hole: no rings
            np.ones(len(thin_rings), bool),
        ]
    )
    hollow = np.concatenate([hollow, added])
    x, y, w, h = boxes.T
    square = (np.maximum(w, h) <= _CHECKBOX_SIDE[1] + 2) & (np.abs(w - h) <= 0.3 * h)
    # A box across the whole image is the window's or page's frame, unless it clears
    # both edges (a full-width bar of a small page: an accordion header, a menu bar).
    inside_edges = (x > 0) & (x + w < width)
    keep = (h >= _CONTROL_H[0]) & (h <= _TEXT_AREA_H) & (w >= 10)
    keep &= (w <= 0.97 * width) | inside_edges
    keep &= hollow | square
    boxes, solid, square, open_ = boxes[keep], ~hollow[keep], square[keep], open_[keep]
    source = source[keep]
    if not len(boxes):
        return [], []
    x, y, w, h = boxes.T
    edge = Sums(thick, "thick sums")
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
    corners = (
        edge.mean(
            np.concatenate([x, x + w - 3, x, x + w - 3]),
            np.concatenate([y, y, y + h - 3, y + h - 3]),
            np.concatenate([x + 3, x + w, x + 3, x + w]),
            np.concatenate([y + 3, y + 3, y + h, y + h]),
        )
        .reshape(4, -1)
        .min(axis=0)
        / 255.0
    )
    # A small ring is a radio button: its sides' middles are straight enough to pass
    # at 2 px deep only when it is large, so it passes by its round, empty corners.
    ring = square & (np.minimum(w, h) >= 9) & (sides.min(axis=0) >= 0.3)
    ring &= open_ | (np.minimum(w, h) <= 13)  # a small ring's hole is closed by dilation
    ring &= corners <= 0.2
    rect = (sides.min(axis=0) >= 0.85) | ring
    # A filled square is a ticked box only with square corners; an "o" has none.
    rect &= ~solid | (corners >= 0.5)
    if not rect.any():
        return [], []
    boxes, round_ = _merge_nested(boxes[rect], ring[rect], source[rect])
    # The dilation grew each outline by a pixel, and Canny marks the outer side of a step.
    boxes = boxes + np.array([2, 2, -3, -3])
    x, y, w, h = boxes.T
    # deep enough to clear a sunken 3D border and a focus ring (Tk: 2 px + 2 px)
    inset = np.where(h >= 30, 6, np.where(h >= 24, 4, 3))
    ix0, iy0, ix1, iy1 = x + inset, y + inset, x + w - inset, y + h - inset
    # Inside, and the 4 px ring just outside the outline, in one pass over the integral.
    total, area = Sums(grey, "grey sums").sums(
        np.concatenate([ix0, x - 5, x - 1]),
        np.concatenate([iy0, y - 5, y - 1]),
        np.concatenate([ix1, x + w + 5, x + w + 1]),
        np.concatenate([iy1, y + h + 5, y + h + 1]),
    )
    total, area = total.reshape(3, -1), area.reshape(3, -1)
    inside = total[0] / np.maximum(area[0], 1)
    around = (total[1] - total[2]) / np.maximum(area[1] - area[2], 1)
    third = np.maximum((ix1 - ix0) // 3, 1)
    # What a box holds, from the normal edges: the low-threshold pass also marks a
    # gradient's bands, which run through a button's label ("Apply" read as a field)
    flat = _without_rules(edges)
    ink = (
        Sums(flat, "flat sums")
        .mean(
            np.concatenate([ix0, ix0 + third, ix1 - third]),
            np.concatenate([iy0, iy0, iy0]),
            np.concatenate([ix0 + third, ix1 - third, ix1]),
            np.concatenate([iy1, iy1, iy1]),
        )
        .reshape(3, -1)
        / 255.0
    )
    round_ |= _round(grey, boxes, around)
    found = [
        _classify(
            (int(x[i]), int(y[i]), int(w[i]), int(h[i])),
            inside[i],
            around[i],
            ink[:, i],
            round_=bool(round_[i]),
            arrow=_has_arrow_button(thick, flat, (int(x[i]), int(y[i]), int(w[i]), int(h[i]))),
        )
        for i in range(len(boxes))
    ]
    kept = [_no_field(grey, f) for f in found]
    # A tall box holding three or more lines, or content hung from its top, is a list
    # or a panel: what it holds are the targets. One plain inside, like an entry's (a
    # list box, a text area, a menu), is a target too: its lines are read as a list's.
    # Its background, not its mean, says whether it is plain: text may fill a text area.
    # Above control height only such plain boxes stay (a text area, empty or not).
    controls, panels = [], []
    for i, f in enumerate(kept):
        if f is None:
            continue
        tall = f[1][3] > _CONTROL_H[1]
        if f[1][3] >= 40 and (tall or _panel(thin, f[1])):
            background = float(np.median(grey[iy0[i] : iy1[i], ix0[i] : ix1[i]]))
            plain = background >= 190 or background <= 80
            if not tall or (plain and (ink[:, i].max() < 0.01 or _panel(thin, f[1]))):
                panels.append((f[1], plain))
        else:
            controls.append(f)
    cells, controls = bar_cells(grey, thin, controls)
    return tabs(controls) + cells, panels


def _no_field(grey: np.ndarray, found: _Found) -> _Found | None:
    """`found`, unless it is a field that is none: a raised relief is a button or a bar
    (a Tk menu bar on its page); a box with a side on a gradient's band (a Swing menu
    bar's fill) is nothing: the words in it are found as text."""
    kind, box, _ = found
    if kind != "field":
        return found
    if raised(grey, box):
        return ("button", box, 0.75)
    if banded(grey, box):
        return None
    return found


def _lone(rings: np.ndarray, blobs: np.ndarray) -> np.ndarray:
    """The `rings` with no neighbour of nearly their height within 4 px left or right
    among `blobs`: a check box's label is lower than the box, a letter "o" or "O" has
    letters of its own height beside it."""
    if not len(rings):
        return rings
    rx, ry, rw, rh = (v[:, None] for v in rings.T)
    bx, by, bw, bh = (v[None, :] for v in blobs.T)
    overlap = np.minimum(ry + rh, by + bh) - np.maximum(ry, by)
    gap = np.maximum(bx - (rx + rw), rx - (bx + bw))
    beside = (overlap >= 0.5 * np.minimum(rh, bh)) & (gap >= 0) & (gap <= 4)
    lone: np.ndarray = rings[~(beside & (bh >= 0.9 * rh)).any(axis=1)]
    return lone


def _symmetric(grey: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """The `boxes` whose pixels look the same mirrored left to right and top to bottom,
    as an empty or dotted box or ring does and a glyph ("g", "e") does not."""
    keep = np.zeros(len(boxes), bool)
    for i, (x, y, w, h) in enumerate(boxes.tolist()):
        patch = grey[y : y + h, x : x + w].astype(np.int16)
        contrast = int(patch.max()) - int(patch.min())
        # a pixel either way: anti-aliasing puts a ring off its box's centre
        mirrored = min(
            np.abs(patch[:, a : w - b] - patch[:, a : w - b][:, ::-1]).mean()
            for a, b in ((0, 0), (1, 0), (0, 1))
        ) + min(
            np.abs(patch[a : h - b] - patch[a : h - b][::-1]).mean()
            for a, b in ((0, 0), (1, 0), (0, 1))
        )
        keep[i] = contrast >= 40 and mirrored <= 0.1 * contrast
    return boxes[keep]


def _panel(thin: np.ndarray, box: tuple[int, int, int, int]) -> bool:
    """Whether `box` holds bands of ink like a panel: three or more, or off its middle."""
    x, y, w, h = box
    profile = np.count_nonzero(thin[y + 4 : y + h - 4, x + 4 : x + w - 4], axis=1) > 0
    rows = np.flatnonzero(profile)
    if not len(rows):
        return False
    bands = int(np.count_nonzero(profile[1:] & ~profile[:-1]) + profile[0])
    above, below = int(rows[0]), len(profile) - 1 - int(rows[-1])
    return bands >= 3 or abs(above - below) > 0.3 * h


def _round(grey: np.ndarray, boxes: np.ndarray, around: np.ndarray) -> np.ndarray:
    """Which small square boxes are circles: their corners show what is around them,
    while the middles of their sides show an outline."""
    found = np.zeros(len(boxes), bool)
    height, width = grey.shape
    for i, (x, y, w, h) in enumerate(boxes.tolist()):
        if not (min(w, h) >= 7 and max(w, h) <= _CHECKBOX_SIDE[1] + 2 and abs(w - h) <= 3):
            continue
        if x < 1 or y < 1 or x + w + 1 > width or y + h + 1 > height:
            continue
        patch = grey[y - 1 : y + h + 1, x - 1 : x + w + 1].astype(np.int16)
        # 2×2 at each corner, where a checkbox's rounded corner still reaches; one
        # pixel below 13 px, where a circle's ring reaches the 2×2 too
        k = 3 if min(w, h) >= 13 else 2
        corners = np.concatenate(
            [
                patch[1:k, 1:k].ravel(), patch[1:k, 1 - k : -1].ravel(),
                patch[1 - k : -1, 1:k].ravel(), patch[1 - k : -1, 1 - k : -1].ravel(),
            ]
        )  # fmt: skip
        mid_y, mid_x = patch.shape[0] // 2, patch.shape[1] // 2
        sides = np.array(
            [
                patch[mid_y, :3].min(), patch[mid_y, -3:].min(),
                patch[:3, mid_x].min(), patch[-3:, mid_x].min(),
            ]
        )  # fmt: skip
        contrast = np.abs(sides - around[i]).mean()
        found[i] = contrast >= 15 and np.abs(corners - around[i]).max() <= 0.35 * contrast
    return found


def _without_rules(edges: np.ndarray) -> np.ndarray:
    """The edge map `edges`, dilated, without its straight horizontal runs of 24 px or
    more: the lines along a box (an etched border's second line, a slider's track),
    which are no content. A glyph's edges are short curves (dilated, a word's run on)."""
    runs = cv2.morphologyEx(
        edges, cv2.MORPH_OPEN, _RULE_KERNEL, dst=scratch.get("runs", edges.shape, np.uint8)
    )
    rules = cv2.dilate(runs, _KERNEL, dst=scratch.get("rules", edges.shape, np.uint8))
    thick = cv2.dilate(edges, _KERNEL, dst=scratch.get("ink", edges.shape, np.uint8))
    return cv2.subtract(thick, rules, dst=scratch.get("flat", edges.shape, np.uint8))


def _has_arrow_button(thick: np.ndarray, flat: np.ndarray, box: tuple[int, int, int, int]) -> bool:
    """Whether a wide box ends in a button of its own: a straight vertical divider within
    about its height of the right end, clear of ink in `flat` (the normal edges, no
    rules) just left of it, with ink right of it (a drop-down's arrow). A Metal
    button's gradient made "Cancel"'s last stem straight and drew a line from it to the
    border: a drop-down, before the divider had to stand apart."""
    x, y, w, h = box
    if w < 2.5 * h or h < 14:
        return False
    # The divider runs the whole inner height; a glyph's stem only the text's.
    top, bottom = y + 4, y + h - 4
    start, stop = x + w - int(1.3 * h), x + w - max(6, h // 4)
    columns = thick[top:bottom, max(start, 0) : max(stop, 0)]
    if columns.size == 0:
        return False
    straight = np.flatnonzero(columns.min(axis=0) > 0)
    if not len(straight):
        return False
    divider = start + int(straight[0])
    # a divider stands apart from the text before it; a letter's stem ("Cancel"'s "l",
    # made straight by a gradient's bands) has its word's last letters beside it
    if flat[top:bottom, max(divider - 4, 0) : max(divider - 1, 0)].any():
        return False
    arrow = thick[top:bottom, divider + 3 : x + w - 4]
    return arrow.size > 0 and bool(arrow.any())


def _classify(
    box: tuple[int, int, int, int],
    inside: float,
    ring: float,
    ink: np.ndarray,
    *,
    round_: bool = False,
    arrow: bool = False,
) -> _Found:
    """Kind of a rectangle from its shape, its inside's brightness against its
    surroundings, where its ink (edge density in its left, middle, right thirds) is,
    whether it is round and whether it ends in an arrow button."""
    _, _, w, h = box
    aspect = w / h
    small = _CHECKBOX_SIDE[0] - 3 <= min(w, h) and max(w, h) <= _CHECKBOX_SIDE[1]
    if small and 1 / 1.3 <= aspect <= 1.3:
        return ("radio", box, 0.75) if round_ else ("checkbox", box, 0.8)
    if arrow:
        return ("dropdown", box, 0.7)
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


def _merge_nested(
    boxes: np.ndarray, flags: np.ndarray, source: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Merge nested outlines: an inner duplicate (a fill inside its border) and the one
    control-sized child of a composite control give way to the outer box; a panel that
    holds several controls, or a much smaller one, gives way to them. `flags` (one per
    box) come back for the boxes kept; among near-duplicates the lowest `source` wins."""
    # Near-duplicates (every side within 6 px: an outline, its fill, its hole on either
    # map) collapse into the largest of the best source.
    order = np.lexsort((-boxes[:, 2] * boxes[:, 3], source))
    boxes, flags = boxes[order], flags[order]
    x0, y0 = boxes[:, 0], boxes[:, 1]
    x1, y1 = x0 + boxes[:, 2], y0 + boxes[:, 3]
    inset = np.maximum.reduce(
        [
            np.abs(x0[None, :] - x0[:, None]),
            np.abs(y0[None, :] - y0[:, None]),
            np.abs(x1[:, None] - x1[None, :]),
            np.abs(y1[:, None] - y1[None, :]),
        ]
    )
    area = boxes[:, 2] * boxes[:, 3]
    near = (inset <= 6) & (np.minimum.outer(area, area) >= 0.5 * np.maximum.outer(area, area))
    kept = np.ones(len(boxes), bool)
    for i in range(len(boxes)):
        if kept[i]:
            near_i = near[i].copy()
            near_i[: i + 1] = False
            kept &= ~near_i
    boxes, flags = boxes[kept], flags[kept]
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
    duplicate = np.zeros_like(contains)
    alive = ~duplicate.any(axis=0)
    children = contains & ~duplicate & alive[None, :]
    # Inside a control-high box, parts much lower than it (an arrow, an icon, a glyph)
    # belong to it; elsewhere they are controls of a panel.
    control = (boxes[:, 3] <= PART_OF_CONTROL_H)[:, None]
    small = children & control & (boxes[None, :, 3] < 0.6 * boxes[:, None, 3])
    narrow = boxes[None, :, 2] < 0.25 * boxes[:, None, 2]
    # two wide low boxes in a low bar are its buttons (a dialog's OK and Cancel)
    parts = small & (narrow | ((small & ~narrow).sum(axis=1) == 1)[:, None])
    children &= ~parts
    count = children.sum(axis=1)
    tallest_child = np.where(children, boxes[None, :, 3], 0).max(axis=1, initial=0)
    # One outline split by a divider into a wide part and a narrow one of its full height
    # is one control (a drop-down's entry and arrow, a spin box), not a panel of two.
    full = children & (boxes[None, :, 3] >= 0.75 * boxes[:, None, 3])
    wide_part = full & (boxes[None, :, 2] >= 0.5 * boxes[:, None, 2])
    end_part = full & (boxes[None, :, 2] <= 1.5 * boxes[:, None, 3]) & ~wide_part
    spans = np.where(full, boxes[None, :, 2], 0).sum(axis=1) >= 0.85 * boxes[:, 2]
    split = (count == 2) & (wide_part.sum(axis=1) == 1) & (end_part.sum(axis=1) == 1) & spans
    panel = ((count >= 2) & ~split) | ((count == 1) & (tallest_child < 0.6 * boxes[:, 3]))
    # A wide child is the inner border of its parent; a narrow one of the same height is
    # a button at the end of a bar (a close button, a search button), and stays.
    wide = boxes[None, :, 2] >= 0.5 * boxes[:, None, 2]
    composite_child = ((children & wide) | parts) & (((count <= 1) | split) & ~panel)[:, None]
    alive &= ~panel & ~composite_child.any(axis=0)
    return boxes[alive], flags[alive]
