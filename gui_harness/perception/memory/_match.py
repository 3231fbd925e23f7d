"""Multi-scale template matching behind ComponentMemory (private to perception).

check() decides which remembered crop, if any, each detected box shows; search() looks
for crops anywhere on a screenshot. Both screen candidates cheaply at low resolution,
then confirm with normalised cross-correlation at full resolution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from gui_harness.perception._pixels import clip_box

__all__ = ["SCALES", "Template", "check", "search"]

SCALES = (0.8, 0.9, 1.0, 1.1, 1.25)
"""Screen scales, relative to when a crop was taken, that matching tries."""

_COARSE = 0.5  # search() first runs on the screenshot at half size
_COARSE_SLACK = 0.15  # a coarse score this far under the threshold is still confirmed
_SMALL = 48  # px; crops with a side under this get their scale checked more widely
_TINY = 16  # px; crops with a side under this are searched at full size
_THUMB = (24, 12)  # (w, h) of the normalised thumbnails that screen boxes in check()
_THUMB_SLACK = 0.35  # a box a pixel off gives a much worse thumbnail score than crop score
_TRIES = 3  # templates confirmed per box in check(), best thumbnails first
_FLAT = 2.0  # grey std under which a crop has nothing to match on

Box = tuple[int, int, int, int]


@dataclass(frozen=True, eq=False)
class Template:
    """A remembered crop ready for matching.

    `pixels` is the grey crop, which includes a few pixels of context around the
    component; `offset` is the component's top-left inside it and `size` its (w, h).
    """

    key: str
    pixels: np.ndarray
    offset: tuple[int, int]
    size: tuple[int, int]
    thumb: np.ndarray

    @classmethod
    def of(
        cls, key: str, pixels: np.ndarray, offset: tuple[int, int], size: tuple[int, int]
    ) -> Template | None:
        """A template of a grey crop, or None when the crop is too flat to match on."""
        if float(pixels.std()) < _FLAT:
            return None
        x, y = offset
        part = pixels[y : y + size[1], x : x + size[0]]
        return cls(key, pixels, offset, size, _thumbnail(part))


def check(
    grey: np.ndarray, boxes: Sequence[Box], templates: Sequence[Template], threshold: float
) -> list[tuple[int, str, float]]:
    """(box position, template key, score) for each box that one template matches.

    A template fits a box when their sizes differ by a scale in SCALES (± 10 %); the
    fitting templates whose thumbnails correlate best are confirmed at full size.
    """
    if not templates or not boxes:
        return []
    box_array = np.array(boxes, np.float64).reshape(-1, 4)
    sizes = np.array([t.size for t in templates], np.float64)
    scale_x = box_array[None, :, 2] / sizes[:, None, 0]
    scale_y = box_array[None, :, 3] / sizes[:, None, 1]
    low, high = SCALES[0] * 0.9, SCALES[-1] * 1.1
    fits = (
        (scale_x >= low)
        & (scale_x <= high)
        & (scale_y >= low)
        & (scale_y <= high)
        & (np.maximum(scale_x, scale_y) <= 1.2 * np.minimum(scale_x, scale_y))
    )
    tried = np.flatnonzero(fits.any(axis=0))
    if not len(tried):
        return []
    thumbs = np.stack([_box_thumbnail(grey, boxes[i]) for i in tried.tolist()])
    scores = np.stack([t.thumb for t in templates]) @ thumbs.T
    scores[~fits[:, tried]] = -1.0
    floor = threshold - _THUMB_SLACK
    hits = []
    for column, i in enumerate(tried.tolist()):
        for row in np.argsort(-scores[:, column])[:_TRIES].tolist():
            if scores[row, column] < floor:
                break
            template = templates[row]
            height, width = template.pixels.shape
            scale = float(np.sqrt(scale_x[row, i] * scale_y[row, i]))
            x, y, w, h = boxes[i]
            left, top = template.offset
            size_w, size_h = template.size
            # Centre of the whole crop, context included, as it would sit around the box.
            centre = (
                x + w / 2 + (width / 2 - left - size_w / 2) * scale,
                y + h / 2 + (height / 2 - top - size_h / 2) * scale,
            )
            score, _ = _confirm(
                grey, template.pixels, centre, _around(scale, neighbours=False), enough=threshold
            )
            if score >= threshold:
                hits.append((i, template.key, score))
                break
    return hits


def search(
    grey: np.ndarray, templates: Sequence[Template], threshold: float
) -> list[tuple[Box, str, float]]:
    """(component box, template key, score) of the best place each template matches
    anywhere on `grey`, at any scale in SCALES; templates not found are left out."""
    views: dict[float, np.ndarray] = {}
    hits = []
    floor = threshold - _COARSE_SLACK
    for template in templates:
        height, width = template.pixels.shape
        # Tiny crops lose their detail at half size: search those at full size.
        factor = _COARSE if min(width, height) >= _TINY else 1.0
        if factor not in views:
            small = cv2.resize(grey, None, fx=factor, fy=factor, interpolation=cv2.INTER_AREA)
            views[factor] = _soften(small)
        view = views[factor]
        maps = []
        for scale in SCALES:
            size = (round(width * scale * factor), round(height * scale * factor))
            if min(size) < 4 or size[0] > view.shape[1] or size[1] > view.shape[0]:
                continue
            shrunk = _soften(cv2.resize(template.pixels, size, interpolation=cv2.INTER_AREA))
            result = _correlate(view, shrunk)
            maps.append((float(result.max()), result, scale))
        top = max((score for score, _, _ in maps), default=0.0)
        best: tuple[float, Box, float] = (0.0, (0, 0, 0, 0), 1.0)
        # At half size neighbouring scales score alike, and a small crop's best scale is
        # often one step off: confirm every close one, small crops at the steps around too.
        for score, result, scale in maps:
            if score < max(floor, top - 0.05):
                continue
            scales = _around(scale, neighbours=min(width, height) < _SMALL)
            for x, y in _peaks(result, floor, (width * scale * factor, height * scale * factor)):
                centre = (x / factor + width * scale / 2, y / factor + height * scale / 2)
                confirmed, box = _confirm(grey, template.pixels, centre, scales, enough=0.99)
                if confirmed > best[0]:
                    best = (confirmed, box, box[2] / width)
        score, (x, y, _, _), scale = best
        if score >= threshold:
            component = (
                round(x + template.offset[0] * scale),
                round(y + template.offset[1] * scale),
                round(template.size[0] * scale),
                round(template.size[1] * scale),
            )
            hits.append((component, template.key, score))
    return hits


def _confirm(
    grey: np.ndarray,
    template: np.ndarray,
    centre: tuple[float, float],
    scales: Sequence[float],
    *,
    enough: float,
) -> tuple[float, Box]:
    """Best full-size match (score, box) of `template` centred near `centre`, trying
    `scales` in order until the score reaches `enough`."""
    height, width = template.shape
    biggest = max(scales)
    w, h = width * biggest, height * biggest
    margin_x, margin_y = 6 + w / 50, 4 + h / 16
    region = clip_box(
        (
            round(centre[0] - w / 2 - margin_x),
            round(centre[1] - h / 2 - margin_y),
            round(w + 2 * margin_x),
            round(h + 2 * margin_y),
        ),
        (grey.shape[1], grey.shape[0]),
    )
    best: tuple[float, Box] = (0.0, (0, 0, 0, 0))
    if region is None:
        return best
    rx, ry, rw, rh = region
    for scale in scales:
        size = (max(1, round(width * scale)), max(1, round(height * scale)))
        if size[0] > rw or size[1] > rh:
            continue
        interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        result = _correlate(
            grey[ry : ry + rh, rx : rx + rw],
            cv2.resize(template, size, interpolation=interpolation),
        )
        _, score, _, (lx, ly) = cv2.minMaxLoc(result)
        if score > best[0]:
            best = (float(score), (rx + lx, ry + ly, size[0], size[1]))
        if best[0] >= enough:
            break
    return best


def _around(scale: float, *, neighbours: bool) -> list[float]:
    """`scale`, then ± 5 %, then (with `neighbours`) the adjacent SCALES and their ± 5 %."""
    tried = [scale]
    if neighbours:
        i = min(range(len(SCALES)), key=lambda k: abs(SCALES[k] - scale))
        tried += [SCALES[k] for k in (i - 1, i + 1) if 0 <= k < len(SCALES)]
    steps = [s * f for s in tried for f in (1.0, 0.95, 1.05)]
    low, high = SCALES[0] * 0.95, SCALES[-1] * 1.05
    return list(dict.fromkeys(round(min(max(s, low), high), 4) for s in steps))


def _peaks(
    result: np.ndarray, floor: float, size: tuple[float, float], count: int = 3
) -> list[tuple[int, int]]:
    """Up to `count` best places in a correlation map, half a template (`size`, in map
    pixels) apart at least."""
    result = result.copy()
    half_w, half_h = max(1, round(size[0] / 2)), max(1, round(size[1] / 2))
    peaks = []
    for _ in range(count):
        _, score, _, (x, y) = cv2.minMaxLoc(result)
        if score < floor:
            break
        peaks.append((x, y))
        result[max(0, y - half_h) : y + half_h + 1, max(0, x - half_w) : x + half_w + 1] = -1
    return peaks


def _correlate(image: np.ndarray, template: np.ndarray) -> np.ndarray:
    result = cv2.matchTemplate(image, template, cv2.TM_CCOEFF_NORMED)
    cv2.patchNaNs(result, 0.0)  # a flat window has no variance to normalise by
    return result


def _soften(image: np.ndarray) -> np.ndarray:
    """Blur a downscaled image a little, so a 1 px line scores alike whatever its phase."""
    return cv2.GaussianBlur(image, (3, 3), 0)


def _thumbnail(patch: np.ndarray) -> np.ndarray:
    thumb = _soften(cv2.resize(patch, _THUMB, interpolation=cv2.INTER_AREA))
    vector = thumb.astype(np.float32).ravel()
    vector -= vector.mean()
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 1e-3 else np.zeros_like(vector)


def _box_thumbnail(grey: np.ndarray, box: Box) -> np.ndarray:
    clipped = clip_box(box, (grey.shape[1], grey.shape[0]))
    if clipped is None:
        return np.zeros(_THUMB[0] * _THUMB[1], np.float32)
    x, y, w, h = clipped
    return _thumbnail(grey[y : y + h, x : x + w])
