"""Perception leaves an icon-only control of the tree unlabelled rather than labelled by
what OCR reads off its icon (issue #35: a magnifier read as 'Q', sidebar tab icons as
'国'); a named one, and pixel components, are read as before."""

from __future__ import annotations

import numpy as np

from gui_harness.perception import AccessibilitySnapshot, Component, Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker


def test_an_unnamed_icon_button_of_the_tree_is_not_labelled_by_ocr():
    image = np.full((200, 300, 3), 255, np.uint8)
    image[24:40, 24:40] = 40  # an icon in an icon-sized button
    image[24:40, 70:90] = 40  # and in a tab
    image[105:125, 160:200] = 60  # something drawn in a wide unnamed control of the tree
    worker = OcrWorker(lambda crop: "Q")
    try:
        perception = Perception(ocr=worker, first_look=5.0)
        tree = (
            Component(0, "button", (16, 16, 32, 32), None, 1.0, (), "accessibility"),
            Component(0, "tab", (60, 16, 40, 32), None, 1.0, (), "accessibility"),
            Component(0, "button", (146, 96, 148, 38), None, 1.0, (), "accessibility"),
        )
        seen = perception.perceive(
            image, accessibility=AccessibilitySnapshot(components=tree, screen=(300, 200))
        )
        by_box = {c.box: c.label for c in seen.components}
        assert by_box[(16, 16, 32, 32)] is None
        assert by_box[(60, 16, 40, 32)] is None
        assert by_box[(146, 96, 148, 38)] == "Q"  # wide: may hold text, read as before
    finally:
        worker.close()
