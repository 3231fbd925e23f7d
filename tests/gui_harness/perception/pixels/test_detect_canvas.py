"""Text on a canvas (a slide, a drawing: no accessibility tree) comes out as whole text
lines: large letters stand apart, and a round one ("Q", "O", "a") was taken for a check
box or a radio, leaving 'uarterly Report' (issue 35). Check boxes beside their captions
stay check boxes. Drawn screens: canvas_text.py; the fonts held out of tuning are
measured by benchmarks/bench_perception.py --canvas."""

from __future__ import annotations

import pytest

from gui_harness.perception import detect_components
from tests.gui_harness.perception.canvas_text import (
    HELD_OUT,
    PHRASES,
    SIZES,
    TUNED,
    canvas_lines,
    captioned_boxes,
    whole,
)
from tests.gui_harness.perception.screens import iou

pytestmark = pytest.mark.skipif(
    not all(font.exists() for font in TUNED + HELD_OUT[:1]), reason="DejaVu fonts missing"
)


@pytest.mark.parametrize("size", [22, 28, 44])
def test_a_slide_title_starting_with_a_round_capital_is_one_text_line(size: int) -> None:
    image, lines = canvas_lines(TUNED[0], size)
    found = detect_components(image)
    title = lines[PHRASES.index("Quarterly Report")]
    assert whole(found, title), [c for c in found if iou(c.box, title) > 0]


def test_few_letters_of_a_slide_are_check_boxes_or_radios() -> None:
    # before: 47 in DejaVu Sans and 31 in DejaVu Serif over the four sizes
    for font, most in ((TUNED[0], 8), (HELD_OUT[0], 4)):
        toggles = []
        for size in SIZES:
            image, _ = canvas_lines(font, size)
            found = detect_components(image)
            toggles += [c for c in found if c.kind in ("checkbox", "radio")]
        assert len(toggles) <= most, (font.name, toggles)


@pytest.mark.parametrize("side", [13, 16, 20])
def test_check_boxes_close_to_their_captions_stay_check_boxes(side: int) -> None:
    for font_px in (12, 14, 16, 18):
        image, boxes = captioned_boxes(side, font_px)
        found = detect_components(image)
        for box in boxes:
            assert any(c.kind in ("checkbox", "radio") and iou(c.box, box) >= 0.5 for c in found), (
                side,
                font_px,
                box,
                found,
            )
