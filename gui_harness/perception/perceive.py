"""One look at the screen: `Perception.perceive()` turns a screenshot into an `Observation`.

Owns the order of the steps (detect → memory labels → OCR labels → describe) and the
lazy set-of-marks image. Capture belongs to gui_harness.desktop; resolving an action's
element to coordinates belongs to gui_harness.actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from PIL import Image

from gui_harness.perception._pixels import ImageLike, grey_array, pil_image
from gui_harness.perception.detect import Component, detect_components
from gui_harness.perception.marks import describe, draw_marks
from gui_harness.perception.memory import ComponentMemory, MemoryEntry
from gui_harness.perception.ocr import label_with_ocr, ocr_available
from openprogram.errors import UsageError

__all__ = ["Observation", "Perception"]


@dataclass(frozen=True, eq=False)
class Observation:
    """What perception saw on one screenshot.

    `image` is the screenshot as given (RGB), `components` are numbered from 1 in reading
    order, `text` is describe(components) for the planner. `marked`, the set-of-marks
    picture, is drawn on first access.
    """

    image: Image.Image
    components: tuple[Component, ...]
    text: str

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screenshot in pixels."""
        return self.image.size

    @cached_property
    def marked(self) -> Image.Image:
        """The screenshot with every component boxed and numbered (drawn once, on demand)."""
        return draw_marks(self.image, self.components)

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
        """JSON-able summary without pixels: size, components and text."""
        return {
            "size": list(self.size),
            "components": [c.to_dict() for c in self.components],
            "text": self.text,
        }


class Perception:
    """Turns screenshots into observations, with labels from memory and optional OCR.

    `ocr=None` uses OCR when tesseract is installed. `threshold` is the memory match
    score (0–1) a component needs to take a remembered label.
    """

    def __init__(
        self,
        memory: ComponentMemory | None = None,
        *,
        ocr: bool | None = None,
        max_components: int = 200,
        threshold: float = 0.85,
    ) -> None:
        self.memory = memory
        self.ocr = ocr_available() if ocr is None else ocr
        self.max_components = max_components
        self.threshold = threshold

    def perceive(self, image: ImageLike) -> Observation:
        """Detect, label and describe the components on `image` (PIL or numpy RGB)."""
        picture = pil_image(image)
        grey = grey_array(picture)
        components = detect_components(grey, max_components=self.max_components)
        if self.memory is not None:
            components = self.memory.label(grey, components, threshold=self.threshold)
        if self.ocr:
            components = label_with_ocr(grey, components)
        return Observation(picture, tuple(components), describe(components))

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
