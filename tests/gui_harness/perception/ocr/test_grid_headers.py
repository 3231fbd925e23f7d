"""Naming a pixel grid after its headers: consecutive column letters and row numbers
name it; a data table's titles, a half-read header or a grid the app named leave it."""

from __future__ import annotations

import numpy as np

from gui_harness.perception.cells import Grid
from gui_harness.perception.component import Component
from gui_harness.perception.ocr import _grid_headers as headers

SHEET = Grid(columns=(0, 40, 120, 200, 280), rows=(0, 18, 35, 52, 69), header_rows=1,
             header_columns=1)  # fmt: skip


def _grid(source: str = "pixels") -> Component:
    return Component(1, "grid", (0, 0, 280, 69), None, 0.7, source=source, grid=SHEET)  # type: ignore[arg-type]


def test_consecutive_letters_and_numbers_name_the_first_cell() -> None:
    named = headers.named(_grid(), ["AB", "AC", "40", "41"])
    assert named.grid is not None and named.grid.name(0, 0) == "AB40"
    assert named.grid.span() == "AB40:AD42"


def test_ocr_lookalikes_in_row_numbers_are_read_as_digits() -> None:
    named = headers.named(_grid(), ["C", "D", "l0", "11"])
    assert named.grid is not None and named.grid.name(0, 0) == "C10"


def test_a_data_tables_titles_or_a_half_read_header_leave_the_grid_as_it_was() -> None:
    for texts in (["Qty", "Price", "1", "2"], ["C", "E", "4", "5"], ["C", "D", "4", None],
                  ["C", "D", "4", "4"], ["C", "D", "0", "1"]):  # fmt: skip
        assert headers.named(_grid(), texts).grid == SHEET, texts


def test_only_a_pixel_grid_with_both_headers_has_crops() -> None:
    grey = np.full((80, 300), 200, np.uint8)
    assert len(headers.crops(grey, _grid())) == 4
    assert headers.crops(grey, _grid("accessibility")) == []
    bare = Component(1, "grid", (0, 0, 280, 69), None, 0.7, grid=Grid((0, 40, 80), (0, 18, 35, 52)))
    assert headers.crops(grey, bare) == []
