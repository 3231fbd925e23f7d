"""Captions by the one layout rule on a real web form, pixels and OCR alone (the tree
switched off), in headless Chromium (issue 41): each control carries the caption a user
reads beside it, whatever pixels take it for and whatever part of it a click lands on.

Classes, each failing on the old code: a column of captions standing further left of
their fields than a caption beside one (a form's label column); a control that draws no
word (a number field read as its value, a colour well) captioned as a field is; a part
of a captioned control (a date field's calendar button, a text area's resize grip)
taking its caption; a toggle drawn as a switch captioned by the text right of it; a
plain <select>, no divider before its caret, read as a drop-down and captioned."""

from __future__ import annotations

import shutil

import pytest

from tests.gui_harness.perception.webapps import perceived_page, score_labels

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromedriver") is None, reason="no chromedriver"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium"),
]

FORM = """<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 15px sans-serif; margin: 24px 40px; color: #222; }
.row { display: flex; align-items: center; margin: 10px 0; }
.row > label { width: 190px; }
input, select, textarea { font: 15px sans-serif; }
.switch { appearance: none; width: 36px; height: 20px; border-radius: 10px;
  background: #c7ccd4; position: relative; margin: 0 10px 0 0; }
.switch::after { content: ""; position: absolute; top: 2px; left: 2px; width: 16px;
  height: 16px; border-radius: 50%; background: white; }
.switch:checked { background: #2f6fdf; } .switch:checked::after { left: 18px; }
.box { appearance: none; width: 20px; height: 20px; border: 2px solid #6b7280;
  border-radius: 5px; margin: 0 10px 0 0; }
.stack label { display: block; margin: 14px 0 4px; }
</style></head><body>
<h2>Shipment</h2>
<div class="row"><label for="ref">Reference:</label><input id="ref" size="30"></div>
<div class="row"><label for="boxes">Boxes:</label>
<input id="boxes" type="number" value="4" style="width:70px"></div>
<div class="row"><label for="carrier">Carrier:</label>
<select id="carrier"><option>Road freight</option><option>Air</option></select></div>
<div class="row"><label for="ship">Ship on:</label>
<input id="ship" type="date" value="2026-12-09"></div>
<div class="row"><label for="tint">Label colour:</label>
<input id="tint" type="color" value="#2f6fdf"></div>
<div class="row"><input id="insured" class="switch" type="checkbox" checked>
<label for="insured">Insured</label></div>
<div class="row"><input id="fragile" class="box" type="checkbox">
<label for="fragile">Fragile goods</label></div>
<div class="stack"><label for="memo">Notes for the driver</label>
<textarea id="memo" rows="3" cols="50"></textarea></div>
<div class="row"><button>Save shipment</button></div>
</body></html>"""


@pytest.fixture(scope="module")
def seen():
    return perceived_page(FORM, "shipment")


def test_the_page_is_the_form(seen):
    page, _ = seen
    assert page.names == (
        "Reference:", "Boxes:", "Carrier:", "Ship on:", "Label colour:", "Insured",
        "Fragile goods", "Notes for the driver", "Save shipment",
    )  # fmt: skip


def test_every_control_carries_its_caption_where_a_click_lands(seen):
    page, components = seen
    found, right, _, wrong = score_labels(page, components)
    assert found == len(page.interactive), wrong
    assert right == len(page.interactive), wrong


def test_a_plain_select_is_a_drop_down_captioned_by_its_column(seen):
    _, components = seen
    dropdowns = [c for c in components if c.kind == "dropdown"]
    assert [(c.label, c.caption) for c in dropdowns] == [("Road freight", "Carrier:")]


def test_a_part_of_a_field_takes_its_caption(seen):
    _, components = seen
    (date,) = [c for c in components if c.caption == "Ship on:" and c.kind == "field"]
    parts = [
        c
        for c in components
        if c is not date
        and date.box[0] <= c.center[0] <= date.box[0] + date.box[2]
        and date.box[1] <= c.center[1] <= date.box[1] + date.box[3]
    ]
    assert parts, components  # the calendar button, found apart
    assert all(c.caption == "Ship on:" for c in parts), parts
