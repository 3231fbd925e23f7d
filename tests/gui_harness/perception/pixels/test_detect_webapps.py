"""The pixel path on real web apps of Python web frameworks (issue 35, item 6) in headless
Chromium, against the DOM: every visible clickable element of a Flask app's table page
(Bootstrap-Flask: an alert's close button, a row's view/edit/delete icons) and of a
FastAPI app's todo list and results table (rows ruled above and below, holding a check
box, a link and a button) has a component a click on whose centre lands on it.
Django's admin is held out of this tuning (benchmarks/bench_perception.py --webapps
django measures it)."""

from __future__ import annotations

import shutil

import pytest

from gui_harness.perception import detect_components
from tests.gui_harness.perception.screens import clicks_on

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("chromedriver") is None, reason="no chromedriver"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium"),
]

PAGES = {"flask": ["/items"], "fastapi": ["/", "/search?q=report"]}


@pytest.fixture(scope="module")
def pages():
    for name in ("selenium", "flask", "flask_wtf", "flask_bootstrap", "fastapi"):
        pytest.importorskip(name, reason='needs pip install "openprogram[bench]"')
    from tests.gui_harness.perception.webapps import webapp_pages

    return {page.task: page for page in webapp_pages(list(PAGES), PAGES)}


@pytest.mark.parametrize(
    "task", [f"{framework} {path}" for framework, paths in PAGES.items() for path in paths]
)
def test_every_clickable_element_of_a_web_apps_page_has_a_component_to_click(pages, task):
    page = pages[task]
    assert len(page.interactive) >= 20, page.interactive  # the page served and rendered
    found = detect_components(page.image)
    missed = [
        (kind, box)
        for kind, box in page.interactive
        if not any(clicks_on(c.box, box) for c in found)
    ]
    assert not missed, (missed, found)
