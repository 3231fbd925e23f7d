"""A ruled web table's cells and a dark navbar's links on a real page, pixels and OCR
alone (the tree switched off), in headless Chromium (issue 41, Flask-Admin's list):

* the table is one grid, and what its cells hold is found too: the row check boxes,
  the view/edit/delete icon links (an eye wider than high among them), the sort links
  of its header, the values under a dashed underline ('12' one link, not '1' and '2');
  on the old code a cell's outline made it a field that swallowed all of it, and a
  striped table's first row and column were taken for headers;
* the links of a dark navbar (light words on a dark fill) are each a target, named by
  their words; on the old code the bar was one field holding nothing.
"""

from __future__ import annotations

import shutil

import pytest

from tests.gui_harness.perception.screens import clicks_on
from tests.gui_harness.perception.webapps import perceived_page

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromedriver") is None, reason="no chromedriver"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium"),
]

_EYE = (
    '<svg width="17" height="12" viewBox="0 0 17 12"><path d="M0 6C3 0 14 0 17 6C14 12 3 12 0 6Z'
    'M8.5 2.5A3.5 3.5 0 1 0 8.6 2.5Z" fill="#222" fill-rule="evenodd"/></svg>'
)
_PEN = (
    '<svg width="14" height="14" viewBox="0 0 14 14"><path d="M10 0L14 4L4 14H0V10Z" '
    'fill="#222"/></svg>'
)
_BIN = (
    '<svg width="12" height="14" viewBox="0 0 12 14"><path d="M0 1H4V0H8V1H12V3H0ZM1 4H11'
    'L10 14H2Z" fill="#222"/></svg>'
)
ROWS = [
    ("Claw hammer", "HM-01", 40), ("Wood screws", "SC-44", 500), ("Cordless drill", "DR-18", 12),
    ("Primer white", "PR-10", 65), ("Hex bolts", "HB-08", 320), ("Spirit level", "SL-60", 22),
]  # fmt: skip
ROW = (
    '<tr><td><input type="checkbox"></td><td class="acts"><a href="#">{eye}</a>'
    '<a href="#">{pen}</a><a href="#">{bin}</a></td><td>{name}</td><td>{sku}</td>'
    '<td><a class="editable" href="#">{stock}</a></td></tr>'
)
PAGE = (
    """<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 16px sans-serif; margin: 0; color: #212529; }
nav { background: #343a40; display: flex; align-items: center; padding: 8px 16px;
  margin: 0 40px; }
nav a { color: rgba(255,255,255,.55); text-decoration: none; padding: 10px 8px; }
nav a.brand { color: #fff; font-size: 20px; margin-right: 16px; }
nav a.active { color: #fff; }
main { margin: 20px 40px; }
table { border-collapse: collapse; width: 900px; }
td, th { border: 1px solid #dee2e6; padding: 12px; text-align: left; }
th { border-bottom: 2px solid #dee2e6; }
tbody tr:nth-of-type(odd) { background: rgba(0,0,0,.05); }
th a, td a { color: #007bff; text-decoration: none; }
td.acts a { margin-right: 4px; }
a.editable { border-bottom: 1px dashed #0088cc; }
</style></head><body>
<nav><a class="brand" href="#">Hardware store</a><a href="#">Home</a>
<a class="active" href="#">Products</a><a href="#">Suppliers</a></nav>
<main><h2>Products</h2>
<table><thead><tr><th><input type="checkbox"></th><th></th><th><a href="#">Name</a></th>
<th><a href="#">Sku</a></th><th><a href="#">Stock</a></th></tr></thead><tbody>"""
    + "".join(ROW.format(eye=_EYE, pen=_PEN, bin=_BIN, name=n, sku=s, stock=q) for n, s, q in ROWS)
    + "</tbody></table></main></body></html>"
)


@pytest.fixture(scope="module")
def seen():
    return perceived_page(PAGE, "products")


def _hits(components, box):  # type: ignore[no-untyped-def]
    return [c for c in components if clicks_on(c.box, box) and c.kind != "grid"]


def test_the_table_is_one_grid_of_six_rows_under_its_header(seen):
    _, components = seen
    (grid,) = [c for c in components if c.kind == "grid"]
    assert grid.grid is not None
    assert (len(grid.grid.rows) - 1, len(grid.grid.columns) - 1) == (7, 5), grid.grid
    # a striped table's white first row and first column are no headers
    assert (grid.grid.header_rows, grid.grid.header_columns) == (0, 0), grid.grid


def test_every_control_in_the_table_cells_has_a_component_of_its_own(seen):
    page, components = seen
    in_table = [(kind, box) for kind, box in page.interactive if box[1] > 120]
    # 7 check boxes, 6 rows of three icon links and a value link, 3 sort links
    assert len(in_table) == 7 + 6 * 4 + 3, page.interactive
    missing = [(kind, box) for kind, box in in_table if not _hits(components, box)]
    assert missing == [], components
    # three icon links a row, each a target of its own
    icons = [box for kind, box in in_table if kind == "a" and box[2] <= 24 and box[3] <= 24]
    for box in icons:
        (hit,) = [h for h in _hits(components, box) if h.kind != "text" or h.box[2] <= 24]
        assert hit.box[2] <= 24, hit


def test_values_under_a_dashed_underline_are_one_link_each(seen):
    page, components = seen
    for name, box in zip(page.names, (box for _, box in page.interactive), strict=True):
        if name in {str(q) for *_, q in ROWS}:
            (hit,) = _hits(components, box)
            assert hit.kind == "link" and hit.label == name, hit


def test_each_dark_navbar_link_is_a_target_named_by_its_words(seen):
    page, components = seen
    for name in ("Hardware store", "Home", "Products", "Suppliers"):
        box = dict(zip(page.names, (b for _, b in page.interactive), strict=False))[name]
        hits = _hits(components, box)
        assert hits, (name, components)
        smallest = min(hits, key=lambda c: c.box[2] * c.box[3])
        assert smallest.label == name, (name, smallest)
