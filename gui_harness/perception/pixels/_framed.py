"""Controls drawn as framed cells that detection reads as one line or one box: a tab
strip's framed labels side by side on their page's top line (Swing's tabs in the Metal,
Nimbus, Motif and GTK looks, Tk's notebook), and a spin box's up and down arrows stacked
at its field's right end (Swing's JSpinner, Tk's spin boxes), and the names of a spin
box's arrow buttons. Private to detect.py, which calls these on what it found.
"""

from __future__ import annotations

import cv2
import numpy as np

from gui_harness.perception.component import Kind

__all__ = ["arrow_names", "framed_tabs", "stacked_arrows"]

Found = tuple[Kind, tuple[int, int, int, int], float]
Box = tuple[int, int, int, int]

_STRIP_H = (10, 48)  # px; the height of a tab strip's line
_LINE_INK = 25  # grey levels a frame's line differs from its strip's background by
_MARK_INK = 40  # grey levels an arrow differs from its button's face by
_ARROW_H = 30  # px; a spin box's arrow button is no higher
_SEEDS = ("text", "link", "button", "tab")
_GAP_KERNEL = np.ones((3, 1), np.uint8)


def framed_tabs(grey: np.ndarray, found: list[Found]) -> list[Found]:
    """`found` with each tab strip drawn as framed labels side by side read as its tabs.

    The lines and boxes of one row that touch or nearly (one text line over the whole
    strip, or a label and a box) are looked at together: when they sit on a line that
    runs on past them (their page's top), and straight lines from that line up to the
    strip's top cut them into two or more cells, each framed at its top and holding a
    label, each cell is a tab; the lines between two tabs stop at the page's line (a
    table's header row has its column lines run on down). What was found inside the
    tabs gives way to them, and so does an empty box that goes on from the last tab
    along the page's line (the strip's rest, which read as a field)."""
    rows = _rows(found)
    if not rows:
        return found
    dropped: set[int] = set()
    tabs: list[Found] = []
    for row in rows:
        strip = _strip(grey, _union([found[i][1] for i in row]))
        if strip is None:
            continue
        cells, (top, base, last) = strip
        tabs += [("tab", cell, 0.65) for cell in cells]
        for i, (kind, box, _) in enumerate(found):
            if _covered(box, cells) or (
                kind in ("field", "button", "text") and _rest_of_strip(grey, box, last, top, base)
            ):
                dropped.add(i)
    if not tabs:
        return found
    return [f for i, f in enumerate(found) if i not in dropped] + tabs


def _rows(found: list[Found]) -> list[list[int]]:
    """Indices of the strip-high lines and boxes of `found`, in runs along one row whose
    neighbours overlap by half their height and stand less than their height apart."""
    seeds = sorted(
        (
            i
            for i, (kind, (_, _, _, h), _) in enumerate(found)
            if kind in _SEEDS and _STRIP_H[0] <= h <= _STRIP_H[1]
        ),
        key=lambda i: (found[i][1][0], found[i][1][1]),
    )
    runs: list[list[int]] = []
    for i in seeds:
        x, y, _, h = found[i][1]
        for run in runs:
            px, py, pw, ph = found[run[-1]][1]
            overlap = min(y + h, py + ph) - max(y, py)
            if overlap >= 0.5 * min(h, ph) and -2 <= x - (px + pw) <= max(h, ph):
                run.append(i)
                break
        else:
            runs.append([i])
    return runs


def _union(boxes: list[Box]) -> Box:
    x0 = min(b[0] for b in boxes)
    y0 = min(b[1] for b in boxes)
    x1 = max(b[0] + b[2] for b in boxes)
    y1 = max(b[1] + b[3] for b in boxes)
    return x0, y0, x1 - x0, y1 - y0


def _strip(grey: np.ndarray, box: Box) -> tuple[list[Box], tuple[int, int, int]] | None:
    """The tabs of the strip over `box` (a row's union), and the strip's top and base
    rows and the column where its last tab ends; None when `box` is no strip of framed
    labels."""
    x, y, w, h = box
    if w < 2 * h:
        return None
    height, width = grey.shape
    bx0, bx1 = max(x - h, 0), min(x + w + h, width)
    by0, by1 = max(y - 4, 0), min(y + h + 4, height)
    crop = grey[by0:by1, bx0:bx1].astype(np.int16)
    ux0, ux1 = x - bx0, x + w - bx0  # the union's columns in the crop
    # The base: a line across the row's lower half that runs on past it by its height
    # on one side (the page's top border). Looked for first, beside the row only: most
    # rows have none.
    runs_on = np.zeros(by1 - (y + h // 2), bool)
    for start, stop in ((ux1 + 2, ux1 + h), (max(ux0 - h, 0), max(ux0 - 2, 0))):
        if stop - start >= h // 2 and stop <= crop.shape[1]:
            side = _lines(crop[:, start:stop], axis=0)[y + h // 2 - by0 :]
            runs_on |= side.mean(axis=1) >= 0.9
    if not runs_on.any():
        return None
    base = y + h // 2 - by0 + int(np.argmax(runs_on))
    # a gradient's fill (Nimbus's tabs) is no line
    across, upright = _lines(crop, axis=0), _lines(crop, axis=1)
    # The top: the lowest line of the row's upper part across half its width.
    coverage = across[:, ux0:ux1].mean(axis=1)
    tops = [r for r in range(max(y - 2 - by0, 0), y + h // 3 - by0) if coverage[r] >= 0.5]
    if not tops:
        return None
    top = tops[-1]
    frame = base - top + 1
    if frame < _STRIP_H[0]:
        return None
    dividers = _dividers(upright[top : base + 1], room=h)
    bounds = [(0, 0), *dividers, (crop.shape[1], crop.shape[1])]
    cells: list[tuple[int, int, int, int]] = []  # a label's [start, end), its dividers
    rows: list[tuple[int, int]] = []  # and its [top, bottom) rows
    for k in range(len(bounds) - 1):
        start, end = bounds[k][1] + 1, bounds[k + 1][0]
        if end - start < h or not _framed_top(across, top, start, end):
            continue
        label = _label(crop[top + 2 : base - 1, start:end])
        if label is not None:
            first, last, high, low = label
            cells.append((start + first, start + last, k, k + 1))
            rows.append((top + 2 + high, top + 2 + low))
    tabs, rows = _adjacent(cells, rows)
    if len(tabs) < 2:
        return None
    below = upright[base + 2 : min(base + 2 + frame // 2, crop.shape[0])]
    for cell in tabs[:-1]:  # the lines between two tabs
        d0, d1 = bounds[cell[3]]
        if len(below) and below[:, d0 : d1 + 1].any(axis=1).mean() >= 0.5:
            return None  # a column line runs on below: a table's header
    bottom = across[max(base - 3, 0) : base + 2]
    open_ = sum(bottom[:, s:e].any(axis=0).mean() < 0.8 for s, e, _, _ in tabs)
    if open_ > 1:
        return None
    boxes: list[Box] = []
    middles = [(bounds[k][0] + bounds[k][1]) // 2 for k in range(len(bounds))]
    for n, ((start, end, k0, k1), (high, low)) in enumerate(zip(tabs, rows, strict=True)):
        # between two tabs, the middle of their line; at the strip's ends, the line
        # there when it is near (a tab's own side), else as far from the label as the
        # tab's other side is
        if n > 0:
            left = middles[k0]
        else:
            pad = middles[k1] - end
            near = k0 > 0 and start - bounds[k0][0] <= 2 * pad + 4
            left = bounds[k0][0] if near else max(start - pad, 0)
        if n < len(tabs) - 1:
            right = middles[k1]
        else:
            pad = start - middles[k0]
            near = k1 < len(bounds) - 1 and bounds[k1][1] - end <= 2 * pad + 4
            right = bounds[k1][1] if near else min(end + pad, crop.shape[1] - 1)
        # the label, padded by half the room its frame leaves it (a corner's slant
        # stays out of the label's crop)
        x0, x1 = start - max((start - left) // 2, 2), end + max((right - end) // 2, 2)
        y0, y1 = high - max((high - top) // 2, 2), low + max((base - low) // 2, 2)
        boxes.append((bx0 + x0, by0 + y0, x1 - x0, y1 - y0))
    return boxes, (by0 + top - 1, by0 + base, bx0 + right + 1)


def _lines(crop: np.ndarray, axis: int) -> np.ndarray:
    """The pixels of `crop` (int16) on thin lines across it (`axis` 0) or up it (1):
    darker, or lighter, by _LINE_INK or more than the pixels 1 or 2 px either side of
    them (a line's width each way); a gradient or a flat fill's edge is no line."""
    found = np.zeros(crop.shape, bool)
    for k in (1, 2):
        padded = np.pad(crop, [(k, k), (0, 0)] if axis == 0 else [(0, 0), (k, k)], "edge")
        if axis == 0:
            before, after = padded[: -2 * k], padded[2 * k :]
        else:
            before, after = padded[:, : -2 * k], padded[:, 2 * k :]
        one, other = crop - before, crop - after
        found |= ((one >= _LINE_INK) & (other >= _LINE_INK)) | (
            (one <= -_LINE_INK) & (other <= -_LINE_INK)
        )
    return found


def _dividers(ink: np.ndarray, room: int) -> list[tuple[int, int]]:
    """The [first, last] columns of each straight line that runs three quarters of the
    way from `ink`'s top to its bottom (a tab's side), gaps of a pixel bridged (where a
    focus ring's corner meets it, a side's pixel differs from one side only); lines
    with less than `room` between them are one (a 3-D border's light and dark lines, a
    tab's side and its focus ring's)."""
    closed = cv2.morphologyEx(ink.astype(np.uint8), cv2.MORPH_CLOSE, _GAP_KERNEL) > 0
    runs = np.zeros(ink.shape[1], np.int32)
    longest = np.zeros(ink.shape[1], np.int32)
    for row in closed:
        runs = np.where(row, runs + 1, 0)
        np.maximum(longest, runs, out=longest)
    columns = np.flatnonzero(longest >= 0.75 * ink.shape[0])
    if not len(columns):
        return []
    breaks = np.flatnonzero(np.diff(columns) > room)
    starts = np.concatenate([columns[:1], columns[breaks + 1]]).tolist()
    ends = np.concatenate([columns[breaks], columns[-1:]]).tolist()
    return list(zip(starts, ends, strict=True))


def _framed_top(ink: np.ndarray, top: int, start: int, end: int) -> bool:
    """Whether a line runs along the top of columns [start, end) (a tab's upper side)."""
    band = ink[max(top - 2, 0) : top + 4, start + 2 : end - 2]
    return band.size > 0 and band.any(axis=0).mean() >= 0.7


def _label(cell: np.ndarray) -> tuple[int, int, int, int] | None:
    """The [start, end) columns and [top, bottom) rows of the label in `cell` (grey, a
    cell between its sides), or None when it holds none: its marks (off the cell's
    median, so a gradient's fill is none), less those that touch the cell's sides (a
    slanted corner) or span most of it (a focus ring, an inner border), at least 6 px
    wide and 5 px high together."""
    if cell.size == 0:
        return None
    inner = (np.abs(cell - int(np.median(cell))) >= _MARK_INK).astype(np.uint8)
    _, labels, stats, _ = cv2.connectedComponentsWithStats(inner, connectivity=8)
    high, wide = inner.shape
    x, w, h = stats[:, cv2.CC_STAT_LEFT], stats[:, cv2.CC_STAT_WIDTH], stats[:, cv2.CC_STAT_HEIGHT]
    keep = (x > 0) & (x + w < wide) & (w < 0.8 * wide) & (h < 0.8 * high)
    keep[0] = False  # the background
    ink = keep[labels]
    rows, columns = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
    if not len(rows) or columns[-1] - columns[0] + 1 < 6 or rows[-1] - rows[0] + 1 < 5:
        return None
    return int(columns[0]), int(columns[-1]) + 1, int(rows[0]), int(rows[-1]) + 1


def _adjacent(
    cells: list[tuple[int, int, int, int]], rows: list[tuple[int, int]]
) -> tuple[list[tuple[int, int, int, int]], list[tuple[int, int]]]:
    """The longest run of `cells` each of which shares a divider with the next, and
    their `rows`."""
    best: tuple[int, int] = (0, 0)
    start = 0
    for i, cell in enumerate(cells):
        if i and cells[i - 1][3] != cell[2]:
            start = i
        if i + 1 - start > best[1] - best[0]:
            best = (start, i + 1)
    return cells[best[0] : best[1]], rows[best[0] : best[1]]


def _covered(box: Box, cells: list[Box]) -> bool:
    """Whether half or more of `box` lies in `cells` (side by side, not overlapping)."""
    x, y, w, h = box
    shared = 0
    for cx, cy, cw, ch in cells:
        iw = min(x + w, cx + cw) - max(x, cx)
        ih = min(y + h, cy + ch) - max(y, cy)
        shared += max(iw, 0) * max(ih, 0)
    return shared >= 0.5 * w * h


def _rest_of_strip(grey: np.ndarray, box: Box, last: int, top: int, base: int) -> bool:
    """Whether `box` is the empty rest of a tab strip: it starts where the last tab
    ends, spans the strip's rows and holds nothing."""
    x, y, w, h = box
    if abs(x - last) > 6 or y < top - 4 or y + h > base + 5 or h < 0.6 * (base - top):
        return False
    inner = grey[y + 3 : y + h - 3, x + 3 : x + w - 3].astype(np.int16)
    return inner.size > 0 and int(inner.max()) - int(inner.min()) < _LINE_INK


def stacked_arrows(grey: np.ndarray, found: list[Found]) -> list[Found]:
    """`found` with each spin box whose up and down arrows are stacked at its field's
    right end read as a field and two buttons beside it.

    A box of control height, at least 1.5 times as wide as high, whose left part is an
    entry's plain inside set off from around the box, and whose right end holds exactly
    one up arrow above one down arrow (small solid triangles, wider than high, mirror
    images of each other, one above the other); the arrows' column, as wide as they
    are centred in it, splits at the middle between them into the two buttons. An arrow
    column found as a box of its own (Nimbus's gradient buttons) takes what was found
    just left of it on its rows for its field, when that is an entry's plain inside.
    What was found inside the spin box gives way to the three."""
    spins: list[tuple[Box, int, int, Box]] = []
    for i, (kind, box, _) in enumerate(found):
        if kind in ("field", "dropdown", "text", "button"):
            split = _arrow_column(grey, box)
            if split is not None:
                spins.append((box, *split))
                continue
        if kind in ("button", "icon"):
            column = _column_beside(grey, found, i)
            if column is not None:
                spins.append(column)
    if not spins:
        return found
    result = [f for f in found if not any(_centre_in(f[1], box) for box, _, _, _ in spins)]
    for (x, y, w, h), left, middle, field in spins:
        result.append(("field", field, 0.8))
        result.append(("button", (left, y, x + w - left, middle - y), 0.6))
        result.append(("button", (left, middle, x + w - left, y + h - middle), 0.6))
    return result


def arrow_names(grey: np.ndarray, found: list[Found]) -> dict[Box, str]:
    """The names of the spin boxes' arrow buttons among `found`: '+' for the up one and
    '-' for the down one (the names the tree path gives a spin button's parts,
    fusion._spin_parts), by their boxes. Two buttons one on the other (the same columns
    within 2 px, the lower starting where the upper ends), each at most 30 px high and
    twice as wide as high, that hold one up arrow in the upper and one down arrow in the
    lower between them (_arrow_pair): the arrows stacked_arrows and _parts.spin_buttons
    part, or that were found apart."""
    buttons = sorted((box for kind, box, _ in found if kind == "button"), key=lambda b: b[1])
    names: dict[Box, str] = {}
    height, width = grey.shape
    for n, upper in enumerate(buttons):
        x, y, w, h = upper
        if not (4 <= h <= _ARROW_H and w <= 2 * h) or x < 0 or y < 0:
            continue
        for lower in buttons[n + 1 :]:
            lx, ly, lw, lh = lower
            if ly > y + h + 2:
                break
            if abs(lx - x) > 2 or abs(lw - w) > 2 or abs(ly - (y + h)) > 2 or lh > _ARROW_H:
                continue
            x0, x1 = min(x, lx), min(max(x + w, lx + lw), width)
            pair = _arrow_pair(grey[y : min(ly + lh, height), x0:x1])
            if pair is not None and pair[0][1] + pair[0][3] <= ly - y + 1 <= pair[1][1] + 1:
                names[upper], names[lower] = "+", "-"
                break
    return names


def _centre_in(box: Box, outer: Box) -> bool:
    x, y, w, h = box
    ox, oy, ow, oh = outer
    return ox <= x + w / 2 <= ox + ow and oy <= y + h / 2 <= oy + oh


def _arrow_column(grey: np.ndarray, box: Box) -> tuple[int, int, Box] | None:
    """Where `box`'s arrow column starts (a screen column), the row where its up and
    down buttons meet and the field's box (from its outline's top to its bottom, up to
    the arrows' column), or None when `box` is no spin box with stacked arrows."""
    x, y, w, h = box
    height, width = grey.shape
    if not (14 <= h <= _STRIP_H[1] and w >= 1.5 * h):
        return None
    if x < 3 or y < 3 or x + w + 3 > width or y + h + 3 > height:
        return None
    span = int(min(w / 2, 1.3 * h))
    pair = _arrow_pair(grey[y : y + h, x + w - span : x + w])
    if pair is None:
        return None
    (ux, uy, uw, uh), (dx, dy, _, _) = pair
    centre = x + w - span + ux + uw / 2
    left = round(centre - (x + w - centre))
    if left - x < h:
        return None  # no field left of the arrows
    # the field's inside: plain, like an entry's, and set off from around the box
    inside = float(np.median(grey[y + 3 : y + h - 3, x + 3 : left - 2]))
    ring = np.concatenate(
        [grey[y - 3, x:left], grey[y + h + 2, x:left], grey[y : y + h, x - 3]]
    ).astype(np.float64)
    if not (inside >= 190 or inside <= 80) or abs(inside - float(np.median(ring))) < 10:
        return None
    # the arrows' column starts at the strongest edge near there (its side's line)
    marks = x + w - span + min(ux, dx)
    rows = grey[y + 3 : y + h - 3, max(left - 4, x + 1) - 1 : marks].astype(np.int16)
    if rows.shape[1] >= 2:
        left = max(left - 4, x + 1) + int(np.argmax(np.abs(np.diff(rows, axis=1)).mean(axis=0)))
    middle = y + (uy + uh + dy) // 2
    return left, middle, _field_box(grey, (x, y, left + 1 - x, h), inside)


def _field_box(grey: np.ndarray, box: Box, inside: float) -> Box:
    """`box` cut to the rows of its outline's top and bottom lines (a focus ring or a
    highlight drawn around the spin box made it taller): the rows off the field's
    `inside` across most of its width nearest its middle."""
    x, y, w, h = box
    rows = np.abs(grey[y : y + h, x + 3 : x + w - 3].astype(np.float64) - inside) >= _LINE_INK
    lines = np.flatnonzero(rows.mean(axis=1) >= 0.8)
    above, below = lines[lines < h // 3], lines[lines >= h - h // 3]
    top = int(above[-1]) if len(above) else 0
    bottom = int(below[0]) + 1 if len(below) else h
    return x, y + top, w, bottom - top


def _arrow_pair(region: np.ndarray) -> tuple[Box, Box] | None:
    """The boxes (in `region`) of the one up arrow and the one down arrow stacked in
    it, or None: small solid triangles, wider than high, mirror images of each other,
    one above the other, off `region`'s median by _MARK_INK."""
    h = region.shape[0]
    ink = (np.abs(region.astype(np.int16) - int(np.median(region))) >= _MARK_INK).astype(np.uint8)
    count, labels, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    ups, downs = [], []
    for i in range(1, count):
        sx, sy, sw, sh = (int(v) for v in stats[i, :4])
        if not (3 <= sw <= 0.6 * h and 2 <= sh <= 0.4 * h and sw >= sh):
            continue
        direction = _triangle(labels[sy : sy + sh, sx : sx + sw] == i)
        if direction > 0:
            ups.append((sx, sy, sw, sh))
        elif direction < 0:
            downs.append((sx, sy, sw, sh))
    if len(ups) != 1 or len(downs) != 1:
        return None
    (ux, uy, uw, uh), (dx, dy, dw, _) = ups[0], downs[0]
    if dy < uy + uh or abs((2 * ux + uw) - (2 * dx + dw)) > 3 or abs(uw - dw) > 2:
        return None
    return ups[0], downs[0]


def _column_beside(
    grey: np.ndarray, found: list[Found], i: int
) -> tuple[Box, int, int, Box] | None:
    """`found[i]` as a spin box's arrow column found as a box of its own (Nimbus's),
    with what was found just left of it on its rows taken for the field: the spin box's
    box, where the column starts, where its buttons meet and the field's box; or None."""
    x, y, w, h = found[i][1]
    height, width = grey.shape
    if not (14 <= h <= _STRIP_H[1] and 0.5 * h <= w <= 1.3 * h) or x < 3 or y < 3:
        return None
    if x + w + 3 > width or y + h + 3 > height:
        return None
    pair = _arrow_pair(grey[y : y + h, x : x + w])
    if pair is None:
        return None
    (_, uy, _, uh), (_, dy, _, _) = pair
    pieces = [
        b
        for j, (_, b, _) in enumerate(found)
        if j != i
        and abs(b[0] + b[2] - x) <= 4
        and min(b[1] + b[3], y + h) - max(b[1], y) >= 0.6 * min(b[3], h)
    ]
    if not pieces:
        return None
    left = min(b[0] for b in pieces)
    top, bottom = min(b[1] for b in pieces), max(b[1] + b[3] for b in pieces)
    if x - left < h or left < 3 or bottom + 3 > height:
        return None
    inside = float(np.median(grey[top + 3 : bottom - 3, left + 3 : x - 2]))
    ring = np.concatenate(
        [grey[top - 3, left:x], grey[bottom + 2, left:x], grey[top:bottom, left - 3]]
    ).astype(np.float64)
    if not (inside >= 190 or inside <= 80) or abs(inside - float(np.median(ring))) < 10:
        return None
    spin = (left, min(top, y), x + w - left, max(bottom, y + h) - min(top, y))
    return spin, x, y + (uy + uh + dy) // 2, (left, top, x + 1 - left, bottom - top)


def _triangle(mark: np.ndarray) -> int:
    """1 for an up arrow (a solid mark whose rows widen downwards, the same mirrored
    left to right), -1 for a down arrow, 0 for anything else."""
    widths = mark.sum(axis=1)
    first = np.argmax(mark, axis=1)
    spans = mark.shape[1] - np.argmax(mark[:, ::-1], axis=1) - first
    if (widths != spans).any() or (widths == 0).any():
        return 0  # a row with a gap: a letter, not a solid triangle
    if np.count_nonzero(mark != mark[:, ::-1]) > 0.15 * mark.size:
        return 0
    steps = np.diff(widths)
    if (steps >= 0).all() and widths[-1] >= widths[0] + 2:
        return 1
    if (steps <= 0).all() and widths[0] >= widths[-1] + 2:
        return -1
    return 0
