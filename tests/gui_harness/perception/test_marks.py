"""draw_marks (set-of-marks picture) and describe (the planner's text list)."""

from __future__ import annotations

import numpy as np
from PIL import Image

from gui_harness.perception import KIND_COLOURS, Component, describe, detect_components, draw_marks


def _changed(before: Image.Image, after: Image.Image) -> np.ndarray:
    return np.any(np.asarray(before) != np.asarray(after), axis=2)


def test_marks_outline_every_box_in_its_kind_colour(form):
    image, _ = form
    components = detect_components(image)
    marked = draw_marks(image, components)
    assert marked.size == image.size
    pixels = np.asarray(marked)
    for c in components:
        x, y, _, h = c.box
        # The left edge of the outline (below any tag) is drawn in the kind's colour.
        column = pixels[y + h // 2 : y + h, x - 2]
        assert (column == KIND_COLOURS[c.kind]).all(axis=1).any(), c


def test_marks_change_pixels_only_near_boxes(form):
    image, _ = form
    components = detect_components(image)
    changed = _changed(image, draw_marks(image, components))
    near = np.zeros_like(changed)
    for c in components:
        x, y, w, h = c.box
        near[max(0, y - 24) : y + h + 24, max(0, x - 40) : x + w + 8] = True
    assert changed.any()
    assert not (changed & ~near).any()


def test_marks_leave_the_original_untouched(form):
    image, _ = form
    before = np.asarray(image).copy()
    draw_marks(image, detect_components(image))
    assert (np.asarray(image) == before).all()


def test_each_mark_has_a_filled_tag_with_its_number():
    image = Image.new("RGB", (300, 200), (255, 255, 255))
    marked = np.asarray(draw_marks(image, [Component(7, "button", (100, 100, 80, 30))]))
    above = (marked[:97] == KIND_COLOURS["button"]).all(axis=2)
    rows, columns = np.nonzero(above)
    assert rows.max() - rows.min() >= 10  # a tag at least 10 px tall sits above the box
    tag = marked[rows.min() : rows.max() + 1, columns.min() : columns.max() + 1]
    white = (tag == 255).all(axis=2).sum()
    assert 5 < white < above.sum()  # the number, in white, on the filled tag


def test_tags_do_not_cover_each_other():
    image = Image.new("RGB", (300, 200), (255, 255, 255))
    crowded = [Component(i, "text", (50, 60 + 2 * i, 60, 12)) for i in range(1, 4)]
    single = [np.asarray(draw_marks(image, [c])) != np.asarray(image) for c in crowded]
    together = np.asarray(draw_marks(image, crowded)) != np.asarray(image)
    assert together.any(axis=2).sum() > max(s.any(axis=2).sum() for s in single) * 2


def test_describe_lists_one_line_per_component():
    components = [
        Component(1, "text", (40, 92, 46, 12), "Name:"),
        Component(2, "field", (120, 84, 200, 28), "Name"),
        Component(3, "checkbox", (140, 190, 16, 16)),
        Component(4, "button", (140, 270, 100, 34), 'Say "hi"\nnow'),
    ]
    assert describe(components) == (
        '#1 text at (40, 92, 46x12) "Name:"\n'
        '#2 field at (120, 84, 200x28) "Name"\n'
        "#3 checkbox at (140, 190, 16x16)\n"
        '#4 button at (140, 270, 100x34) "Say \\"hi\\"\\nnow"'
    )


def test_describe_of_nothing_is_empty():
    assert describe([]) == ""


def test_read_description_gives_back_what_describe_wrote():
    """The one reading of describe()'s lines: a policy that parsed them with a pattern of
    its own skipped every captioned line once captions came (the demo typed into the
    wrong box)."""
    from gui_harness.perception import read_description

    components = [
        Component(1, "field", (10, 20, 200, 24), caption="Name"),
        Component(2, "dropdown", (10, 60, 180, 24), label="/root", caption='Look "in":'),
        Component(3, "checkbox", (10, 100, 13, 13), label="Subscribe", states=("checked",)),
        Component(4, "button", (10, 140, 60, 24), label="Save"),
        Component(5, "icon", (90, 140, 16, 16)),
    ]
    read = read_description("Screen:\n" + describe(components) + "\nTask: save")
    assert [(c.index, c.kind, c.box) for c in read] == [
        (c.index, c.kind, c.box) for c in components
    ]
    assert [(c.label, c.caption, set(c.states)) for c in read] == [
        ("", "Name", set()),
        ("/root", 'Look "in":', set()),
        ("Subscribe", "", {"checked"}),
        ("Save", "", set()),
        ("", "", set()),
    ]
