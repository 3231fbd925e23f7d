"""Cells of a grid component: names to boxes and points (cells.py), and a grid's place
in a component's dict and description."""

from __future__ import annotations

import json

import pytest

from gui_harness.errors import InvalidAction
from gui_harness.perception import Component, Grid, cell_point, describe
from gui_harness.perception.cells import cell_box, column_name

# a sheet with a header row (A, B, C) and a header column (1, 2): 3 x 2 body cells
SHEET = Grid(
    columns=(0, 40, 120, 200, 280), rows=(100, 120, 140, 160), header_rows=1, header_columns=1
)


def test_column_names_run_like_a_spreadsheets():
    assert [column_name(i) for i in (0, 1, 25, 26, 27, 51, 52, 701, 702)] == [
        "A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA",
    ]  # fmt: skip


def test_a1_names_address_body_cells_after_the_headers():
    assert SHEET.shape == (2, 3)
    assert SHEET.span() == "A1:C2"
    assert cell_box(SHEET, "A1") == (40, 120, 80, 20)
    assert cell_box(SHEET, "c2") == (200, 140, 80, 20)
    assert cell_box(SHEET, "R2C3") == cell_box(SHEET, "C2") == cell_box(SHEET, (1, 2))


def test_a_scrolled_sheet_names_its_first_visible_cell_after_its_headers():
    scrolled = Grid(SHEET.columns, SHEET.rows, 1, 1, first_column=3, first_row=11)
    assert scrolled.span() == "D11:F12"
    assert cell_box(scrolled, "E12") == (120, 140, 80, 20)
    with pytest.raises(InvalidAction, match="D11:F12"):
        cell_box(scrolled, "A1")


def test_a_cell_off_screen_or_a_malformed_name_says_what_is_valid():
    with pytest.raises(InvalidAction, match="not on screen; the grid shows A1:C2"):
        cell_box(SHEET, "D1")
    with pytest.raises(InvalidAction, match="no cell name"):
        cell_box(SHEET, "third row")
    with pytest.raises(InvalidAction, match="not on screen"):
        cell_box(SHEET, (-1, 0))


def test_a_grid_component_round_trips_and_its_cells_resolve_from_either_form():
    grid = Component(7, "grid", (0, 100, 280, 60), grid=SHEET)
    data = json.loads(json.dumps(grid.to_dict()))
    assert data["grid"]["columns"] == [0, 40, 120, 200, 280]
    assert Component.from_dict(data) == grid
    assert grid.cell_point("B2") == cell_point(data, "B2") == (160, 150)
    plain = Component(3, "field", (0, 0, 50, 20))
    assert "grid" not in plain.to_dict()
    with pytest.raises(InvalidAction, match="#3 is no grid"):
        cell_point(plain, "A1")
    with pytest.raises(InvalidAction, match="#3 is no grid"):
        cell_point(plain.to_dict(), "A1")


def test_the_planner_reads_which_cells_a_grid_shows():
    text = describe([Component(7, "grid", (0, 100, 280, 60), grid=SHEET)])
    assert text == "#7 grid at (0, 100, 280x60) cells A1:C2 (3 columns, 2 rows)"
