"""Tree components placed by the desktop's windows and cut by their stacking
(_tree_windows), and what _tree_elements leaves out or names: built from elements as a
GTK 4 or Qt app reports them (issue #35's cases), no bus needed."""

from __future__ import annotations

from dataclasses import dataclass

from gui_harness.perception.component import Component
from gui_harness.perception.fusion import fuse
from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_elements import components
from gui_harness.perception.tree._tree_node import Element
from gui_harness.perception.tree._tree_windows import Surface, place

SCREEN = (1280, 800)
SHOWS = (1 << atspi.SHOWING) | (1 << atspi.VISIBLE) | (1 << atspi.ENABLED)


@dataclass(frozen=True)
class Win:
    x: int
    y: int
    width: int
    height: int
    title: str = ""
    pid: int | None = None


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


def test_without_windows_the_window_with_the_focus_is_on_top():
    """A Qt dialog over its main window, on a desktop that cannot list its windows: the
    dialog has the focus (ACTIVE), so what the main window has under it is cut."""
    active = SHOWS | (1 << atspi.ACTIVE)
    qt = [
        element((0,), 23, "main", (1, 20, 640, 480)),
        element((0, 0), 43, "Reload", (137, 44, 32, 31)),  # under the dialog
        element((0, 1), 43, "File", (7, 20, 29, 20)),  # beside it
        element((1,), 16, "Rename", (100, 30, 300, 200), active),
        element((1, 0), 43, "OK", (300, 200, 80, 24)),
    ]
    on: list[Surface | None] = []
    found = components(qt, SCREEN, on=on)
    assert [c.label for c in place(found, on, [])] == ["File", "OK"]


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


def test_an_unnamed_popover_menu_is_placed_and_lends_its_items_no_button():
    """baobab's popover menu has no name, only its role (a menu); the menu button is
    not named after the items the popover holds."""
    button = element((0, 0), 43, "", (796, 6, 34, 34))
    menu = element((0, 0, 0), atspi.MENU, "", (796, 6, 263, 277))
    item = element((0, 0, 0, 0), 35, "Preferences", (838, 123, 179, 32))
    text = element((0, 0, 0, 0, 0), atspi.LABEL, "Preferences", (838, 123, 77, 32))
    on: list[Surface | None] = []
    found = components(
        [element((0,), 23, "Devices", (0, 0, 950, 590)), button, menu, item, text],
        SCREEN,
        on=on,
    )
    windows = [Win(0, 0, 960, 600, "Devices"), Win(687, 24, 263, 277, "baobab")]
    placed = place(found, on, windows)
    assert [(c.label, c.box) for c in placed] == [
        (None, (801, 11, 34, 13)),  # the button, but for what the popover covers
        ("Preferences", (729, 141, 179, 32)),
    ]


def test_a_qt_menu_without_a_window_of_its_own_is_placed_with_its_window():
    """A Qt menu bar's menu is a menu too, but no window of its size shows: what it
    holds goes with the window that holds it (cut by what is above)."""
    qt = [
        element((0,), 23, "main", (1, 20, 640, 480)),
        element((0, 0), atspi.MENU, "File", (7, 20, 29, 20)),
        element((0, 0, 0), 35, "Quit", (7, 40, 120, 20)),
    ]
    on: list[Surface | None] = []
    found = components(qt, SCREEN, on=on)
    placed = place(found, on, [Win(1, 20, 640, 480, "main"), Win(100, 30, 300, 300, "dialog")])
    assert [(c.label, c.box) for c in placed] == [
        ("File", (7, 20, 29, 20)),
        ("Quit", (7, 40, 93, 20)),
    ]


def test_a_qt_menus_items_are_on_its_popup_window_not_under_it():
    """Qt keeps an open menu's items under its menu bar, but draws them in a popup
    window of its own process that no part of the tree claims: they are on it."""
    qt = [
        element((0,), 23, "Image Viewer", (1, 20, 640, 480)),
        element((0, 0), 35, "File", (7, 20, 29, 20)),
        # its popup menu: Qt reports it without a box, with the focus
        element((0, 0, 0), 41, "", None, SHOWS | (1 << atspi.ACTIVE)),
        element((0, 0, 0, 0), 35, "New Window", (7, 40, 285, 23)),
        element((0, 0, 0, 1), 35, "Open", (7, 63, 285, 23)),
        element((0, 1), 43, "Zoom In", (325, 44, 32, 31)),
        element((0, 2), 43, "Next File", (47, 44, 32, 31)),  # under the menu
    ]
    on: list[Surface | None] = []
    found = components(qt, SCREEN, on=on)
    windows = [Win(1, 20, 640, 480, "Image Viewer", 7), Win(7, 40, 285, 332, "", 7)]
    placed = place(found, on, windows, {"app": 7})
    assert [c.label for c in placed] == ["File", "New Window", "Open", "Zoom In"]
    # another process's window over it hides it
    other = [Win(1, 20, 640, 480, "Image Viewer", 7), Win(7, 40, 285, 332, "", 8)]
    assert [c.label for c in place(found, on, other, {"app": 7})] == ["File", "Zoom In"]
    # no window list: the menu has the focus, so it is on top of the toolbar
    assert [c.label for c in place(found, on, [])] == ["File", "New Window", "Open", "Zoom In"]


def test_gui_agents_accessibility_source_lists_the_desktops_windows():
    from gui_harness.agent import _accessibility

    class Listing:
        accessibility_bus = None
        size = (1280, 800)

        def visible_windows(self) -> list[Win]:
            return [Win(0, 0, 700, 520, "Editor")]

    class Virtual:  # a VirtualDesktop: its X11Desktop lists the windows once started
        accessibility_bus = None
        size = (1280, 800)
        desktop = Listing()

    for desktop in (Listing(), Virtual()):
        source = _accessibility(desktop)
        assert source is not None and source.windows is not None
        assert [w.title for w in source.windows()] == ["Editor"]


def test_a_qt_drop_downs_options_show_on_its_open_popup_and_not_when_it_is_closed():
    """Qt says nothing of its drop-down being open (no EXPANDED): its options are
    components when they lie on a popup window of its process, else phantoms."""
    selectable = SHOWS | (1 << atspi.SELECTABLE)
    qt = [
        element((0,), 23, "main", (1, 20, 640, 480)),
        element((0, 0), 11, "Lists", (1, 79, 150, 23)),
        element((0, 0, 0), 31, "", None),
        element((0, 0, 0, 0), 32, "Lists", (2, 80, 261, 23), selectable),
        element((0, 0, 0, 1), 32, "Directory Tree", (2, 103, 261, 23), selectable),
    ]
    on: list[Surface | None] = []
    found = components(qt, SCREEN, on=on)
    main = Win(1, 20, 640, 480, "main", 7)
    opened = place(found, on, [main, Win(1, 79, 150, 48, "", 7)], {"app": 7})
    assert [(c.label, c.box) for c in opened if c.kind == "button"] == [
        ("Lists", (2, 80, 149, 23)),
        ("Directory Tree", (2, 103, 149, 23)),
    ]
    for closed in (place(found, on, [main], {"app": 7}), place(found, on, [])):
        assert [c.label for c in closed] == ["Lists"]
        assert closed[0].kind == "dropdown"
