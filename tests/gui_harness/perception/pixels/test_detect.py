"""detect_components on synthetic screens, reading_order, and Component as data."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from gui_harness.perception import KINDS, Component, detect_components, reading_order
from tests.gui_harness.perception.screens import Truth, dark_screen, font, form_screen, iou


def _best(components: list[Component], truth: Truth) -> Component:
    return max(components, key=lambda c: iou(c.box, truth.box))


@pytest.mark.parametrize("screen", [form_screen, dark_screen])
def test_every_drawn_element_is_found_with_its_kind_and_box(screen):
    image, truths = screen()
    components = detect_components(image)
    misses = [
        (truth, _best(components, truth))
        for truth in truths
        if not (
            _best(components, truth).kind == truth.kind
            and iou(_best(components, truth).box, truth.box) > 0.5
        )
    ]
    assert misses == []


@pytest.mark.parametrize("screen", [form_screen, dark_screen])
def test_nothing_is_found_that_was_not_drawn(screen):
    image, truths = screen()
    strays = [c for c in detect_components(image) if max(iou(c.box, t.box) for t in truths) <= 0.5]
    assert strays == []


def test_components_are_numbered_from_one_in_reading_order(form):
    image, _ = form
    components = detect_components(image)
    assert [c.index for c in components] == list(range(1, len(components) + 1))

    def index_at(x: int, y: int) -> int:
        return next(
            c.index
            for c in components
            if c.box[0] <= x < c.box[0] + c.box[2] and c.box[1] <= y < c.box[1] + c.box[3]
        )

    title, name_label, name_field = index_at(60, 38), index_at(50, 98), index_at(200, 99)
    email_label, save, cancel, open_ = (
        index_at(50, 145),
        index_at(190, 287),
        index_at(300, 287),
        index_at(420, 287),
    )
    assert title < name_label < name_field < email_label < save < cancel < open_


def test_a_label_left_of_a_taller_field_shares_its_row():
    image = Image.new("RGB", (400, 120), (236, 236, 236))
    draw = ImageDraw.Draw(image)
    draw.text((10, 47), "Host", font=font(14), fill=(0, 0, 0))
    draw.rectangle((80, 40, 300, 75), fill=(255, 255, 255), outline=(120, 120, 120))
    draw.text((10, 5), "Top", font=font(14), fill=(0, 0, 0))
    kinds = [(c.index, c.kind) for c in detect_components(image)]
    assert kinds == [(1, "text"), (2, "text"), (3, "field")]


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
def test_numpy_arrays_give_the_same_components_as_pil_images(form, mode):
    image, _ = form
    expected = [(c.kind, c.box) for c in detect_components(image)]
    array = np.asarray(image.convert(mode))
    assert [(c.kind, c.box) for c in detect_components(array)] == expected


def test_a_blank_screen_has_no_components():
    assert detect_components(Image.new("RGB", (1280, 800), (240, 240, 240))) == []


def test_the_cap_keeps_controls_before_text(form):
    image, _ = form
    components = detect_components(image, max_components=8)
    assert len(components) == 8
    assert {c.kind for c in components} <= {"button", "field", "checkbox"}
    assert [c.index for c in components] == list(range(1, 9))


def test_unsupported_arrays_are_refused_with_their_shape():
    with pytest.raises(TypeError, match=r"shape=\(4, 4, 2\)"):
        detect_components(np.zeros((4, 4, 2), np.uint8))
    with pytest.raises(TypeError, match="dtype=float64"):
        detect_components(np.zeros((4, 4), np.float64))


def test_component_round_trips_through_json():
    component = Component(3, "field", (120, 84, 200, 28), 'Say "hi"', 0.8512)
    data = json.loads(json.dumps(component.to_dict()))
    assert data == {
        "index": 3,
        "kind": "field",
        "box": [120, 84, 200, 28],
        "label": 'Say "hi"',
        "confidence": 0.851,
        "states": [],
        "source": "pixels",
    }
    assert Component.from_dict(data) == Component(3, "field", (120, 84, 200, 28), 'Say "hi"', 0.851)
    checked = Component(
        1, "checkbox", (1, 2, 13, 13), "Subscribe", 1.0, ("checked",), "accessibility"
    )
    assert Component.from_dict(json.loads(json.dumps(checked.to_dict()))) == checked
    assert component.center == (220, 98)
    assert component.with_label("x").label == "x"


_FILLS = [(40, 110, 220), (226, 226, 226), (250, 250, 250), (60, 170, 90), (200, 60, 60)]
_WORDS = ["OK", "Save", "Cancel", "Apply", "Next", "Delete all", "Open file"]


@settings(max_examples=15, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.integers(60, 170),  # width
            st.integers(24, 44),  # height
            st.sampled_from(_FILLS),
            st.sampled_from(_WORDS),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_buttons_anywhere_on_a_grid_are_all_found(buttons):
    image = Image.new("RGB", (1280, 800), (236, 236, 236))
    draw = ImageDraw.Draw(image)
    boxes = []
    for n, (w, h, fill, word) in enumerate(buttons):
        x, y = 40 + (n % 4) * 300, 60 + (n // 4) * 200
        draw.rectangle((x, y, x + w - 1, y + h - 1), fill=fill, outline=(110, 110, 110))
        ink = (255, 255, 255) if sum(fill) < 400 else (20, 20, 20)
        draw.text((x + w / 2, y + h / 2), word, font=font(13), fill=ink, anchor="mm")
        boxes.append((x, y, w, h))
    components = detect_components(image)
    for box in boxes:
        best = max(components, key=lambda c: iou(c.box, box))
        assert best.kind == "button" and iou(best.box, box) > 0.5, (box, components)


_boxes = st.tuples(
    st.integers(0, 1200), st.integers(0, 760), st.integers(1, 300), st.integers(1, 60)
)


@given(st.lists(_boxes, max_size=40))
def test_reading_order_numbers_a_permutation_and_is_stable(boxes):
    components = [Component(0, KINDS[i % len(KINDS)], box) for i, box in enumerate(boxes)]
    ordered = reading_order(components)
    assert [c.index for c in ordered] == list(range(1, len(boxes) + 1))
    assert sorted(c.box for c in ordered) == sorted(boxes)
    assert reading_order(ordered) == ordered


@given(st.lists(_boxes, min_size=2, max_size=30))
def test_reading_order_puts_clearly_lower_rows_later(boxes):
    ordered = reading_order([Component(0, "text", box) for box in boxes])
    for earlier, later in itertools.pairwise(ordered):
        # A component whose centre is a whole row higher never comes after.
        e_centre = earlier.box[1] + earlier.box[3] / 2
        l_centre = later.box[1] + later.box[3] / 2
        assert l_centre >= e_centre - max(earlier.box[3], later.box[3], 16)
