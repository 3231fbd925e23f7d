"""Sliders on a real page, pixels and OCR alone (the tree switched off), in headless
Chromium (issue 41, Bottle's and PyWebIO's range inputs): a range input is one control
across its track, captioned by the text above the track's start; on the old code its
thumb alone was found (an icon, or a text line with the track's filled part), with no
caption, as the caption stands above the track's start, not above the thumb."""

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
body { font: 15px sans-serif; margin: 40px; background: #fbf8f1; color: #333; }
label { display: block; font-weight: bold; margin: 22px 0 6px; }
input.wide { width: 700px; accent-color: #0d6efd; }
p { margin: 22px 0; }
</style></head><body>
<label for="s">Spiciness</label><input id="s" type="range" min="0" max="10" value="2">
<label for="p">Priority</label><input id="p" class="wide" type="range" value="60">
<label for="v">Volume</label><input id="v" type="range" value="80">
<p>Move the sliders to set the recipe.</p>
</body></html>"""


@pytest.fixture(scope="module")
def seen():
    return perceived_page(PAGE, "sliders")


def test_each_range_input_is_one_control_across_its_track_captioned_above(seen):
    page, components = seen
    assert page.names == ("Spiciness", "Priority", "Volume")
    for (_, box), name in zip(page.interactive, page.names, strict=True):
        hits = [c for c in components if clicks_on(c.box, box)]
        assert hits, (name, components)
        slider = min(hits, key=lambda c: c.box[2] * c.box[3])
        assert slider.caption == name, (name, slider)
        # across the track: from its start to its end, not the thumb alone
        assert slider.box[2] >= 0.8 * box[2], (name, slider, box)


def test_a_line_of_text_is_no_slider(seen):
    _, components = seen
    (line,) = [c for c in components if c.label and c.label.startswith("Move the")]
    assert line.kind == "text"
