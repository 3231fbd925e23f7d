"""Grids and toolbars on real screenshots, pixels only (issue 23): a Tk app with a ruled
table and a toolbar of flat icon buttons (grid_app.py), and LibreOffice Calc. A grid is
one component whose cells resolve to the right points, checked by clicking them and
reading back which cell the app saw; toolbar icons are buttons of their own; the
component cap keeps menus, toolbars and dialog buttons."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gui_harness import Click, Keypress, Scroll, VirtualDesktop
from gui_harness.desktop.virtual import App
from gui_harness.perception import Component, Perception, detect_components

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.heavy_app,  # LibreOffice Calc
]

GRID_APP = Path(__file__).with_name("grid_app.py")


def _inside(point: tuple[int, int], box: list[int] | tuple[int, int, int, int]) -> bool:
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


def _wait_for(condition, what: str, timeout: float = 20.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not happen within {timeout} s")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def tk_app(tmp_path_factory) -> Iterator[tuple[VirtualDesktop, Path]]:
    pytest.importorskip("tkinter")
    state = tmp_path_factory.mktemp("grid") / "state.json"
    app = App([sys.executable, str(GRID_APP), str(state)], ready=state.exists)
    with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:
        yield desktop, state


def _clicks(state: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(state.read_text())


def _click_and_read(desktop: VirtualDesktop, state: Path, point: tuple[int, int]) -> object:
    before = _clicks(state)["clicks"]
    desktop.execute(Click(x=point[0], y=point[1]))
    return _wait_for(
        lambda: (s := _clicks(state))["clicks"] > before and s["last"], f"a click at {point}"
    )


def test_a_ruled_table_is_one_grid_whose_cells_are_where_the_app_has_them(tk_app):
    desktop, state = tk_app
    components = Perception(ocr=False).perceive(desktop.screenshot()).components
    grids = [c for c in components if c.kind == "grid"]
    assert len(grids) == 1, components
    grid = grids[0]
    assert grid.grid is not None
    assert grid.grid.shape == (24, 6)
    assert grid.grid.header_rows == 1  # the grey title row
    assert not [c for c in components if c.kind == "field" and _inside(c.center, grid.box)]
    for name, expected in (("A1", [0, 0]), ("B3", [2, 1]), ("F24", [23, 5]), ("R10C4", [9, 3])):
        assert _click_and_read(desktop, state, grid.cell_point(name)) == ["cell", *expected]


def test_toolbar_icons_are_buttons_each_on_its_own_icon(tk_app):
    desktop, state = tk_app
    components = detect_components(desktop.screenshot())
    toolbar = _clicks(state)["toolbar"]
    for icon, box in toolbar.items():
        hits = [c for c in components if c.kind in ("button", "icon") and _inside(c.center, box)]
        assert len(hits) == 1, (icon, box, hits)
        assert _click_and_read(desktop, state, hits[0].center) == icon


def test_the_cap_keeps_menus_toolbar_and_dialog_buttons_before_repetitive_content(tk_app):
    desktop, state = tk_app
    image = desktop.screenshot()
    everything = detect_components(image)
    capped = detect_components(image, max_components=21)
    assert len(capped) == 21 < len(everything)
    kept = {c.box for c in capped}
    geometry = _clicks(state)
    toolbar_top = min(y for _, y, _, _ in geometry["toolbar"].values())
    table_bottom = geometry["table"][1] + 25 * geometry["table"][2]
    # File, Edit, View, Help: the row just above the toolbar (a title bar may be above it)
    menus = [c for c in everything if toolbar_top - 40 < c.box[1] < toolbar_top - c.box[3]]
    dialog = [c for c in everything if c.kind == "button" and c.box[1] > table_bottom]
    assert len(menus) == 4 and len(dialog) == 2  # OK, Cancel
    assert all(c.box in kept for c in menus + dialog), capped
    for box in geometry["toolbar"].values():
        assert [c for c in capped if c.kind in ("button", "icon") and _inside(c.center, box)]


# --- LibreOffice Calc -----------------------------------------------------------------


def _calc(home: Path, sheet: Path) -> App:
    return App(
        [
            "localc",
            "--norestore",
            "--nologo",
            f"-env:UserInstallation={home.as_uri()}",
            "--infilter=CSV:44,34,76,1",
            str(sheet),
        ],
        env={"SAL_USE_VCLPLUGIN": "gen"},
        timeout=90,
    )


def _clipboard(display: str) -> str:
    """The X clipboard's text, read by a Tk client on `display`."""
    code = "import tkinter; r = tkinter.Tk(); r.withdraw(); print(r.clipboard_get(), end='')"
    done = subprocess.run(
        [sys.executable, "-c", code], env={"DISPLAY": display, "PATH": "/usr/bin:/bin"},
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    return done.stdout


@pytest.mark.skipif(shutil.which("localc") is None, reason="LibreOffice Calc is not installed")
def test_calcs_sheet_is_one_grid_whose_cells_click_where_calc_has_them(tmp_path):
    # every cell holds its own name, so copying the active cell says which one it is
    sheet = tmp_path / "names.csv"
    sheet.write_text(
        "\n".join(",".join(f"{c}{r}" for c in "ABCDEFGHIJ") for r in range(1, 31)) + "\n"
    )
    calc = _calc(tmp_path / "profile", sheet)
    with VirtualDesktop((1280, 800), [calc], accessibility=False) as desktop:
        perception = Perception(ocr=False)

        def settled_grid() -> tuple[Component, list[Component]] | None:
            components = list(perception.perceive(desktop.screenshot()).components)
            grids = [c for c in components if c.kind == "grid"]
            again = perception.perceive(desktop.screenshot()).components
            if len(grids) == 1 and [c.box for c in again] == [c.box for c in components]:
                return grids[0], components
            return None

        grid, components = _wait_for(settled_grid, "Calc's sheet on screen", timeout=90)
        assert grid.grid is not None
        assert (grid.grid.header_rows, grid.grid.header_columns) == (1, 1)
        assert grid.grid.shape[0] >= 30 and grid.grid.shape[1] >= 10
        assert len(components) <= 200
        # the toolbars' icons are buttons of their own, above the sheet, with the menu bar
        top = [c for c in components if c.box[1] + c.box[3] <= grid.box[1]]
        assert sum(c.kind == "button" and c.box[2] <= 40 for c in top) >= 30, top
        small = [c.box[1] for c in top if c.kind == "button" and c.box[2] <= 40]
        icons = min(y for y in small if sum(abs(y - o) <= 3 for o in small) >= 10)  # a toolbar
        menus = [c for c in top if c.box[1] + c.box[3] <= icons + 2 and c.box[1] > icons - 30]
        assert len(menus) >= 8, top  # File, Edit, View, ... Help
        for name in ("B3", "A1", "H17", "J30"):
            desktop.execute(Click(x=grid.cell_point(name)[0], y=grid.cell_point(name)[1]))
            desktop.execute(Keypress(keys=["ctrl", "c"]))
            assert desktop.display is not None
            _wait_for(lambda name=name: _clipboard(desktop.display).strip() == name, name)
        # scrolled down and right, the sheet names its cells after its own headers (read
        # by OCR), not from A1: the cell called D23 is D23
        desktop.execute(Scroll(x=grid.center[0], y=grid.center[1], scroll_y=6, scroll_x=2))
        reader = Perception()  # with OCR, which reads the headers

        def scrolled() -> Component | None:
            seen = [c for c in reader.perceive(desktop.screenshot()).components if c.grid]
            if len(seen) != 1 or seen[0].grid is None:
                return None
            grid = seen[0].grid  # both scrolls drawn (Calc may draw one before the other)
            return seen[0] if grid.first_row > 1 and grid.first_column > 0 else None

        moved = _wait_for(scrolled, "the scrolled sheet named after its headers", timeout=60)
        assert moved.grid is not None
        name = moved.grid.name(3, 1)
        assert name[0] > "A" and int(name[1:]) > 4, name
        desktop.execute(Click(x=moved.cell_point(name)[0], y=moved.cell_point(name)[1]))
        desktop.execute(Keypress(keys=["ctrl", "c"]))
        _wait_for(lambda: _clipboard(desktop.display).strip() == name, f"{name} copied")
