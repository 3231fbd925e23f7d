"""detect_components on synthetic screens, one per failure class of pixel detection
(issue 10): touching controls, small controls inside bars, circles, pale fills,
drop-downs, tab strips, controls at a window's edge, lines touching a list's border."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

from gui_harness.perception import Component, detect_components
from gui_harness.perception.pixels._parts import spin_buttons
from tests.gui_harness.perception.screens import font, iou

WHITE = (255, 255, 255)
GREY = (236, 236, 236)
BORDER = (120, 120, 120)


def _found(components: list[Component], box: tuple[int, int, int, int]) -> Component | None:
    best = max(components, key=lambda c: iou(c.box, box), default=None)
    return best if best is not None and iou(best.box, box) >= 0.5 else None


def _button(draw: ImageDraw.ImageDraw, box, text: str, fill=(225, 225, 225), outline=BORDER):
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=fill, outline=outline)
    draw.text((x + w / 2, y + h / 2), text, font=font(14), fill=(20, 20, 20), anchor="mm")


def test_buttons_that_touch_are_found_one_by_one():
    image = Image.new("RGB", (400, 120), GREY)
    draw = ImageDraw.Draw(image)
    boxes = [(40, 40, 90, 30), (129, 40, 90, 30)]  # sharing one border column
    for box, text in zip(boxes, ("Back", "Next"), strict=True):
        _button(draw, box, text)
    components = detect_components(image)
    for box in boxes:
        found = _found(components, box)
        assert found is not None and found.kind == "button", (box, components)


def test_a_row_of_touching_tabs_is_found_as_tabs():
    image = Image.new("RGB", (500, 120), WHITE)
    draw = ImageDraw.Draw(image)
    boxes = [(20 + i * 99, 30, 100, 32) for i in range(4)]
    for box, text in zip(boxes, ("General", "Network", "Privacy", "About"), strict=True):
        _button(draw, box, text, fill=(240, 240, 240))
    components = detect_components(image)
    kinds = [getattr(_found(components, box), "kind", None) for box in boxes]
    assert kinds == ["tab"] * 4, components


def test_a_close_button_inside_a_title_bar_is_its_own_component():
    image = Image.new("RGB", (400, 200), GREY)
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 20, 339, 47), fill=(210, 215, 225), outline=(90, 90, 90))
    close = (316, 22, 22, 22)  # 1-2 px inside the bar's border
    _button(draw, close, "x", fill=(230, 90, 80), outline=(90, 30, 30))
    components = detect_components(image)
    assert _found(components, close) is not None, components


def test_radio_buttons_are_radios_and_checkboxes_stay_checkboxes():
    image = Image.new("RGB", (400, 160), WHITE)
    draw = ImageDraw.Draw(image)
    radios = [(30, 30 + i * 30, 16, 16) for i in range(3)]
    for (x, y, w, h), text in zip(radios, ("Small", "Medium", "Large"), strict=True):
        draw.ellipse((x, y, x + w - 1, y + h - 1), fill=WHITE, outline=(80, 80, 80))
        draw.text((x + w + 5, y - 1), text, font=font(14), fill=(20, 20, 20))
    draw.ellipse((34, 64, 41, 71), fill=(30, 90, 200))  # the chosen one
    checkbox = (200, 30, 16, 16)
    draw.rectangle((200, 30, 215, 45), fill=WHITE, outline=(80, 80, 80))
    draw.text((221, 29), "Bold", font=font(14), fill=(20, 20, 20))
    components = detect_components(image)
    assert [getattr(_found(components, box), "kind", None) for box in radios] == ["radio"] * 3
    assert getattr(_found(components, checkbox), "kind", None) == "checkbox"


def test_a_pale_flat_button_below_the_usual_edge_threshold_is_found():
    image = Image.new("RGB", (300, 120), WHITE)
    draw = ImageDraw.Draw(image)
    box = (40, 40, 120, 32)
    draw.rectangle((40, 40, 159, 71), fill=(242, 242, 242))  # a 13-level step on white
    draw.text((100, 56), "Continue", font=font(14), fill=(40, 40, 40), anchor="mm")
    found = _found(detect_components(image), box)
    assert found is not None and found.kind == "button"


def test_a_drop_down_with_an_arrow_button_is_a_dropdown():
    image = Image.new("RGB", (400, 120), GREY)
    draw = ImageDraw.Draw(image)
    box = (40, 40, 220, 32)
    draw.rectangle((40, 40, 259, 71), fill=WHITE, outline=BORDER)
    draw.text((48, 56), "Canada", font=font(14), fill=(20, 20, 20), anchor="lm")
    draw.line((236, 41, 236, 70), fill=BORDER)
    draw.polygon([(242, 52), (254, 52), (248, 60)], fill=(40, 40, 40))
    components = detect_components(image)
    found = _found(components, box)
    assert found is not None and found.kind == "dropdown", components
    arrow = _found(components, (237, 41, 22, 30))  # the arrow part stays a target of its own
    assert arrow is not None and arrow.kind == "button", components


def test_a_button_at_the_edge_of_a_window_on_a_black_root_is_found():
    image = Image.new("RGB", (400, 200), (0, 0, 0))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 299, 149), fill=GREY)
    box = (12, 112, 90, 30)  # 2 px from the window's left edge
    _button(draw, box, "Quit")
    found = _found(detect_components(image), box)
    assert found is not None and found.kind == "button"


def test_lines_of_a_list_that_touch_its_border_are_separate_lines():
    image = Image.new("RGB", (400, 260), GREY)
    draw = ImageDraw.Draw(image)
    draw.rectangle((40, 20, 240, 220), fill=WHITE, outline=(60, 60, 60))
    names = ["Argentina", "Australia", "Brazil", "Canada", "Chile", "Denmark", "Egypt"]
    lines = []
    for i, name in enumerate(names):
        left, top, right, bottom = draw.textbbox((42, 24 + i * 24), name, font=font(16))
        draw.text((42, 24 + i * 24), name, font=font(16), fill=(10, 10, 10))
        lines.append((left, top, right - left, bottom - top))
    components = detect_components(image)
    assert all(getattr(_found(components, line), "kind", None) == "text" for line in lines)


def _ring(image: Image.Image, box: tuple[int, int, int, int], outline=(118, 118, 118)) -> None:
    """An anti-aliased 1 px ring as a browser draws a radio button: drawn 4× and shrunk."""
    x, y, w, h = box
    big = Image.new("RGB", (w * 4, h * 4), WHITE)
    ImageDraw.Draw(big).ellipse((0, 0, w * 4 - 1, h * 4 - 1), fill=WHITE, outline=outline, width=4)
    image.paste(big.resize((w, h), Image.Resampling.LANCZOS), (x, y))


def test_radio_buttons_three_pixels_from_their_labels_are_radios():
    image = Image.new("RGB", (200, 120), WHITE)
    draw = ImageDraw.Draw(image)
    radios = [(7, 20 + i * 23, 13, 13) for i in range(3)]
    for (x, y, w, h), text in zip(radios, ("A", "bog", "Oslo"), strict=True):
        _ring(image, (x, y, w, h))
        draw.text((x + w + 3, y + h // 2), text, font=font(13), fill=(0, 0, 0), anchor="lm")
    components = detect_components(image)
    assert [getattr(_found(components, box), "kind", None) for box in radios] == ["radio"] * 3


def test_a_letter_o_in_a_word_is_not_a_radio():
    image = Image.new("RGB", (300, 60), WHITE)
    ImageDraw.Draw(image).text((10, 20), "Gloomy good moods go on", font=font(16), fill=(0, 0, 0))
    components = detect_components(image)
    assert [c for c in components if c.kind in ("radio", "checkbox")] == [], components


def test_a_list_box_is_a_target_and_its_lines_are_its_rows():
    image = Image.new("RGB", (220, 160), WHITE)
    draw = ImageDraw.Draw(image)
    box = (10, 10, 150, 90)
    draw.rectangle((10, 10, 159, 99), fill=WHITE, outline=(118, 118, 118))
    rows = [(11, 11 + i * 17, 148, 17) for i in range(5)]
    names = ["Theodora", "Catherine", "Marilee", "Fredra", "Dee"]
    for (x, y, _, h), name in zip(rows, names, strict=True):
        draw.text((x + 3, y + h // 2), name, font=font(13), fill=(0, 0, 0), anchor="lm")
    components = detect_components(image)
    found = _found(components, box)
    assert found is not None and found.kind == "field", components
    assert [getattr(_found(components, row), "kind", None) for row in rows] == ["button"] * 5


def test_a_paragraph_in_a_panel_stays_lines_of_text():
    image = Image.new("RGB", (260, 160), GREY)
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 10, 249, 149), fill=WHITE, outline=BORDER)
    words = "Closing the dialog discards the changes you made to this page since you saved it"
    lines = [
        "Closing the dialog discards the",
        "changes you made to this page",
        "since you saved it",
    ]
    assert " ".join(lines) == words
    for i, line in enumerate(lines):
        draw.text((16, 20 + i * 16), line, font=font(13), fill=(0, 0, 0))
    components = detect_components(image)
    assert not [c for c in components if c.kind == "button"], components


def test_a_bar_across_a_small_page_is_found():
    image = Image.new("RGB", (160, 120), WHITE)
    draw = ImageDraw.Draw(image)
    box = (4, 40, 152, 18)
    draw.rectangle((4, 40, 155, 57), fill=(0, 127, 255), outline=(0, 60, 180))
    draw.text((7, 49), "Section #2", font=font(13), fill=WHITE, anchor="lm")
    assert _found(detect_components(image), box) is not None


def test_two_links_a_space_apart_are_two_and_an_underlined_phrase_is_one():
    image = Image.new("RGB", (300, 80), WHITE)
    draw = ImageDraw.Draw(image)
    blue = (0, 0, 238)
    boxes = []
    x = 10
    for word in ("verra", "sociis"):  # two links: each underlined on its own
        left, top, right, bottom = draw.textbbox((x, 20), word, font=font(13))
        draw.text((x, 20), word, font=font(13), fill=blue)
        draw.line((left, bottom + 1, right - 1, bottom + 1), fill=blue)
        boxes.append((left, top, right - left, bottom - top + 2))
        x = right + 4
    left, top, right, bottom = draw.textbbox((10, 50), "close the dialog", font=font(13))
    draw.text((10, 50), "close the dialog", font=font(13), fill=blue)
    draw.line((left, bottom + 1, right - 1, bottom + 1), fill=blue)
    boxes.append((left, top, right - left, bottom - top + 2))
    components = detect_components(image)
    assert [getattr(_found(components, box), "kind", None) for box in boxes] == ["link"] * 3


def test_the_flat_buttons_of_a_toolbar_are_buttons():
    image = Image.new("RGB", (200, 100), WHITE)
    draw = ImageDraw.Draw(image)
    draw.rectangle((4, 20, 156, 45), fill=WHITE, outline=(200, 200, 200))
    cells = [(6 + i * 28, 21, 28, 24) for i in range(4)]
    for (x, y, w, h), glyph in zip(cells, "AB/U", strict=True):
        draw.text((x + w / 2, y + h / 2), glyph, font=font(16), fill=(60, 60, 60), anchor="mm")
    components = detect_components(image)
    assert [getattr(_found(components, cell), "kind", None) for cell in cells] == ["button"] * 4


def test_the_words_in_a_field_are_not_toolbar_buttons():
    image = Image.new("RGB", (300, 80), GREY)
    draw = ImageDraw.Draw(image)
    draw.rectangle((10, 20, 249, 47), fill=WHITE, outline=BORDER)
    draw.text((16, 34), "to be or not to be", font=font(14), fill=(20, 20, 20), anchor="lm")
    components = detect_components(image)
    assert [c.kind for c in components] == ["field"], components


def test_a_button_group_drawn_without_dividers_gives_a_button_per_label():
    image = Image.new("RGB", (200, 80), WHITE)
    draw = ImageDraw.Draw(image)
    draw.rounded_rectangle((10, 20, 118, 58), radius=6, fill=(13, 110, 253))
    centres = [(28, 39), (64, 39), (100, 39)]  # three 36 px buttons, "1", "2", "3"
    for (cx, cy), digit in zip(centres, "123", strict=True):
        draw.text((cx, cy), digit, font=font(16), fill=WHITE, anchor="mm")
    components = detect_components(image)
    for cx, cy in centres:
        hits = [
            c for c in components
            if c.kind == "button"
            and 0 <= cx - c.box[0] < c.box[2] and 0 <= cy - c.box[1] < c.box[3]
        ]  # fmt: skip
        assert len(hits) == 1 and hits[0].box[2] < 36, components


def test_a_control_reaching_past_the_screens_edge_is_no_spin_box_and_no_crash():
    grey = np.full((60, 80), 230, np.uint8)
    found = [("button", (-3, 10, 16, 20), 0.8), ("icon", (70, 45, 16, 20), 0.7)]
    assert spin_buttons(grey, found) == found  # an empty crop had no median: NaN
