"""Fusion of accessibility and pixel components, and how the planner sees the result."""

from __future__ import annotations

import json

import numpy as np

from gui_harness.perception import (
    AccessibilitySnapshot,
    Component,
    Perception,
    describe,
    draw_marks,
    fuse,
    to_image,
)
from gui_harness.perception.cells import Grid


def tree(kind, box, label=None, states=()) -> Component:
    return Component(0, kind, box, label, 1.0, tuple(states), "accessibility")


def pixel(kind, box) -> Component:
    return Component(0, kind, box, None, 0.6)


def test_the_tree_wins_where_it_overlaps_pixels_and_pixels_fill_the_rest():
    subscribe = tree("checkbox", (10, 10, 120, 22), "Subscribe", ["checked"])
    fused = fuse(
        [subscribe],
        [
            pixel("checkbox", (12, 14, 14, 14)),  # the square inside the tree's checkbox
            pixel("text", (30, 14, 80, 14)),  # its label, also inside
            pixel("button", (400, 300, 90, 30)),  # a canvas button no tree knows
        ],
    )
    assert [(c.index, c.kind, c.source, c.label) for c in fused] == [
        (1, "checkbox", "accessibility", "Subscribe"),
        (2, "button", "pixels", None),
    ]
    assert fused[0].states == ("checked",)


def test_a_pixel_blob_holding_a_tree_control_goes_but_a_paragraph_around_a_link_stays():
    link = tree("link", (100, 100, 40, 14), "here")
    fused = fuse(
        [link],
        [
            pixel("text", (20, 98, 400, 18)),  # a line of text with the link in it
            pixel("button", (95, 95, 60, 24)),  # an outline around the link only
        ],
    )
    assert [(c.kind, c.source) for c in fused] == [("text", "pixels"), ("link", "accessibility")]


def test_a_field_the_page_moved_survives_its_stale_tree_box():
    # The tree still holds the entry (and its inner editable text) where it was before
    # the page moved it 24 px down: the boxes overlap part of the real field, twice.
    stale = [tree("field", (20, 100, 200, 40), "Answer"), tree("field", (24, 104, 192, 32))]
    moved = pixel("field", (20, 124, 200, 40))
    fused = fuse(stale, [moved])
    assert moved.box in [c.box for c in fused if c.source == "pixels"]


def test_a_pixel_box_a_tree_box_matches_or_holds_still_gives_way():
    field = tree("field", (20, 100, 200, 40), "Answer")
    fused = fuse(
        [field, tree("button", (20, 160, 80, 30), "Tab 1"), tree("button", (100, 160, 80, 30))],
        [
            pixel("field", (22, 103, 200, 40)),  # the same field, 2-3 px off
            pixel("text", (30, 110, 60, 14)),  # the text typed into it
            pixel("text", (40, 166, 120, 14)),  # a line across both tabs
        ],
    )
    assert [c.source for c in fused] == ["accessibility"] * 3


def test_fused_components_are_numbered_in_reading_order_across_sources():
    fused = fuse(
        [tree("button", (300, 10, 80, 30), "OK"), tree("field", (10, 200, 200, 28), "Name")],
        [pixel("icon", (10, 10, 24, 24)), pixel("text", (300, 205, 100, 14))],
    )
    assert [(c.index, c.box[:2]) for c in fused] == [
        (1, (10, 10)),
        (2, (300, 10)),
        (3, (10, 200)),
        (4, (300, 205)),
    ]


def test_past_the_limit_pixel_components_give_way_first():
    trees = [tree("button", (i * 50, 0, 40, 20), f"b{i}") for i in range(3)]
    pixels = [pixel("text", (i * 50, 100, 10 + i, 10)) for i in range(5)]
    fused = fuse(trees, pixels, max_components=5)
    assert sum(c.source == "accessibility" for c in fused) == 3
    assert sorted(c.box[2] for c in fused if c.source == "pixels") == [13, 14]


def test_screen_boxes_are_scaled_to_the_image_the_planner_sees():
    moved = to_image([tree("button", (200, 100, 80, 40))], (1280, 800), (640, 400))
    assert moved[0].box == (100, 50, 40, 20)
    assert to_image([tree("button", (1, 1, 1, 1))], (1280, 800), (640, 400))[0].box[2:] == (1, 1)


def test_a_tree_grid_keeps_its_cells_under_the_scaled_image():
    cells = Grid(columns=(40, 120, 200, 280), rows=(180, 200, 220), first_column=2, first_row=5)
    sheet = Component(0, "grid", (40, 180, 240, 40), "Sheet", 1.0, (), "accessibility", cells)
    (moved,) = to_image([sheet], (1280, 800), (640, 400))
    assert moved.box == (20, 90, 120, 20)
    assert moved.cell_point("D6") == (80, 105)  # the middle of D6, in image pixels


def test_describe_shows_labels_and_states_and_marks_tick_checked_components():
    components = fuse(
        [
            tree("checkbox", (10, 10, 13, 13), "Subscribe", ["checked", "focused"]),
            tree("radio", (10, 40, 13, 13), 'Say "hi"'),
            tree("dropdown", (10, 70, 120, 24), "Country", ["disabled"]),
        ],
        [],
    )
    assert describe(components).splitlines() == [
        '#1 checkbox at (10, 10, 13x13) "Subscribe" [checked, focused]',
        '#2 radio at (10, 40, 13x13) "Say \\"hi\\""',
        '#3 dropdown at (10, 70, 120x24) "Country" [disabled]',
    ]
    blank = np.full((120, 200, 3), 255, np.uint8)
    ticked = np.asarray(draw_marks(blank, components[:1]))
    plain = np.asarray(
        draw_marks(blank, [components[0].__class__(1, "checkbox", (10, 10, 13, 13))])
    )
    assert (ticked != plain).any()  # the tick is drawn on the tag


def test_a_recorded_snapshot_is_fused_as_it_was_seen(form):
    image, _ = form
    snapshot = AccessibilitySnapshot(
        components=(tree("button", (2400, 1500, 100, 60), "Far corner", ["focused"]),),
        screen=(2560, 1600),
        note="1 app(s) did not answer",
        apps=1,
    )
    again = AccessibilitySnapshot.from_dict(json.loads(json.dumps(snapshot.to_dict())))
    assert again == snapshot
    observation = Perception(ocr=False).perceive(image, accessibility=again)
    from_tree = [c for c in observation.components if c.source == "accessibility"]
    assert [(c.box, c.label, c.states) for c in from_tree] == [
        ((1200, 750, 50, 30), "Far corner", ("focused",))
    ]
    assert observation.notes == ("1 app(s) did not answer",)
    assert observation.to_dict()["notes"] == ["1 app(s) did not answer"]
    assert any(c.source == "pixels" for c in observation.components)
