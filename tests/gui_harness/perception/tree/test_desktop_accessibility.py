"""The accessibility source on the desktop apps real tasks use, each on a VirtualDesktop
with its window manager: LibreOffice Calc (its GTK 3 plugin: a spreadsheet whose
millions of cells become one grid; its Function Wizard's long list of functions),
gnome-calculator (GTK 4: no Collection interface, read by the tree walk) and a Qt app
(FeatherPad). One LibreOffice for the module."""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import time
from collections.abc import Callable, Iterator

import pytest

from gui_harness.actions import Click, Keypress, Scroll, Type
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import (
    AccessibilitySnapshot,
    AccessibilitySource,
    Component,
    Perception,
)
from gui_harness.perception._pixels import grey_array
from gui_harness.perception.pixels._changes import Redetector
from gui_harness.perception.pixels.detect import detect_components
from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree import _tree_read

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
    pytest.mark.heavy_app,  # LibreOffice Calc, gnome-calculator, featherpad
]

SCREEN = (1280, 800)


def _needs(program: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(
        shutil.which(program) is None,
        reason=f"{program} is not installed (scripts/setup.sh --dev)",
    )


def wait_for(
    source: AccessibilitySource,
    condition: Callable[[AccessibilitySnapshot], bool],
    *,
    limit: float = 60.0,
) -> AccessibilitySnapshot:
    """Snapshots until `condition` holds: an app publishes its tree a little after its
    window maps (LibreOffice's toolbars a good while after)."""
    deadline = time.monotonic() + limit
    while True:
        snapshot = source.snapshot()
        if condition(snapshot) or time.monotonic() > deadline:
            return snapshot
        time.sleep(0.2)


def labelled(snapshot: AccessibilitySnapshot, kind: str, label: str) -> list[Component]:
    return [c for c in snapshot.components if c.kind == kind and c.label == label]


def libreoffice(program: str) -> App:
    """A LibreOffice app as a desktop task starts it: its GTK 3 plugin (the one with an
    accessibility tree), no restore or start-up logo, a profile of its own."""
    return App(
        [program, "--norestore", "--nologo", "--nolockcheck"],
        env={"SAL_USE_VCLPLUGIN": "gtk3"},
        timeout=120.0,
    )


@pytest.fixture(scope="module")
def calc(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[VirtualDesktop, AccessibilitySource]]:
    if shutil.which("localc") is None:
        pytest.skip("LibreOffice Calc is not installed (scripts/setup.sh --dev)")
    home = tmp_path_factory.mktemp("calc-home")
    app = libreoffice("localc")
    app = App(app.argv, env={**app.env, "HOME": str(home)}, timeout=app.timeout)
    with VirtualDesktop(SCREEN, [app]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5.0)
        wait_for(source, lambda s: bool(labelled(s, "button", "Bold")) and _grid(s) is not None)
        yield desktop, source
        source.close()


def _grid(snapshot: AccessibilitySnapshot) -> Component | None:
    grids = [c for c in snapshot.components if c.kind == "grid" and c.grid is not None]
    return grids[0] if grids else None


@_needs("localc")
def test_calc_shows_its_menus_toolbars_and_fields_and_its_sheet_as_one_grid(calc):
    _, source = calc
    snapshot = source.snapshot()
    assert snapshot.note is None and snapshot.apps == 1
    assert len(snapshot.components) <= 200
    for menu in ("File", "Edit", "View", "Insert", "Format", "Sheet", "Data", "Tools", "Help"):
        assert len(labelled(snapshot, "button", menu)) == 1, menu  # its own hidden bar left out
    for tool in ("New", "Open", "Save", "Bold", "Italic", "Function Wizard"):
        assert labelled(snapshot, "button", tool), tool
    grid = _grid(snapshot)
    assert grid is not None and grid.grid is not None
    assert grid.grid.span().startswith("A1:")
    rows, columns = grid.grid.shape
    assert rows >= 20 and columns >= 8
    # no cell is a component of its own: the toolbar is not crowded out
    assert not [
        c for c in snapshot.components if c.label and c.label[:1] == "A" and c.label[1:].isdigit()
    ]
    # the Name Box and the font boxes are fields, above the sheet and below the menus
    fields = [c for c in snapshot.components if c.kind == "field"]
    assert len(fields) >= 3
    menu_bottom = labelled(snapshot, "button", "File")[0].box[1]
    assert all(menu_bottom < f.box[1] < grid.box[1] for f in fields)


@_needs("localc")
def test_a_click_on_a_cell_of_the_grid_lands_in_that_cell(calc):
    """The grid's cells are where the screen shows them (LibreOffice reports what it
    draws itself as if its menu bar took no room; the walk corrects that): a click on
    C5 and typing fills C5, as the sheet's own accessible cell says."""
    desktop, source = calc
    grid = _grid(source.snapshot())
    assert grid is not None
    x, y = grid.cell_point("C5")
    desktop.execute(Click(x=x, y=y))
    desktop.execute(Type(text="forty two"))
    desktop.execute(Keypress(keys=["enter"]))
    deadline = time.monotonic() + 30
    while (text := _cell_text(desktop, row=4, column=2)) != "forty two":
        assert time.monotonic() < deadline, text
        time.sleep(0.1)


@_needs("localc")
def test_the_formula_bar_is_a_field_where_typing_fills_the_selected_cell(calc):
    desktop, source = calc
    snapshot = source.snapshot()
    wizard = labelled(snapshot, "button", "Function Wizard")[0]
    grid = _grid(snapshot)
    assert grid is not None
    (formula,) = [
        c
        for c in snapshot.components
        if c.kind == "field" and c.box[0] > wizard.box[0] and c.box[2] > 400
    ]
    assert formula.box[1] < wizard.center[1] < formula.box[1] + formula.box[3]  # one row
    assert formula.label == "Input line"  # LibreOffice's own name, lost by its GTK 3 plugin
    x, y = grid.cell_point("D7")
    desktop.execute(Click(x=x, y=y))
    desktop.execute(Click(x=formula.center[0], y=formula.center[1]))
    desktop.execute(Type(text="typed above"))
    desktop.execute(Keypress(keys=["enter"]))
    deadline = time.monotonic() + 30
    while (text := _cell_text(desktop, row=6, column=3)) != "typed above":
        assert time.monotonic() < deadline, text
        time.sleep(0.1)


@_needs("localc")
def test_a_calc_observation_after_a_cell_click_keeps_its_controls_and_sheet(calc):
    """What a planner sees right after an action (tree refreshed from events, pixels
    detected again only around the change): menus, toolbar buttons, the Name Box, the
    labelled formula bar and the sheet as one grid, within the component cap."""
    desktop, source = calc
    perception = Perception(accessibility=source, ocr=False)
    before = perception.perceive(desktop.screenshot())
    grid = next(c for c in before.components if c.kind == "grid" and c.grid is not None)
    for cell in ("B2", "E6"):
        source.mark()
        x, y = grid.cell_point(cell)
        desktop.execute(Click(x=x, y=y))
        assert source.wait_caught_up(timeout=30.0)
        desktop.wait_settled(timeout=5.0)
        seen = perception.perceive(desktop.screenshot())
        assert len(seen.components) <= 200
        tree = [c for c in seen.components if c.source == "accessibility"]
        for menu in ("File", "Edit", "View", "Insert", "Format", "Sheet", "Data", "Help"):
            assert [c for c in tree if c.kind == "button" and c.label == menu], menu
        for tool in ("New", "Open", "Save", "Bold", "Italic", "Function Wizard"):
            assert [c for c in tree if c.kind == "button" and c.label == tool], tool
        wizard = next(c for c in tree if c.label == "Function Wizard")
        fields = [c for c in tree if c.kind == "field" and c.box[1] < grid.box[1]]
        assert [c for c in fields if c.box[0] < wizard.box[0]]  # the Name Box
        assert [c for c in fields if c.label == "Input line" and c.box[0] > wizard.box[0]]
        sheet = [c for c in seen.components if c.kind == "grid" and c.grid is not None]
        assert sheet and sheet[0].grid.span().startswith("A1:")
    assert perception._redetector.incremental >= 1  # the sheet was not detected whole again


@_needs("localc")
def test_cell_clicks_on_calc_are_detected_again_around_them_as_a_whole_detection_would(
    calc,
):
    """Each frame of a cursor going round the sheet, detected again around its changes
    (the sheet's headers at two places, the Name Box, the formula bar), gives what a
    whole detection of the frame gives; most are not detected whole."""
    desktop, source = calc
    grid = next(c for c in source.snapshot().components if c.kind == "grid" and c.grid)
    redetector = Redetector()
    for cell in ("B2", "C3", "D4", "E5", "B2", "C3"):
        x, y = grid.cell_point(cell)
        desktop.execute(Click(x=x, y=y))
        desktop.wait_settled(timeout=5.0)
        frame = desktop.screenshot()
        grey = grey_array(frame)
        again = redetector.detect(frame, grey, max_components=200)
        whole = detect_components(frame, grey=grey, max_components=200)
        assert [(c.kind, c.box) for c in again] == [(c.kind, c.box) for c in whole], cell
    assert redetector.incremental >= 3


@_needs("localc")
def test_calc_is_read_again_after_its_tree_changed_and_only_then(calc):
    desktop, source = calc
    wait_for(source, lambda s: s.calls <= 1, limit=30)  # settled: only the registry asked
    bold = labelled(source.snapshot(), "button", "Bold")[0]
    assert "checked" not in bold.states
    fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=30.0)
    whole = fresh.snapshot()  # a source that kept nothing reads the whole tree
    fresh.close()
    source.mark()
    after = _toggle(desktop, source, bold, "checked")
    # only what sent events was read again, the rest kept (how much that is depends on
    # which objects LibreOffice says changed: the button alone is ~30 calls, a relaid-out
    # panel hundreds)
    assert 1 < after.calls < whole.calls, (after.calls, whole.calls)
    assert len(after.components) == len(whole.components)
    _toggle(desktop, source, bold, None)  # leave it as it was


def _toggle(
    desktop: VirtualDesktop, source: AccessibilitySource, bold: Component, state: str | None
) -> AccessibilitySnapshot:
    """Clicks Bold until a source that kept nothing reads it `state` (checked, or None for
    not): a click LibreOffice drops while busy is clicked again. Then `source`, which
    reads again only what sent events, must read the same."""

    def shows(snapshot: AccessibilitySnapshot) -> bool:
        states = labelled(snapshot, "button", "Bold")[0].states
        return state in states if state else "checked" not in states

    for _ in range(3):
        desktop.execute(Click(x=bold.center[0], y=bold.center[1]))
        desktop.wait_settled(timeout=10.0)
        fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=30.0)
        landed = wait_for(fresh, shows, limit=20)
        fresh.close()
        if shows(landed):
            break
    else:
        pytest.fail("three clicks on Bold did not toggle it (read whole, from a new source)")
    assert source.wait_caught_up(timeout=30.0)
    after = wait_for(source, shows, limit=30)
    assert shows(after), "the tree changed and the source that keeps what it read missed it"
    return after


@_needs("localc")
def test_a_read_cut_short_places_calcs_own_parts_right_or_leaves_them_out(calc, monkeypatch):
    """LibreOffice reports what it draws itself (toolbars, the sheet) off by its menu
    bar's height until it has placed its window again; a walk cut short by a busy app
    cannot measure that. A source that never measured it leaves those parts out (a click
    on a misplaced cell lands in the row above); one that did uses what it measured."""
    desktop, _ = calc
    whole = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=30.0)
    reference = whole.snapshot()
    assert labelled(reference, "button", "Bold") and _grid(reference) is not None
    assert reference.note is None
    hurried = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=30.0)
    try:
        with monkeypatch.context() as cap:
            cap.setattr(_tree_read, "MAX_NODES", 150)  # the walk stops before it can tell
            cut = hurried.snapshot()
        assert cut.note is not None and "not measured in time" in cut.note
        assert labelled(cut, "button", "File")  # the GTK menu bar is placed by GTK
        assert not labelled(cut, "button", "Bold") and _grid(cut) is None
        assert hurried.snapshot().note is None  # a whole read measured it, remembered
        hurried._trees.clear()  # read afresh, cut short again
        with monkeypatch.context() as cap:
            cap.setattr(_tree_read, "MAX_NODES", 150)
            again = hurried.snapshot()
        assert again.note is not None and "not measured" not in again.note
        for snapshot in (cut, again):  # what was read is where a whole read puts it
            placed = {(c.kind, c.label, c.box) for c in reference.components}
            assert {(c.kind, c.label, c.box) for c in snapshot.components if c.label} <= placed
    finally:
        hurried.close()
        whole.close()


@_needs("localc")
def test_a_scrolled_sheet_names_the_cells_it_shows_now(calc):
    desktop, source = calc
    grid = _grid(source.snapshot())
    assert grid is not None and grid.grid is not None and grid.grid.first_row == 1
    x, y = grid.center
    source.mark()
    desktop.execute(Scroll(x=x, y=y, scroll_y=5))
    assert source.wait_caught_up(timeout=30.0)
    scrolled = wait_for(source, lambda s: (g := _grid(s)) is not None and g.grid.first_row > 1)
    moved = _grid(scrolled)
    assert moved is not None and moved.grid is not None and moved.grid.first_row > 1
    first = moved.grid.span().split(":")[0]
    desktop.execute(Scroll(x=x, y=y, scroll_y=-5))
    wait_for(source, lambda s: (g := _grid(s)) is not None and g.grid.first_row == 1)
    assert first[0] == "A" and int(first[1:]) > 1


@_needs("localc")
def test_the_function_wizards_long_list_gives_the_functions_it_shows(calc):
    """Calc's Function Wizard lists ~500 functions in a tree table that manages its
    cells (no A1 names: no spreadsheet): the functions that show come out as
    components, and a click on one selects it."""
    desktop, source = calc
    source.mark()
    desktop.execute(Keypress(keys=["ctrl", "F2"]))
    try:
        wait_for(source, lambda s: bool(labelled(s, "button", "ACOS")))
        fresh = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=30.0)
        shown = fresh.snapshot()  # the whole tree read afresh, the list as it shows now
        fresh.close()
        names = [c.label for c in shown.components if c.kind == "button" and c.label]
        first = ["ABS", "ACCRINT", "ACCRINTM", "ACOS", "ACOSH", "ACOT", "ACOTH", "ADDRESS"]
        start = names.index("ABS")
        assert names[start : start + len(first)] == first, names  # in order, one by one
        assert "SUM" not in names and "ZTEST" not in names  # far below: not showing
        boxes = [labelled(shown, "button", name)[0].box for name in first]
        assert all(a[1] + a[3] <= b[1] + 1 for a, b in itertools.pairwise(boxes))
        acos = labelled(shown, "button", "ACOS")[0]
        source.mark()
        desktop.execute(Click(x=acos.center[0], y=acos.center[1]))
        assert source.wait_caught_up(timeout=30.0)
        after = wait_for(source, lambda s: "selected" in labelled(s, "button", "ACOS")[0].states)
        assert "selected" in labelled(after, "button", "ACOS")[0].states
    finally:
        desktop.execute(Keypress(keys=["escape"]))
        wait_for(source, lambda s: not labelled(s, "button", "Cancel"), limit=30)


@_needs("gnome-calculator")
def test_a_gtk4_app_without_collection_is_read_by_the_tree_walk():
    with VirtualDesktop(SCREEN, [App(["gnome-calculator"], timeout=60.0)]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5.0)
        snapshot = wait_for(source, lambda s: bool(labelled(s, "button", "=")))
        source.close()
        assert snapshot.note is None and snapshot.apps == 1
        assert all(c.source == "accessibility" for c in snapshot.components)
        for key in ("=", "7", "+", "−", "×", "÷", "(", ")"):
            assert len(labelled(snapshot, "button", key)) == 1, key
        # GTK 4 names an unnamed widget by its class: that is no label
        assert not [c for c in snapshot.components if (c.label or "").startswith("Gtk")]
        # enabled (GTK 4 says SENSITIVE, not ENABLED)
        assert "disabled" not in labelled(snapshot, "button", "7")[0].states
        seven = labelled(snapshot, "button", "7")[0]
        windows = desktop.desktop.visible_windows()
        assert any(
            w.x <= seven.center[0] < w.x + w.width and w.y <= seven.center[1] < w.y + w.height
            for w in windows
        )


@_needs("gnome-calculator")
@_needs("gtk3-widget-factory")
def test_a_hung_app_costs_its_own_tree_and_the_others_are_read():
    apps = [App(["gnome-calculator"], timeout=60.0), App(["gtk3-widget-factory"])]
    with VirtualDesktop(SCREEN, apps) as desktop:
        hung = desktop.pids[-1]  # the widget factory
        os.killpg(hung, signal.SIGSTOP)
        try:
            source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size)
            snapshot = wait_for(source, lambda s: bool(labelled(s, "button", "=")))
            source.close()
        finally:
            os.killpg(hung, signal.SIGCONT)
    assert labelled(snapshot, "button", "=")  # the calculator, read within the deadline
    assert not labelled(snapshot, "checkbox", "checkbutton")  # nothing of the factory
    assert snapshot.apps == 1
    assert snapshot.note is not None and "1 app(s) did not answer" in snapshot.note


@_needs("featherpad")
def test_a_qt_app_is_read_by_the_tree_walk():
    with VirtualDesktop(SCREEN, [App(["featherpad"], timeout=60.0)]) as desktop:
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5.0)
        snapshot = wait_for(source, lambda s: bool(labelled(s, "button", "Open")))
        source.close()
    assert snapshot.note is None and snapshot.apps == 1
    for menu in ("File", "Edit", "Options", "Search", "Help"):
        assert labelled(snapshot, "button", menu), menu
    for tool in ("New", "Open", "Save", "Find"):
        assert labelled(snapshot, "button", tool), tool
    assert "disabled" in labelled(snapshot, "button", "Save")[0].states  # nothing to save
    assert [c for c in snapshot.components if c.kind == "field" and "focused" in c.states]


def _cell_text(desktop: VirtualDesktop, *, row: int, column: int) -> str:
    """The text of a cell of LibreOffice's sheet, asked of the sheet itself."""
    from jeepney.io.blocking import open_dbus_connection

    from gui_harness.perception.tree._tree_walk import AppWalk

    assert desktop.accessibility_bus is not None
    connection = open_dbus_connection(desktop.accessibility_bus)
    try:
        pipeline = atspi.Pipeline(connection)
        apps: list[str] = []
        pipeline.send(
            atspi.call(atspi.REGISTRY, atspi.ROOT, atspi.ACCESSIBLE, "GetChildren"),
            lambda body: apps.extend(str(n) for n, _ in (body[0] if body else ())),
        )
        pipeline.run(time.monotonic() + 10)
        walk = AppWalk(pipeline, apps[0], {}, SCREEN)
        walk.start()
        pipeline.run(time.monotonic() + 30)
        (table,) = [e for e in walk.elements if e.grid is not None]
        cell: list[tuple[str, str]] = []
        pipeline.send(
            atspi.call(table.app, table.path, atspi.TABLE, "GetAccessibleAt", "ii", (row, column)),
            lambda body: cell.append((str(body[0][0]), str(body[0][1]))) if body else None,
        )
        pipeline.run(time.monotonic() + 10)
        text: list[str] = []
        pipeline.send(
            atspi.call(cell[0][0], cell[0][1], "org.a11y.atspi.Text", "GetText", "ii", (0, -1)),
            lambda body: text.append(str(body[0])) if body else None,
        )
        pipeline.run(time.monotonic() + 10)
        return text[0] if text else ""
    finally:
        connection.close()
