"""Tree components placed by the desktop's windows and cut by their stacking
(_tree_windows), and what _tree_elements leaves out or names: built from elements as a
GTK 4 or Qt app reports them (issue #35's cases), no bus needed."""

from __future__ import annotations

from dataclasses import dataclass

from gui_harness.perception import _atspi as atspi
from gui_harness.perception._tree_elements import components
from gui_harness.perception._tree_walk import Element
from gui_harness.perception._tree_windows import Surface, place
from gui_harness.perception.component import Component
from gui_harness.perception.fusion import fuse

SCREEN = (1280, 800)
SHOWS = (1 << atspi.SHOWING) | (1 << atspi.VISIBLE) | (1 << atspi.ENABLED)


@dataclass(frozen=True)
class Win:
    x: int
    y: int
    width: int
    height: int
    title: str = ""


def element(order, role, name, box, states=SHOWS) -> Element:
    e = Element("app", f"/{'/'.join(map(str, order))}", tuple(order), role, name, states, box)
    e.answered |= {"role", "states", "name", "box"}
    return e


def editor_with_popover() -> list[Element]:
    """GTK 4's boxes: relative to the window (its 5 px margin not counted); a popover's
    items relative to its own surface, placed at its menu button's box."""
    return [
        element((0,), 23, "Editor", (0, 0, 690, 510)),
        element((0, 0), 43, "Menu", (536, 6, 34, 34)),
        element((0, 1), 79, "Text", (0, 47, 690, 463), SHOWS | (1 << atspi.EDITABLE)),
        element((0, 0, 0), 33, "GtkPopoverMenu", (536, 6, 263, 587)),
        element((0, 0, 0, 0), 35, "Save", (578, 215, 179, 32)),
    ]


def test_gtk4_boxes_are_moved_onto_their_window_and_popover():
    on: list[Surface | None] = []
    found = components(editor_with_popover(), SCREEN, on=on)
    windows = [Win(0, 0, 700, 520, "Editor"), Win(427, 24, 263, 587, "editor")]
    placed = {c.label: c for c in place(found, on, windows)}
    assert placed["Save"].box == (469, 233, 179, 32)  # where the popover draws it
    assert "GtkPopoverMenu" not in placed and None not in placed  # the popover: no target
    # the editor's text area shows only left of the popover: cut, not swallowing it
    assert placed["Text"].box == (5, 52, 422, 463)


def test_a_dialogs_window_relative_boxes_move_and_what_it_hides_goes():
    dialog = [
        element((1,), 16, "Save As", (0, 0, 1232, 419)),
        element((1, 0), 43, "Save", (1166, 378, 37, 24)),
    ]
    editor = editor_with_popover()[:3]
    on: list[Surface | None] = []
    found = components(editor + dialog, SCREEN, on=on)
    placed = place(found, on, [Win(0, 0, 700, 520, "Editor"), Win(1, 58, 1232, 419, "Save As")])
    by_label = {c.label: c for c in placed}
    assert by_label["Save"].box == (1167, 436, 37, 24)
    assert "Text" not in by_label  # under the dialog but for a sliver
    assert by_label["Menu"].box == (541, 11, 34, 34)  # above the dialog: shows


def test_without_windows_nothing_moves():
    on: list[Surface | None] = []
    found = components(editor_with_popover(), SCREEN, on=on)
    assert place(found, on, []) == found


def test_a_popovers_pixels_survive_fusion_once_the_box_behind_it_is_cut():
    on: list[Surface | None] = []
    found = components(editor_with_popover()[:3], SCREEN, on=on)
    tree = place(found, on, [Win(0, 0, 700, 520, "Editor"), Win(427, 24, 263, 587, "x")])
    item = Component(0, "text", (469, 190, 90, 14))  # a menu item drawn by the popover
    fused = fuse(tree, [item])
    assert [c.box for c in fused if c.source == "pixels"] == [item.box]


def test_a_closed_drop_downs_options_are_no_components_and_a_row_head_names_its_cell():
    selectable = SHOWS | (1 << atspi.SELECTABLE)
    qt = [
        element((0,), 23, "main", (1, 20, 640, 480)),
        element((0, 0), 11, "Lists", (1, 79, 150, 23)),
        element((0, 0, 0), 31, "", (0, 0, 753, 46)),
        element((0, 0, 0, 0), 32, "Lists", (0, 0, 753, 23), selectable),
        element((0, 0, 0, 1), 32, "Directory Tree", (0, 23, 753, 23), selectable),
        element((0, 1), 56, "Places", (1, 108, 150, 15)),  # not selectable itself
        element((0, 2), 56, "", (1, 108, 150, 15), selectable),
    ]
    found = components(qt, SCREEN)
    assert [(c.kind, c.label) for c in found] == [("dropdown", "Lists"), ("button", "Places")]


def test_an_unnamed_gtk4_button_is_named_by_the_label_it_holds_not_a_hidden_one():
    button = element((0, 0), 43, "GtkToggleButton", (208, 45, 53, 24))
    hidden = element((0, 0, 0), atspi.LABEL, "(None)", (208, 45, 0, 0))
    text = element((0, 0, 1), atspi.LABEL, "work", (210, 47, 40, 20))
    (found,) = components([element((0,), 23, "w", (0, 0, 600, 400)), button, hidden, text], SCREEN)
    assert found.label == "work"
