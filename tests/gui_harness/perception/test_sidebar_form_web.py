"""A sidebar of links beside a form captioned above, on a real page, pixels and OCR
alone (the tree switched off), in headless Chromium (issue 41, Bottle's recipe form):

* each field takes the caption above it, not the sidebar link on its row 200 px left
  (the column rule took 'Soups' and 'Baking' for 'Name' and 'Time (minutes)': the
  sidebar's links and the form's fields stand in two columns);
* a bold serif 'All' is read 'All': the serifs at its letters' feet are no underline
  to paint over (it was read 'A11').
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

PAGE = """<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 15px/1.45 Georgia, 'DejaVu Serif', serif; margin: 0; background: #faf6ee;
  color: #3a2a1a; display: flex; }
aside { width: 190px; padding: 40px 28px; }
aside a { display: block; padding: 5px 8px; color: #3a2a1a; text-decoration: none;
  border-left: 3px solid transparent; }
aside a.on { background: #f3e3cf; border-left-color: #c8612b; font-weight: bold; }
form { margin: 40px 0; padding: 20px; border: 1px solid #e0d6c4; background: #fffdf8;
  width: 820px; }
label { display: block; font-weight: bold; margin: 14px 0 4px; }
input { width: 800px; font: 16px serif; padding: 6px; border: 1px solid #bba; }
</style></head><body>
<aside><a class="on" href="#">All</a><a href="#">Breakfast</a><a href="#">Soups</a>
<a href="#">Mains</a><a href="#">Baking</a><a href="#">Desserts</a></aside>
<form><label for="n">Name</label><input id="n" placeholder="Grandma's apple cake">
<label for="t">Time (minutes)</label><input id="t" type="number" value="45">
<label for="s">Serves</label><input id="s" type="number" value="4"></form>
</body></html>"""


@pytest.fixture(scope="module")
def seen():
    return perceived_page(PAGE, "recipe")


def _at(page, components, name):  # type: ignore[no-untyped-def]
    box = dict(zip(page.names, (b for _, b in page.interactive), strict=True))[name]
    hits = [c for c in components if clicks_on(c.box, box)]
    assert hits, (name, components)
    return min(hits, key=lambda c: c.box[2] * c.box[3])


def test_each_field_takes_the_caption_above_it_not_the_sidebar_link_on_its_row(seen):
    page, components = seen
    for name in ("Name", "Time (minutes)", "Serves"):
        field = _at(page, components, name)
        assert field.kind == "field" and field.caption == name, (name, field)


def test_a_bold_serif_all_is_read_all(seen):
    page, components = seen
    assert _at(page, components, "All").label == "All"
    assert _at(page, components, "Soups").label == "Soups"
