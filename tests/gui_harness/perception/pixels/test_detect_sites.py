"""detect_components on synthetic screens for the failure classes found on real site
pages (FormWoB's airline sites, issue 10) and on GTK: links in a lighter blue,
vertical tab columns."""

from __future__ import annotations

from PIL import Image, ImageDraw

from gui_harness.perception import Component, detect_components
from tests.gui_harness.perception.screens import font, iou

WHITE = (255, 255, 255)
SITE_BLUE = (39, 116, 174)  # a site's link colour: its anti-aliased edges are pale


def _found(components: list[Component], box: tuple[int, int, int, int]) -> Component | None:
    best = max(components, key=lambda c: iou(c.box, box), default=None)
    return best if best is not None and iou(best.box, box) >= 0.5 else None


def test_a_link_in_a_lighter_blue_without_underline_is_one_link_not_its_letters():
    image = Image.new("RGB", (220, 40), WHITE)
    draw = ImageDraw.Draw(image)
    draw.text((10, 12), "Child traveling alone?", font=font(15), fill=SITE_BLUE)
    box = draw.textbbox((10, 12), "Child traveling alone?", font=font(15))
    box = (box[0], box[1], box[2] - box[0], box[3] - box[1])
    components = detect_components(image)
    found = _found(components, box)
    assert found is not None and found.kind == "link", components
    assert len(components) == 1, components


def test_a_lighter_blue_link_after_black_text_is_cut_from_it():
    image = Image.new("RGB", (260, 40), WHITE)
    draw = ImageDraw.Draw(image)
    draw.text((10, 12), "Flying with kids?", font=font(15), fill=(40, 40, 40))
    left = draw.textbbox((10, 12), "Flying with kids? ", font=font(15))[2]
    draw.text((left, 12), "Read more", font=font(15), fill=SITE_BLUE)
    x0, y0, x1, y1 = draw.textbbox((left, 12), "Read more", font=font(15))
    components = detect_components(image)
    found = _found(components, (x0, y0, x1 - x0, y1 - y0))
    assert found is not None and found.kind == "link", components
    assert [c.kind for c in components] == ["text", "link"], components


WINDOW = (246, 245, 244)  # GTK's Adwaita: window, frame, tab strip, label, accent
FRAME = (205, 199, 194)
STRIP = (225, 222, 219)
LABEL = (46, 52, 54)
ACCENT = (53, 132, 228)


def _notebook(
    draw: ImageDraw.ImageDraw, page: tuple[int, int, int, int], side: str
) -> list[tuple[int, int, int, int]]:
    """A GTK notebook: a white page with a strip of three borderless tab labels on
    `side` ("top" or "right"), the first tab marked by an accent bar; the tabs' boxes
    (44×30 around each label, as its accessibility tree reports them)."""
    x, y, w, h = page
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=WHITE, outline=FRAME)
    if side == "top":
        strip = (x, y - 37, w, 38)
        cells = [(x + 19 + 76 * i, y - 35, 44, 30) for i in range(3)]
        accent = (cells[0][0] - 12, y - 6, cells[0][0] + 55, y - 4)  # wider than its label
    else:
        strip = (x + w - 1, y, 68, h)
        cells = [(x + w + 11, y + 10 + 44 * i, 44, 30) for i in range(3)]
        accent = (x + w, y + 4, x + w + 2, y + 43)
    sx, sy, sw, sh = strip
    draw.rectangle((sx, sy, sx + sw - 1, sy + sh - 1), fill=STRIP, outline=FRAME)
    draw.rectangle(accent, fill=ACCENT)
    for i, (cx, cy, cw, ch) in enumerate(cells, start=1):
        draw.text((cx + cw // 2, cy + ch // 2), f"page {i}", font=font(13), fill=LABEL, anchor="mm")
    return cells


def _list_box(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int]
) -> list[tuple[int, int, int, int]]:
    """A list box of three rows 44 px apart on its own; the rows' boxes."""
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=WHITE, outline=FRAME)
    rows = [(x + 1, y + 4 + 44 * i, w - 2, 44) for i in range(3)]
    for i, (rx, ry, _, rh) in enumerate(rows, start=1):
        draw.text((rx + 8, ry + rh // 2), f"Row {i}", font=font(13), fill=LABEL, anchor="lm")
    return rows


def test_the_labels_of_a_notebooks_tab_strips_are_tabs_and_a_list_box_keeps_its_rows():
    image = Image.new("RGB", (900, 420), WINDOW)
    draw = ImageDraw.Draw(image)
    vertical = _notebook(draw, (20, 40, 260, 140), "right")
    horizontal = _notebook(draw, (420, 80, 320, 100), "top")
    rows = _list_box(draw, (100, 240, 160, 140))
    components = detect_components(image)
    for box in vertical + horizontal:
        found = _found(components, box)
        assert found is not None and found.kind == "tab", (box, components)
    for box in rows:
        found = _found(components, box)
        assert found is not None and found.kind == "button", (box, components)


def _date_field(
    draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], text: str, *, icon: bool
) -> tuple[int, int, int, int]:
    """A site's date field: grey border, grey placeholder, and (`icon`) a calendar
    icon at its right end; the icon button's box (18×18 around the 16 px icon)."""
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=WHITE, outline=(160, 165, 170), width=2)
    draw.text((x + 10, y + h // 2), text, font=font(15), fill=(110, 110, 110), anchor="lm")
    bx, by = x + w - 27, y + (h - 18) // 2
    if icon:
        draw.rectangle(
            (bx + 1, by + 2, bx + 16, by + 16), fill=(225, 238, 250), outline=(40, 130, 200)
        )
        draw.rectangle((bx + 1, by + 2, bx + 16, by + 5), fill=(40, 130, 200))
        for gx in range(bx + 4, bx + 15, 4):
            for gy in range(by + 8, by + 15, 3):
                draw.rectangle((gx, gy, gx + 1, gy + 1), fill=(40, 130, 200))
    return (bx, by, 18, 18)


def test_an_icon_at_a_fields_right_end_is_a_button_of_its_own():
    image = Image.new("RGB", (420, 120), WHITE)
    draw = ImageDraw.Draw(image)
    button = _date_field(draw, (11, 20, 174, 39), "mm/dd/yyyy", icon=True)
    inside = _date_field(draw, (200, 20, 174, 39), "Portland, OR", icon=False)
    _date_field(draw, (11, 70, 174, 39), "Show all", icon=False)
    draw.polygon([(164, 86), (174, 86), (169, 92)], fill=(60, 60, 60))  # a drop-down's arrow
    components = detect_components(image)
    found = _found(components, button)
    assert found is not None and found.kind == "button", components
    assert _found(components, (11, 20, 174, 39)) is not None, components
    # a field holding only text, or text and a drop-down's arrow, gets no button
    assert not any(iou(c.box, inside) > 0.1 for c in components), components
    assert [c.kind for c in components if c.box[1] >= 70] == ["field"], components
