"""Underlined links read by OCR on a real web page, pixels alone (the tree switched
off), in headless Chromium (issue 41): a link's underline joined its words into one
blob, and OCR read the line under a space as '_' ('Weekly_report') or dropped the
space; the underline is painted over before the crop is read (ocr_worker's
_without_underline). Fails on the old code (3 of 5 read right)."""

from __future__ import annotations

import shutil

import pytest

from tests.gui_harness.perception.webapps import perceived_page, score_labels

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromedriver") is None, reason="no chromedriver"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium"),
]

REPORTS = """<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 15px sans-serif; margin: 30px 40px; } li { margin: 10px 0; }
</style></head><body><h2>Reports</h2><ul>
<li><a href="#a">Quarterly report draft</a></li>
<li><a href="#b">Weekly report</a></li>
<li><a href="#c">Monthly sales summary</a></li>
<li><a href="#d">Open tickets by team</a></li>
<li><a href="#e">Archived reports</a></li>
</ul></body></html>"""


def test_underlined_links_read_as_their_words():
    page, components = perceived_page(REPORTS, "reports")
    links = [c.label for c in components if c.kind == "link"]
    assert links and not [label for label in links if label is None or "_" in label], links
    found, right, _, wrong = score_labels(page, components)
    assert found == right == len(page.interactive) == 5, wrong
