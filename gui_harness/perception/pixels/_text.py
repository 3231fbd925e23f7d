"""Text lines and links on screenshots, for detect.py: the edges outside controls joined
into lines, paragraphs split into lines, large text made whole again where its round
letters were taken for controls, link-coloured runs cut out as links.
Private to perception; start at text_lines().
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import cv2
import numpy as np

from gui_harness.perception._pixels import ImageLike
from gui_harness.perception.pixels._blobs import boxes_of, scratch

__all__ = ["colour_of", "large_text", "links", "list_rows", "text_lines"]

_Found = tuple[Any, tuple[int, int, int, int], float]  # (kind, box, confidence)
_TEXT_KERNEL = np.ones((1, 7), np.uint8)  # closes letter and word gaps, never line gaps
_LINE_KERNELS = (np.ones((1, 48), np.uint8), np.ones((32, 1), np.uint8))
_TEXT_H = (6, 64)
_LINK_BLUE = 50  # blue above red and green: link-blue (0, 0, 238), visited (85, 26, 139)
_BLUISH = 20  # the anti-aliased edge of a link-blue glyph on white
_SPLIT_H = 18  # px; a text blob this high may be two touching lines
_LARGE_H, _LARGE_CAP = 16, 15  # px; a line this high, capitals this tall: large text,
# whose letters are set far enough apart to part as blobs
_WORD_SPACE = 0.8  # capitals: a word space and the letters' side bearings, at most
_GLYPH_KINDS = frozenset({"checkbox", "radio", "icon", "button", "text"})


def text_lines(edges: np.ndarray, controls: list[_Found]) -> list[_Found]:
    """Lines of text and icons: the edges outside controls, joined horizontally."""
    free = scratch.get("free", edges.shape, np.uint8)
    np.copyto(free, edges)
    for _, (cx, cy, cw, ch), _ in controls:
        free[max(0, cy - 2) : cy + ch + 2, max(0, cx - 2) : cx + cw + 2] = 0
    # Long straight edges are borders, not glyphs: text that touches a list's or a
    # panel's border would otherwise join it into one blob too tall to be a line.
    rows = cv2.morphologyEx(free, cv2.MORPH_OPEN, _LINE_KERNELS[0])
    columns = cv2.morphologyEx(free, cv2.MORPH_OPEN, _LINE_KERNELS[1])
    free[(rows > 0) | (columns > 0)] = 0
    joined = cv2.dilate(free, _TEXT_KERNEL, dst=scratch.get("joined", edges.shape, np.uint8))
    boxes = boxes_of(joined)[0]
    if not len(boxes):
        return []
    boxes[:, 0] += 3  # undo the kernel's growth: 3 px each side
    boxes[:, 2] -= 6
    boxes = _split_lines(free, boxes[boxes[:, 3] >= _TEXT_H[0]])
    tall = boxes[:, 3]
    boxes = boxes[(tall >= _TEXT_H[0]) & (tall <= _TEXT_H[1])]
    boxes = _join_words(boxes)
    keep = (boxes[:, 2] >= 4) & (boxes[:, 2] * boxes[:, 3] >= 40)
    found: list[_Found] = []
    for bx, by, bw, bh in boxes[keep].tolist():
        if bh >= 16 and 0.6 <= bw / bh <= 1.6:
            found.append(("icon", (bx, by, bw, bh), 0.5))
        else:
            found.append(("text", (bx, by, bw, bh), 0.6))
    return found


def large_text(
    edges: np.ndarray, controls: list[_Found], lines: list[_Found]
) -> tuple[list[_Found], list[_Found]]:
    """`controls` and `lines` with each line of large text whole: a slide's title, a
    drawing's caption. Its letters stand apart, so a round one ("Q", "o", "a") is an
    outline of a check box's size and an "u" a square icon; a descender ("Q"'s tail,
    "y", "p") a blob of its own. A text line _LARGE_H px high or more, at least as wide,
    with capitals _LARGE_CAP px high or more, takes in, repeatedly: the pieces beside it
    that are letters, under a third of a capital's height away (a toolbar's icons stand
    further apart), no higher than its capitals' tops and no lower than a tail below its
    baseline, 0.45 to 1.3 capitals high and no wider than 1.5; text as high a word space
    away; the descenders under it and letters' tips cut off above it. A check box
    reaches above its caption's capitals and below its baseline: it never joins it."""
    found = {}
    for i, (kind, (_, _, w, h), _) in enumerate(lines):
        if kind == "text" and h >= _LARGE_H and w >= h:
            top, baseline, letters = _metrics(edges, lines[i][1], controls)
            if baseline - top + 1 >= _LARGE_CAP and letters >= 3:
                found[i] = (top, baseline)
    if not found:
        return controls, lines
    pieces = [(kind, box, True) for kind, box, _ in controls] + [
        (kind, box, False) for kind, box, _ in lines
    ]
    used = np.zeros(len(pieces), bool)
    joined: list[list[int]] = []
    # the line with the tallest letters first: a word of small letters ("pen") alone
    # would put the line's top at their tops, below the capital ("O") before it
    for seed, (top, baseline) in sorted(found.items(), key=lambda f: f[1][0] - f[1][1]):
        at = len(controls) + seed
        if used[at]:
            continue
        used[at] = True
        x, y, w, h = lines[seed][1]
        x0, y0, x1, y1 = x, y, x + w, y + h
        cap = baseline - top + 1
        grown = True
        while grown:
            grown = False
            for i, (kind, (px, py, pw, ph), control) in enumerate(pieces):
                if used[i] or kind not in _GLYPH_KINDS:
                    continue
                gap = max(px - x1, x0 - (px + pw))
                if not control:  # a word, as high (a blob as wide as high is an "icon")
                    beside = gap <= max(3, _WORD_SPACE * cap) and 0.6 * cap <= ph <= 1.3 * (y1 - y0)
                    beside &= py >= y0 - cap // 4 and py + ph <= y1 + 0.4 * cap
                else:  # a letter; a word space away, the first of a word of such letters
                    beside = _letter(pieces[i][1], top, baseline) and (
                        gap <= max(3, 0.3 * cap)
                        or (
                            gap <= _WORD_SPACE * cap
                            and any(
                                _letter(other, top, baseline)
                                and 0 < _gap(other, pieces[i][1]) <= max(3, 0.3 * cap)
                                and (other[0] > px) == (px > x0)  # on its far side
                                for j, (other_kind, other, _) in enumerate(pieces)
                                if not used[j] and j != i and other_kind in _GLYPH_KINDS
                            )
                        )
                    )
                # a descender's tail, or the tips of letters cut off above the line
                under = kind == "text" and x0 - 2 <= px and px + pw <= x1 + 2
                under &= baseline - 0.3 * cap <= py <= baseline + 3 and ph <= 0.6 * cap
                over = kind == "text" and x0 - 2 <= px and px + pw <= x1 + 2
                over &= top - 0.4 * cap <= py and py + ph <= top + 0.4 * cap and ph <= 0.4 * cap
                if beside or under or over:
                    used[i] = grown = True
                    if i - len(controls) in found:  # a word whose letters reach higher
                        top = min(top, found[i - len(controls)][0])
                        cap = baseline - top + 1
                    x0, y0 = min(x0, px), min(y0, py)
                    x1, y1 = max(x1, px + pw), max(y1, py + ph)
        if (x0, y0, x1, y1) == (x, y, x + w, y + h):
            joined.append([x, y, w, h])
        else:
            joined.append(_inked(edges, (x0, y0, x1, y1), cap // 4))
    # two halves of a line that met at a letter taken for a control: one line
    whole = [("text", (x, y, w, h), 0.6) for x, y, w, h in _join_words(np.array(joined)).tolist()]
    kept_controls = [found for i, found in enumerate(controls) if not used[i]]
    kept_lines = [found for i, found in enumerate(lines) if not used[len(controls) + i]]
    return kept_controls, kept_lines + whole


def _letter(box: tuple[int, int, int, int], top: int, baseline: int) -> bool:
    """Whether `box` could be a letter of a line with capitals from `top` to `baseline`:
    0.45 to 1.3 capitals high, at most 1.5 wide, no higher than the capitals' tops and
    no lower than a tail below the baseline."""
    _, y, w, h = box
    cap = baseline - top + 1
    return (
        0.45 * cap <= h <= 1.3 * cap
        and w <= 1.5 * cap
        and y >= top - max(1, cap // 10)
        and y + h <= baseline + 0.4 * cap
    )


def _gap(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    """The horizontal gap between two boxes (negative where they overlap)."""
    return max(a[0] - (b[0] + b[2]), b[0] - (a[0] + a[2]))


def _inked(edges: np.ndarray, box: tuple[int, int, int, int], margin: int) -> list[int]:
    """[x, y, w, h] of the ink of (x0, y0, x1, y1) and `margin` px either side of it: a
    letter taken for a control had the box of its inside, not of its ink."""
    x0, y0, x1, y1 = box
    left = max(x0 - margin, 0)
    ink = edges[y0:y1, left : x1 + margin]
    columns = np.flatnonzero(ink.any(axis=0))
    if not len(columns):
        return [x0, y0, x1 - x0, y1 - y0]
    return [left + int(columns[0]), y0, int(columns[-1] - columns[0]) + 1, y1 - y0]


def _metrics(
    edges: np.ndarray, box: tuple[int, int, int, int], controls: list[_Found]
) -> tuple[int, int, int]:
    """The top of a text line's capitals and its baseline (rows of the screen): the top
    of its tallest letters and where most letters end (descenders are few); and how many
    letters end there (a toolbar's icons end anywhere). What `controls` cover at its
    ends is not text (a check box whose outline joined its caption's line)."""
    x, y, w, h = box
    ink = edges[y : y + h, x : x + w].copy()
    for _, (cx, cy, cw, ch), _ in controls:
        if x + 4 < cx and cx + cw < x + w - 4:
            continue  # inside the line, not at an end: a letter taken for a control
        ink[
            max(cy - y - 3, 0) : max(cy + ch - y + 3, 0),
            max(cx - x - 3, 0) : max(cx + cw - x + 3, 0),
        ] = 0
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink)
    tops, heights = stats[1:, cv2.CC_STAT_TOP], stats[1:, cv2.CC_STAT_HEIGHT]
    letters = heights >= 3
    if count <= 1 or not letters.any():
        return y, y, 0
    # the highest top two letters share: one letter may touch a stray mark (the line
    # above's descender) and reach higher
    tall = heights >= 0.3 * heights.max()
    shared = [
        t for t in sorted(tops[tall].tolist()) if np.count_nonzero(np.abs(tops[tall] - t) <= 2) >= 2
    ]
    top = int(shared[0]) if shared else int(tops[tall].min())
    bottoms = tops + heights
    baseline = int(np.median(bottoms[letters])) - 1
    on_baseline = int(np.count_nonzero(letters & (np.abs(bottoms - 1 - baseline) <= 1)))
    return y + top, y + max(baseline, top), on_baseline


def list_rows(texts: list[_Found], panels: list[tuple[int, int, int, int]]) -> list[_Found]:
    """Lines of a list become its rows (kind button, as an accessibility tree reports
    list and menu items): the lines of a panel that start at one x, mostly stop short
    of its right side and follow at a regular pitch looser than a paragraph's, each widened
    to the panel's inside and to half the pitch above and below."""
    out = list(texts)
    for px, py, pw, ph in panels:
        members = sorted(
            (
                i
                for i, (kind, (x, y, w, h), _) in enumerate(out)
                if kind == "text" and px <= x and py <= y and x + w <= px + pw and y + h <= py + ph
            ),
            key=lambda i: out[i][1][1],
        )
        if len(members) < 2:
            continue
        boxes = np.array([out[i][1] for i in members])
        centres = boxes[:, 1] + boxes[:, 3] / 2
        pitches = np.diff(centres)
        # a paragraph's lines but its last fill the width; most of a list's stop short
        short = np.mean(boxes[:, 0] + boxes[:, 2] <= px + 0.9 * pw) >= 0.5
        aligned = np.ptp(boxes[:, 0]) <= 3
        regular = np.ptp(pitches) <= 3 and pitches.min() >= 1.4 * np.median(boxes[:, 3])
        if not (short and aligned and regular):
            continue
        pitch = float(np.median(pitches))
        for i, centre in zip(members, centres.tolist(), strict=True):
            top = max(py + 1, round(centre - pitch / 2))
            bottom = min(py + ph - 1, round(centre + pitch / 2))
            out[i] = ("button", (px + 1, top, pw - 2, bottom - top), 0.5)
    return out


def colour_of(image: ImageLike) -> np.ndarray | None:
    """`image` as an RGB array when it has colour, else None."""
    if isinstance(image, np.ndarray):
        return image[:, :, :3] if image.ndim == 3 else None
    if getattr(image, "mode", "L") in ("RGB", "RGBA"):
        return np.asarray(image)[:, :, :3]
    return None


def links(rgb: np.ndarray, texts: list[_Found]) -> list[_Found]:
    """Runs of link-blue (or visited-purple) glyphs inside text lines become links; the
    rest of such a line stays text, cut at the links."""
    out: list[_Found] = []
    for kind, (x, y, w, h), confidence in texts:
        crop = rgb[y : y + h, x : x + w].astype(np.int16)
        blue = crop[:, :, 2] - np.maximum(crop[:, :, 0], crop[:, :, 1]) >= _LINK_BLUE
        if kind != "text" or np.count_nonzero(blue) < 3 or blue.mean() > 0.45:
            out.append((kind, (x, y, w, h), confidence))
            continue
        # Glyphs are 3 px high or more; a flat run is an underline, maybe the line above's.
        # A blue mark nearly the line's height and over twice as wide is a frame (a
        # selected tab's outline), not a glyph: letters stand apart, an underline is low.
        # So is one over twice as wide at the line's very top (the top of a selected
        # tab's frame, with its slanted corner): an underline is at the foot.
        _, labels, stats, _ = cv2.connectedComponentsWithStats(blue.view(np.uint8))
        high, wide = stats[:, cv2.CC_STAT_HEIGHT], stats[:, cv2.CC_STAT_WIDTH]
        frame = (high >= 0.7 * h) & (wide > 2 * h)
        frame |= (wide > 2 * h) & (stats[:, cv2.CC_STAT_TOP] <= 1) & (high < 0.5 * h)
        glyphs = ((high >= 3) & ~frame)[labels] & blue
        # A lighter blue keeps only its stems above the threshold; its paler edges, still
        # bluish and in the glyphs' rows, close the gaps between the letters of a word.
        rows = glyphs.any(axis=1)
        bluish = crop[:, :, 2] - np.maximum(crop[:, :, 0], crop[:, :, 1]) >= _BLUISH
        glyphs |= bluish & rows[:, None] & (glyphs.mean() < 0.45)
        columns = np.flatnonzero(glyphs.any(axis=0))
        if len(columns) < 3:
            out.append((kind, (x, y, w, h), confidence))
            continue
        # Letters of a word are 1-2 px apart, words a space (about a third of the height);
        # under an underlined link the underline runs on through its spaces, so where it
        # stops two links meet, however narrow the space.
        # The underline: the fullest blue row at the glyphs' foot, maybe below the line.
        foot = y + int(np.flatnonzero(glyphs.any(axis=1))[-1])
        below = rgb[max(foot - 2, 0) : foot + 4, x : x + w].astype(np.int16)
        band = below[:, :, 2] - np.maximum(below[:, :, 0], below[:, :, 1]) >= _LINK_BLUE
        under_row = int(np.argmax(band.sum(axis=1)))
        underline = band[under_row]
        # a dashed or dotted underline below the glyphs (an editable value's, an
        # abbreviation's) is one line: its gaps cut no link (flat-bottomed digits' foot,
        # '12', is no underline; solid underlines stay as they are: two links side by
        # side are two)
        lower = rgb[foot + 1 : foot + 7, x : x + w].astype(np.int16)
        lower_band = lower[:, :, 2] - np.maximum(lower[:, :, 0], lower[:, :, 1]) >= _LINK_BLUE
        for row, line in enumerate(lower_band):
            dashed = _closed(line, 4)
            if dashed[columns[0] : columns[-1] + 1].mean() >= 0.8 and _dashes(line):
                under_row, underline = foot + 1 + row - max(foot - 2, 0), dashed
                break
        # A link starts at its line's top and reaches down to its underline.
        bottom = max(foot, max(foot - 2, 0) + under_row if underline.any() else 0) + 1
        gaps = np.diff(columns)
        underlined = underline[columns[0] : columns[-1] + 1].mean() >= 0.6
        # (at the gap's middle: the underline skips a pixel or two around descenders)
        cut = ~underline[(columns[:-1] + columns[1:]) // 2]
        # Without an underline a phrase is one link up to a gap wider than a word space
        # (links side by side are set apart by more: padding, a separator).
        space = max(3, h // 4) if underlined else max(3, int(0.8 * h))
        breaks = np.flatnonzero(
            (gaps > space) & (cut | ~underlined) | ((gaps >= 3) & cut & underlined)
        )
        starts = np.concatenate([[columns[0]], columns[breaks + 1]])
        ends = np.concatenate([columns[breaks], [columns[-1]]]) + 1
        left = 0
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            rows = np.flatnonzero(glyphs[:, start:end].any(axis=1))
            if start - left >= 4:
                out.append(("text", (x + left, y, start - left - 2, h), confidence))
            out.append(
                (
                    "link",
                    (x + start, y, end - start, max(y + int(rows[-1]) + 1, bottom) - y),
                    0.6,
                )
            )
            left = end + 2
        if w - left >= 4:
            out.append(("text", (x + left, y, w - left, h), confidence))
    return out


def _dashes(row: np.ndarray) -> bool:
    """Whether `row` (booleans) is a dashed or dotted line: three runs or more, most of
    them 4 px long at most."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], row.astype(np.int8), [0]])))
    lengths = edges[1::2] - edges[::2]
    return len(lengths) >= 3 and float(np.median(lengths)) <= 4


def _closed(row: np.ndarray, gap: int) -> np.ndarray:
    """`row` (booleans) with its runs of False up to `gap` long between two True ones
    made True."""
    closed: np.ndarray = cv2.morphologyEx(
        row.astype(np.uint8)[None, :], cv2.MORPH_CLOSE, np.ones((1, gap + 1), np.uint8)
    )[0].astype(bool)
    return closed


def _split_lines(free: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    """Blobs over one line high cut where their rows of ink thin out, each part cut to
    its own ink: the lines of a paragraph or a tight list touch where a descender meets
    the next line's capitals."""
    out: list[list[int]] = []
    for x, y, w, h in boxes.tolist():
        if h < _SPLIT_H:
            out.append([x, y, w, h])
            continue
        ink = free[y : y + h, x : x + w]
        profile = np.count_nonzero(ink, axis=1).astype(float)
        floor = 0.25 * float(np.median(profile[profile > 0])) if profile.any() else 0.0
        cuts = [0]
        for row in range(5, h - 5):
            window = profile[row - 3 : row + 4]
            if profile[row] <= floor and profile[row] == window.min() and row - cuts[-1] >= 6:
                cuts.append(row)
        cuts.append(h)
        for top, bottom in pairwise(cuts):
            rows = np.flatnonzero(profile[top:bottom])
            columns = np.flatnonzero(ink[top:bottom].any(axis=0))
            if len(rows) and len(columns):
                out.append(
                    [
                        x + int(columns[0]),
                        y + top + int(rows[0]),
                        int(columns[-1] - columns[0]) + 1,
                        int(rows[-1] - rows[0]) + 1,
                    ]
                )
    return np.array(out, np.int64).reshape(-1, 4)


def _join_words(boxes: np.ndarray) -> np.ndarray:
    """Join blobs on one line whose gap is under about half their height: the word gaps
    of large text, which the fixed dilation kernel leaves open."""
    lines: list[list[int]] = []  # x0, y0, x1, y1 of each line so far
    open_lines: list[list[int]] = []
    for x, y, w, h in boxes[np.argsort(boxes[:, 0], kind="stable")].tolist():
        x1, y1 = x + w, y + h
        open_lines = [line for line in open_lines if x - line[2] <= 40]
        for line in open_lines:
            line_h = line[3] - line[1]
            overlap = min(y1, line[3]) - max(y, line[1])
            gap = x - line[2]
            similar = overlap >= 0.6 * min(h, line_h) and max(h, line_h) <= 2 * min(h, line_h)
            if similar and -2 <= gap <= max(4, 0.6 * max(h, line_h)):
                line[0], line[1] = min(line[0], x), min(line[1], y)
                line[2], line[3] = max(line[2], x1), max(line[3], y1)
                break
        else:
            line = [x, y, x1, y1]
            lines.append(line)
            open_lines.append(line)
    joined = np.array(lines, np.int64).reshape(-1, 4)
    joined[:, 2:] -= joined[:, :2]
    return joined
