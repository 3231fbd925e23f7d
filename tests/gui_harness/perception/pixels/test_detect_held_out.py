"""detect_components on synthetic screens for the failure classes left after the
held-out MiniWoB++ sets (issue 10): text areas filled with text or taller than a
control, spin buttons stacked in one column, controls cut off by the screen's edge."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from gui_harness.perception import Component, detect_components
from tests.gui_harness.perception.screens import font, iou

WHITE = (255, 255, 255)
BORDER = (118, 118, 118)
MONO = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"  # as Chromium draws a textarea
LOREM = [
    "Donec", "ridiculus", "eget", "rhoncus", "pellentesque", "malesuada", "non", "donec",
    "morbi", "nunc",
]  # fmt: skip


def _found(components: list[Component], box: tuple[int, int, int, int]) -> Component | None:
    best = max(components, key=lambda c: iou(c.box, box), default=None)
    return best if best is not None and iou(best.box, box) >= 0.5 else None


def _text_area(
    image: Image.Image, box: tuple[int, int, int, int], *, fill=(247, 247, 247), line=15
) -> None:
    """A text area with a line of words every `line` px from its left border, the last
    one cut by its bottom border."""
    x, y, w, h = box
    inside = Image.new("RGB", (w - 2, h - 2), fill)  # text is clipped at the border
    draw = ImageDraw.Draw(inside)
    mono = ImageFont.truetype(MONO, 13) if Path(MONO).exists() else font(13)
    words = iter(LOREM * 4)
    for top in range(2, h, line):
        text, word = next(words), next(words)
        while draw.textlength(f"{text} {word}", font=mono) < w - 6:
            text, word = f"{text} {word}", next(words)
        draw.text((1, top), text, font=mono, fill=(40, 40, 40))
    image.paste(inside, (x + 1, y + 1))
    ImageDraw.Draw(image).rectangle((x, y, x + w - 1, y + h - 1), outline=BORDER)


def test_a_text_area_filled_with_text_between_a_heading_and_a_field_is_a_field():
    image = Image.new("RGB", (170, 150), WHITE)
    draw = ImageDraw.Draw(image)
    draw.text((3, 0), "User agreement", font=font(15), fill=(0, 0, 0))  # touches its top
    box = (3, 14, 146, 76)
    _text_area(image, box)
    draw.rectangle((4, 91, 132, 111), fill=(247, 247, 247), outline=BORDER)  # 1 px below
    found = _found(detect_components(image), box)
    assert found is not None and found.kind == "field", detect_components(image)


def test_a_text_area_taller_than_a_control_is_a_field():
    image = Image.new("RGB", (220, 240), WHITE)
    box = (10, 10, 180, 150)
    _text_area(image, box, fill=WHITE)
    found = _found(detect_components(image), box)
    assert found is not None and found.kind == "field", detect_components(image)


def test_a_panel_of_dense_text_on_grey_is_not_a_field():
    image = Image.new("RGB", (170, 130), WHITE)
    box = (3, 10, 146, 76)
    _text_area(image, box, fill=(170, 170, 170))
    assert _found(detect_components(image), box) is None


def test_a_button_cut_off_by_the_bottom_edge_is_found():
    image = Image.new("RGB", (160, 120), WHITE)
    draw = ImageDraw.Draw(image)
    draw.rectangle((4, 60, 132, 80), fill=WHITE, outline=BORDER)  # a field 1 px above
    draw.rounded_rectangle((2, 82, 102, 130), 3, fill=(239, 239, 239), outline=BORDER)
    draw.text((52, 101), "Submit", font=font(14), fill=(0, 0, 0), anchor="mm")
    visible = (2, 82, 101, 38)
    components = detect_components(image)
    found = _found(components, visible)
    assert found is not None and found.kind == "button", components
    assert not [c for c in components if c.box[2] >= 150 and c.box[3] >= 100], components


def _spin_box(draw: ImageDraw.ImageDraw, x: int, y: int) -> list[tuple[int, int, int, int]]:
    """A spin box 150×22 at (x, y), its arrows stacked in one column; their boxes."""
    line, column, dark = (197, 197, 197), (246, 246, 246), (119, 119, 119)
    draw.rectangle((x, y, x + 149, y + 21), fill=WHITE, outline=line)
    draw.rectangle((x + 133, y + 1, x + 148, y + 20), fill=column)
    draw.line((x + 133, y, x + 133, y + 21), fill=line)
    draw.polygon([(x + 141, y + 4), (x + 137, y + 8), (x + 145, y + 8)], fill=dark)
    draw.polygon([(x + 141, y + 17), (x + 137, y + 13), (x + 145, y + 13)], fill=dark)
    draw.text((x + 5, y + 11), "0", font=font(13), fill=(40, 40, 40), anchor="lm")
    return [(x + 133, y + 1, 16, 10), (x + 133, y + 11, 16, 10)]


def test_the_arrows_of_a_spin_box_are_two_buttons():
    image = Image.new("RGB", (200, 80), WHITE)
    arrows = _spin_box(ImageDraw.Draw(image), 5, 20)
    components = detect_components(image)
    kinds = [getattr(_found(components, box), "kind", None) for box in arrows]
    assert kinds == ["button", "button"], components


def test_a_colon_or_an_icon_of_two_marks_is_not_a_spin_box():
    image = Image.new("RGB", (200, 80), WHITE)
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 39, 41), fill=(230, 230, 230), outline=BORDER)
    draw.rectangle((27, 25, 31, 29), fill=(40, 40, 40))  # a colon: squares, not arrows
    draw.rectangle((27, 33, 31, 37), fill=(40, 40, 40))
    components = detect_components(image)
    assert _found(components, (20, 20, 20, 22)) is not None, components
    assert _found(components, (20, 20, 20, 11)) is None, components


def test_a_low_text_area_whose_lines_touch_its_border_is_a_field():
    image = Image.new("RGB", (160, 110), WHITE)
    box = (2, 20, 116, 36)
    _text_area(image, box)
    draw = ImageDraw.Draw(image)
    draw.rectangle((4, 59, 128, 76), fill=WHITE, outline=BORDER)  # a field below
    found = _found(detect_components(image), box)
    assert found is not None and found.kind == "field", detect_components(image)


def test_two_low_fields_a_pixel_apart_are_two_fields():
    image = Image.new("RGB", (160, 80), WHITE)
    draw = ImageDraw.Draw(image)
    boxes = [(70, 20, 88, 14), (70, 35, 88, 14)]  # insides 10 px high, 1 px between
    for (x, y, w, h), label in zip(boxes, ("Last name:", "Gender:"), strict=True):
        draw.rounded_rectangle((x, y, x + w - 1, y + h - 1), 2, fill=WHITE, outline=BORDER)
        draw.text((5, y + h // 2), label, font=font(12), fill=(0, 0, 0), anchor="lm")
    components = detect_components(image)
    kinds = [getattr(_found(components, box), "kind", None) for box in boxes]
    assert kinds == ["field", "field"], components
