"""Perception: what is on the screen, as numbered components (DESIGN.md §8)."""

from gui_harness.perception.cells import Grid, cell_point
from gui_harness.perception.fusion import fuse, to_image
from gui_harness.perception.marks import (
    KIND_COLOURS,
    Described,
    describe,
    draw_marks,
    read_description,
)
from gui_harness.perception.memory.memory import (
    FORMAT_VERSION,
    SCALES,
    ComponentMemory,
    MemoryEntry,
    default_data_dir,
)
from gui_harness.perception.ocr.ocr import label_with_ocr, ocr_available, read_text
from gui_harness.perception.ocr.ocr_worker import OcrWorker
from gui_harness.perception.perceive import Observation, Perception
from gui_harness.perception.pixels.detect import (
    KINDS,
    SOURCES,
    STATES,
    Component,
    Kind,
    Source,
    State,
    detect_components,
    reading_order,
)
from gui_harness.perception.tree.accessibility import (
    ROLE_KINDS,
    AccessibilitySnapshot,
    AccessibilitySource,
)

__all__ = [  # noqa: RUF022 - grouped by topic, as STYLE.md asks of package roots
    # detection
    "KINDS",
    "Component",
    "Kind",
    "detect_components",
    "reading_order",
    "Grid",
    "cell_point",
    "STATES",
    "SOURCES",
    "State",
    "Source",
    # the accessibility tree, and fusion with pixels
    "ROLE_KINDS",
    "AccessibilitySnapshot",
    "AccessibilitySource",
    "fuse",
    "to_image",
    # the planner's view
    "KIND_COLOURS",
    "describe",
    "read_description",
    "Described",
    "draw_marks",
    # memory
    "FORMAT_VERSION",
    "SCALES",
    "ComponentMemory",
    "MemoryEntry",
    "default_data_dir",
    # OCR
    "label_with_ocr",
    "ocr_available",
    "read_text",
    "OcrWorker",
    # the whole step
    "Observation",
    "Perception",
]
