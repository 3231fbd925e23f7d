"""One look at the screen: `Perception.perceive()` turns a screenshot into an `Observation`.

Owns the order of the steps (accessibility query beside detection → memory labels →
title bars' parts for their pixels (_decorations.py) → fusion → OCR labels already
read → describe) and the lazy set-of-marks image. Detection runs again only where the
screen changed since the previous look (_changes.py). OCR itself runs in ocr_worker's
thread; perceive() waits for it, bounded, only on a new screen's first look. Capture
belongs to gui_harness.desktop; resolving an action's element to coordinates to
gui_harness.actions.
"""

from __future__ import annotations

import atexit
import importlib.util
import threading
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import cv2
import numpy as np
from PIL import Image

from gui_harness.perception._pixels import ImageLike, grey_array, pil_image
from gui_harness.perception.captions import captioned
from gui_harness.perception.component import Component
from gui_harness.perception.fusion import fuse, to_image
from gui_harness.perception.marks import describe, draw_marks
from gui_harness.perception.memory.memory import ComponentMemory, MemoryEntry
from gui_harness.perception.ocr._drawn import program_name
from gui_harness.perception.ocr._lines import lettered
from gui_harness.perception.ocr.ocr import name_toggles, ocr_available
from gui_harness.perception.ocr.ocr_worker import OcrWorker
from gui_harness.perception.pixels._changes import Redetector
from gui_harness.perception.pixels._decorations import decorate
from gui_harness.perception.pixels._glyphs import glyph_label
from gui_harness.perception.pixels._icons import icon_label
from gui_harness.perception.pixels._surfaces import split_at_windows
from gui_harness.perception.tree.accessibility import AccessibilitySnapshot, AccessibilitySource
from openprogram.core.image import Image as OpenprogramImage
from openprogram.errors import UsageError

__all__ = ["Observation", "Perception"]

_THUMB = (160, 100)  # px; the screen's thumbnail that tells a new screen from a change
_THUMB_STEP = 24  # grey levels a thumbnail pixel changes by to count as changed
_NEW_SCREEN = 1 / 3  # share of the thumbnail changed that makes a new screen


@dataclass(frozen=True, eq=False)
class Observation:
    """What perception saw on one screenshot.

    `image` is the screenshot as given (RGB), `components` are numbered from 1 in reading
    order, `text` is describe(components) for the planner. `marked`, the set-of-marks
    picture, is drawn on first access. `accessibility` is what the accessibility query
    saw (None when there was none), and `notes` say what perception had to do without
    (no bus, an app that did not answer).
    """

    image: Image.Image
    components: tuple[Component, ...]
    text: str
    notes: tuple[str, ...] = ()
    accessibility: AccessibilitySnapshot | None = None

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screenshot in pixels."""
        return self.image.size

    @cached_property
    def marked(self) -> OpenprogramImage:
        """The screenshot with every component boxed and numbered, as the image value llm()
        takes (drawn once, on demand; hashed and encoded at most once however many calls
        show it). `.pil` is the PIL picture."""
        return OpenprogramImage(draw_marks(self.image, self.components))

    def component(self, index: int) -> Component:
        """The component numbered `index`; raises KeyError naming the valid range."""
        for component in self.components:
            if component.index == index:
                return component
        raise KeyError(
            f"no component #{index!r}: this observation has #1 to #{len(self.components)}"
            if self.components
            else f"no component #{index!r}: this observation found none"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-able summary without pixels: size, components, text and notes."""
        return {
            "size": list(self.size),
            "components": [c.to_dict() for c in self.components],
            "text": self.text,
            "notes": list(self.notes),
        }


class Perception:
    """Turns screenshots into observations: the accessibility tree where apps publish
    one, pixel detection for the rest, labels from memory and optional OCR.

    `accessibility` is the desktop's AccessibilitySource (None: pixels only). OCR reads
    labels in a background OcrWorker: perceive() takes the labels already read for the
    same pixels and queues the rest, so a new label shows on a later observation.
    `ocr=None` uses OCR when RapidOCR or tesseract is installed. Perceptions share one
    worker per process (its cache outlives a run) unless given their own OcrWorker
    (to choose its reader, say); close() is for a subclass's resources.
    The first observation of a new screen (the first look, or one that changed over a
    third of the screen) is the exception: it waits up to `first_look` seconds for the
    labels of its components, so a planner never sees its controls unlabelled (0: never
    wait). `threshold` is the memory match score (0–1) a pixel component needs to take a
    remembered label. `incremental=True` detects pixel components again only in the
    region that changed since the previous screenshot (same result as a whole
    detection, much less work after a small change); False detects every screenshot whole.
    """

    def __init__(
        self,
        memory: ComponentMemory | None = None,
        *,
        ocr: bool | OcrWorker | None = None,
        max_components: int = 200,
        threshold: float = 0.85,
        accessibility: AccessibilitySource | None = None,
        incremental: bool = True,
        first_look: float = 5.0,
    ) -> None:
        self.memory = memory
        self.ocr = _ocr_installed() if ocr is None else bool(ocr)
        self._worker: OcrWorker | None = None
        if isinstance(ocr, OcrWorker):
            self._worker = ocr
        elif self.ocr:
            self._worker = _shared_worker()
        self.max_components = max_components
        self.threshold = threshold
        self.accessibility = accessibility
        self.incremental = incremental
        if first_look < 0:
            raise UsageError(f"first_look={first_look!r} must be 0 or more seconds")
        self.first_look = first_look
        self._redetector = Redetector()
        self._last_thumb: np.ndarray | None = None

    def perceive(
        self, image: ImageLike, *, accessibility: AccessibilitySnapshot | None = None
    ) -> Observation:
        """Detect, fuse, label and describe the components on `image` (PIL or numpy RGB).

        The accessibility source is queried while pixels are detected; pass a recorded
        `accessibility` snapshot instead to perceive an old screenshot as it was seen
        (its boxes are screen pixels, scaled to `image`).
        """
        picture = pil_image(image)
        grey = grey_array(picture)
        query = None
        if accessibility is None and self.accessibility is not None:
            query = _Query(self.accessibility)
        # the colour picture: links are told apart by their colour
        if not self.incremental:
            self._redetector.forget()
        new = self._worker is not None and self._new_screen(grey)
        pixels = self._redetector.detect(picture, grey, max_components=self.max_components)
        if self.memory is not None:
            pixels = self.memory.label(grey, pixels, threshold=self.threshold)
        if query is not None:
            accessibility = query.result()
        tree: list[Component] = []
        if accessibility is not None:
            tree = to_image(accessibility.components, accessibility.screen, picture.size)
            if accessibility.windows:  # title bars: their title and buttons, not blobs
                scale = _scale(accessibility, picture.size)
                pixels = decorate(grey, pixels, accessibility.windows, scale)
                pixels = split_at_windows(pixels, accessibility.windows, scale)
        components = fuse(tree, pixels, max_components=self.max_components)
        icons = [n for n, c in enumerate(components) if _icon_only(grey, c)]
        for n in icons:  # named by their icon, or not at all
            components[n] = _named_by_icon(grey, components[n])
        if self._worker is not None:
            wait = self.first_look if new else 0.0
            skip = set(icons)
            read = [c for n, c in enumerate(components) if n not in skip]
            read = self._worker.label(grey, read, wait=wait)
            for n in icons:  # back in their places, unread
                read.insert(n, components[n])
            components = name_toggles(read)
            components = [_named_by_glyph(grey, c) for c in components]
        components = captioned(components)  # by the text read so far, tree or OCR
        notes = (accessibility.note,) if accessibility is not None and accessibility.note else ()
        return Observation(picture, tuple(components), describe(components), notes, accessibility)

    def _new_screen(self, grey: np.ndarray) -> bool:
        """Whether `grey` is a new screen rather than a later look at the last one: the
        first look, or over _NEW_SCREEN of a small thumbnail changed since the last."""
        thumb = cv2.resize(grey, _THUMB, interpolation=cv2.INTER_AREA)
        last, self._last_thumb = self._last_thumb, thumb
        if last is None:
            return True
        changed = cv2.absdiff(thumb, last) > _THUMB_STEP
        return bool(np.count_nonzero(changed) > _NEW_SCREEN * changed.size)

    def prepare(self, image: ImageLike) -> None:
        """Detect the pixel components of `image` ahead of its perceive(): a later
        perceive() of the same pixels then only checks that nothing changed. gui_agent
        hands it the frame taken while the screen settles."""
        if self.incremental:
            picture = pil_image(image)
            grey = grey_array(picture)
            self._redetector.detect(picture, grey, max_components=self.max_components)

    def close(self) -> None:
        """Release what this Perception holds: nothing of its own (the OCR worker is
        shared or the caller's); gui_agent calls it on a Perception it made."""

    def remember(
        self, observation: Observation, index: int, label: str, *, pinned: bool = False
    ) -> MemoryEntry:
        """Teach memory that component `index` of `observation` is called `label`."""
        if self.memory is None:
            raise UsageError(
                "this Perception has no memory; pass memory=ComponentMemory(app) to remember"
            )
        return self.memory.remember(
            observation.image, observation.component(index), label, pinned=pinned
        )


_shared_lock = threading.Lock()
_shared: list[OcrWorker] = []


def _shared_worker() -> OcrWorker:
    """The process's OCR worker: one reading thread, one cache, for every Perception."""
    with _shared_lock:
        if not _shared:
            _shared.append(OcrWorker())
            # an ONNX read cut off by interpreter shutdown aborts the process: stop first
            atexit.register(_shared[0].close)
        return _shared[0]


_ICON = 48  # px: an unnamed control of the tree no larger either way is an icon
_GLYPH_KEY = (200, 80)  # px: a key that draws one symbol is no larger (a wide "=")


def _icon_only(grey: np.ndarray, component: Component) -> bool:
    """Whether `component` is a button or tab the tree reports without a name, icon-sized,
    that draws no word: what OCR reads off an icon is no label (a magnifier read as 'Q', a
    sidebar icon as '国'), but a small control may draw a short word the tree does not
    give (GTK 4's column view heads, "Icon", "Name": _lines.lettered), which is read."""
    if not (
        component.source == "accessibility"
        and component.label is None
        and component.kind in ("button", "tab")
        and component.box[2] <= _ICON
        and component.box[3] <= _ICON
    ):
        return False
    x, y, w, h = component.box
    inset = 2 if min(w, h) > 8 else 0  # inside its border
    crop = grey[max(y + inset, 0) : y + h - inset, max(x + inset, 0) : x + w - inset]
    return crop.size == 0 or not lettered(crop)


def _named_by_icon(grey: np.ndarray, component: Component) -> Component:
    """`component` (icon-only) labelled by what its icon means, when it is a theme's
    icon for a common action (a magnifier: "Search"; _icons.py)."""
    x, y, w, h = component.box
    label = icon_label(grey[max(y, 0) : y + h, max(x, 0) : x + w])
    return component if label is None else component.with_label(label)


def _named_by_glyph(grey: np.ndarray, component: Component) -> Component:
    """`component` labelled by the one symbol drawn inside its border ("-", "+", "×", "÷",
    "=", "."; _glyphs.glyph_label), which OCR does not read: a small button found on
    pixels that OCR left unread, or a button of the tree named by the program's word for
    it ("multiply", "numeric_point": _drawn.program_name) rather than by what it draws."""
    x, y, w, h = component.box
    if x < 0 or y < 0 or component.kind not in ("button", "icon"):
        return component
    if component.source == "pixels":
        if component.label is not None or not (8 <= w <= _ICON and 8 <= h <= _ICON):
            return component
    elif not (
        component.kind == "button"
        and program_name(component.label or "")
        and 8 <= w <= _GLYPH_KEY[0]
        and 8 <= h <= _GLYPH_KEY[1]
    ):
        return component
    inset = 3 if min(w, h) > 14 else 1  # inside its border
    label = glyph_label(grey[y + inset : y + h - inset, x + inset : x + w - inset])
    return component if label is None else component.with_label(label)


def _scale(snapshot: AccessibilitySnapshot, image: tuple[int, int]) -> tuple[float, float]:
    """How far screen pixels are from the picture's (1, 1: the same)."""
    width, height = snapshot.screen
    if not width or not height:
        return (1.0, 1.0)
    return (image[0] / width, image[1] / height)


def _ocr_installed() -> bool:
    return importlib.util.find_spec("rapidocr_onnxruntime") is not None or ocr_available()


class _Query:
    """One accessibility snapshot taken on its own thread, so it overlaps detection."""

    def __init__(self, source: AccessibilitySource) -> None:
        self._source = source
        self._snapshot: AccessibilitySnapshot | None = None
        self._thread = threading.Thread(target=self._run, name="accessibility", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._snapshot = self._source.snapshot()
        except Exception as exc:  # a fault there must cost the step its tree, not the step
            self._snapshot = AccessibilitySnapshot(
                screen=self._source.screen,
                note=f"the accessibility query failed ({type(exc).__name__}: {exc}); pixels only",
            )

    def result(self) -> AccessibilitySnapshot:
        # snapshot() keeps to its own timeout; the margin only guards against a bug there
        longest = self._source.first_timeout
        self._thread.join(longest + 2.0)
        if self._snapshot is None:
            return AccessibilitySnapshot(
                screen=self._source.screen,
                note=f"the accessibility query overran its {longest:.2f}s; pixels only",
            )
        return self._snapshot
