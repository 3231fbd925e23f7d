"""Optional OCR through the `tesseract` program: read_text() and label_with_ocr().

Owns finding tesseract, preparing crops for it, running it (one line per call, in a
few threads) and caching its answers. Without tesseract nothing fails: ocr_available()
is False, read_text() returns "" and labels stay None.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import cv2
import numpy as np

from gui_harness.perception._pixels import ImageLike, clip_box, grey_array
from gui_harness.perception.component import Component

__all__ = ["label_with_ocr", "name_toggles", "ocr_available", "read_text"]

logger = logging.getLogger(__name__)

_LINE_HEIGHT = 48  # px; tesseract reads best with capitals about 30 px tall
_PAD = 12
_WORD = re.compile(r"\w")
_CACHE_SIZE = 4096
_cache: OrderedDict[bytes, str] = OrderedDict()
_cache_lock = threading.Lock()
_failed = threading.Event()


def ocr_available() -> bool:
    """Whether the tesseract program is on PATH."""
    return shutil.which("tesseract") is not None


def read_text(image_crop: ImageLike, *, timeout: float = 5.0, language: str = "eng") -> str:
    """The text on a crop holding one line (tesseract ``--psm 7``), whitespace collapsed.

    Returns "" when tesseract is missing, fails, exceeds `timeout` seconds or finds
    nothing readable. Answers are cached by the crop's pixels.
    """
    executable = shutil.which("tesseract")
    if executable is None:
        return ""
    prepared = _prepare(grey_array(image_crop))
    if prepared is None:
        return ""
    key = hashlib.blake2b(
        prepared.tobytes() + repr((prepared.shape, language)).encode(), digest_size=16
    ).digest()
    with _cache_lock:
        if key in _cache:
            _cache.move_to_end(key)
            return _cache[key]
    ok, png = cv2.imencode(".png", prepared)
    if not ok:
        return ""
    # One thread per tesseract: we already run several side by side.
    env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
    command = [executable, "stdin", "stdout", "--psm", "7", "-l", language]
    try:
        done = subprocess.run(
            command, input=png.tobytes(), capture_output=True, timeout=timeout, env=env
        )
    except (subprocess.TimeoutExpired, OSError) as exc:
        logger.debug("tesseract did not read a %s crop: %s", prepared.shape, exc)
        return ""
    if done.returncode != 0:
        # A broken install (say, no "eng" data) fails every crop: say so once, loudly.
        level = logging.DEBUG if _failed.is_set() else logging.WARNING
        _failed.set()
        logger.log(level, "tesseract exited %s: %s", done.returncode, done.stderr[-300:])
        return ""
    words = done.stdout.decode("utf-8", "replace").split()
    # Borders at a crop's ends come back as stray "|" or ":" words.
    while words and not _WORD.search(words[0]):
        words.pop(0)
    while words and not _WORD.search(words[-1]):
        words.pop()
    text = " ".join(words)
    with _cache_lock:
        _cache[key] = text
        if len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return text


def label_with_ocr(
    image: ImageLike,
    components: Sequence[Component],
    *,
    timeout: float = 5.0,
    workers: int | None = None,
) -> list[Component]:
    """`components` with missing labels read by OCR: the text of buttons, fields and text
    lines, and for a checkbox or radio the text line just right of it.

    Labels already set are kept; nothing changes when tesseract is missing. `workers`
    tesseract processes run at once (default: the CPU count, at most 4).
    """
    labelled = list(components)
    if not ocr_available():
        return labelled
    grey = grey_array(image)
    wanted = {
        position
        for position, component in enumerate(labelled)
        if component.label is None and component.kind in ("button", "field", "text")
    }
    crops = {}
    for position in sorted(wanted):
        box = clip_box(_text_box(labelled[position]), (grey.shape[1], grey.shape[0]))
        if box is not None:
            x, y, w, h = box
            crops[position] = grey[y : y + h, x : x + w]
    if not crops:
        return name_toggles(labelled)
    with ThreadPoolExecutor(max_workers=workers or min(4, os.cpu_count() or 1)) as pool:
        read = pool.map(lambda crop: read_text(crop, timeout=timeout), crops.values())
        texts = dict(zip(crops, read, strict=True))
    for position, text in texts.items():
        if text and labelled[position].label is None:
            labelled[position] = labelled[position].with_label(text)
    return name_toggles(labelled)


def name_toggles(components: Sequence[Component]) -> list[Component]:
    """`components` with each unlabelled checkbox and radio named after the labelled
    text line just right of it (its caption)."""
    labelled = list(components)
    for position, component in enumerate(labelled):
        if component.kind not in ("checkbox", "radio") or component.label is not None:
            continue
        neighbour = _right_neighbour(component, labelled)
        if neighbour is not None and labelled[neighbour].label:
            labelled[position] = component.with_label(labelled[neighbour].label)
    return labelled


def _text_box(component: Component) -> tuple[int, int, int, int]:
    """Where a component's text is: around a text line or a link found on pixels (boxes
    that hug their text), inside the border of any other control."""
    x, y, w, h = component.box
    if component.kind == "text" or (component.kind == "link" and component.source == "pixels"):
        return (x - 3, y - 3, w + 6, h + 6)
    inset = 4 if min(w, h) > 20 else 2
    return (x + inset, y + inset, w - 2 * inset, h - 2 * inset)


def _right_neighbour(checkbox: Component, components: Sequence[Component]) -> int | None:
    """Position of the text line that starts just right of `checkbox` on its row."""
    x, y, w, h = checkbox.box
    centre = y + h / 2
    best: tuple[int, int] | None = None
    for position, other in enumerate(components):
        ox, oy, _, oh = other.box
        gap = ox - (x + w)
        beside = other.kind == "text" and abs(oy + oh / 2 - centre) <= h
        if beside and 0 <= gap <= 2 * h + 20 and (best is None or gap < best[0]):
            best = (gap, position)
    return None if best is None else best[1]


def _prepare(grey: np.ndarray) -> np.ndarray | None:
    """Dark text on white, scaled to a height tesseract reads well, with a margin."""
    if grey.shape[0] < 4 or grey.shape[1] < 4 or float(grey.std()) < 8:
        return None
    if float(np.median(grey)) < 128:
        grey = 255 - grey
    factor = min(4.0, max(1.0, _LINE_HEIGHT / grey.shape[0]))
    if factor > 1.0:
        grey = cv2.resize(grey, None, fx=factor, fy=factor, interpolation=cv2.INTER_CUBIC)
    return cv2.copyMakeBorder(grey, _PAD, _PAD, _PAD, _PAD, cv2.BORDER_REPLICATE)
