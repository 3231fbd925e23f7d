"""A web app of the second held-out set (issue 41) through bench_perception.py's web-app
harness end to end: Bottle serves its recipe form, headless Chromium renders it at
1280×800, the DOM truth holds its controls with the names a user reads, and
score_labels computes the bench's figures for the pixel path on it. No score is
asserted: the set is held out of tuning, its figures are docs/performance.md's."""

from __future__ import annotations

import shutil

import pytest

from gui_harness.perception import Component, detect_components

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("chromedriver") is None, reason="no chromedriver"),
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium"),
]


@pytest.fixture(scope="module")
def page():
    for name in ("selenium", "bottle"):
        pytest.importorskip(name, reason="needs the bench-apps dependency group")
    from tests.gui_harness.perception.webapps import SECOND_HELD_OUT, webapp_pages

    assert "bottle" in SECOND_HELD_OUT
    (page,) = webapp_pages(["bottle"], {"bottle": ["/new"]})
    return page


def test_the_app_serves_and_the_dom_truth_names_its_controls(page):
    assert page.task == "bottle /new"
    named = dict(zip(page.names, (kind for kind, _ in page.interactive), strict=True))
    # each control by the text drawn for it: a button's caption, a field's label
    assert named["Save recipe"] == "button:submit"
    assert named["Clear"] == "button:reset"
    assert named["Name"] == "input:text"
    assert named["Time (minutes)"] == "input:number"
    assert named["Ingredients, one a line"] == "textarea:textarea"
    assert named["Share with other cooks"] == "input:checkbox"
    assert {"Easy", "Medium", "Hard"} <= set(page.names)
    width, height = page.image.size
    assert (width, height) == (1280, 800)
    for _, (x, y, w, h) in page.interactive:  # clipped to the viewport, as drawn
        assert 0 <= x <= x + w <= width
        assert 0 <= y <= y + h <= height


def test_the_bench_scores_the_pixel_path_on_it(page):
    from tests.gui_harness.perception.webapps import score_labels

    total = len(page.interactive)
    found, right, named, wrong = score_labels(page, detect_components(page.image))
    assert 0 <= right <= named <= found <= total
    assert len(wrong) == total - right  # every element not labelled right is said why

    # the scorer itself: nothing found misses all; the truth found as drawn scores all
    assert score_labels(page, [])[:3] == (0, 0, 0)
    assert len(score_labels(page, [])[3]) == total
    exact = [
        Component(index=n, kind="button", box=box, label=name)
        for n, ((_, box), name) in enumerate(zip(page.interactive, page.names, strict=True), 1)
    ]
    assert score_labels(page, exact) == (total, total, total, [])
    renamed = [c if c.label != "Save recipe" else c.with_label("Delete") for c in exact]
    assert score_labels(page, renamed)[:3] == (total, total - 1, total - 1)


def test_a_third_held_out_app_drawn_by_script_is_read_once_drawn():
    """PyWebIO draws its pages in the browser from what its script sends after the page
    loads: the harness waits until they are drawn before it reads the truth."""
    pytest.importorskip("pywebio", reason="needs the bench-apps dependency group")
    from tests.gui_harness.perception.webapps import THIRD_HELD_OUT, webapp_pages

    assert "pywebio" in THIRD_HELD_OUT
    (page,) = webapp_pages(["pywebio"], {"pywebio": ["/?app=request"]})
    named = dict(zip(page.names, (kind for kind, _ in page.interactive), strict=True))
    assert named["Title"] == "input:text"
    assert named["Why this book?"] == "textarea:textarea"
    assert named["Send request"] == "button:submit"
    assert {"Hardback", "Paperback", "E-book", "By email", "By text message"} <= set(page.names)


def test_a_fourth_held_out_admin_kit_serves_from_its_own_process_logged_in():
    """django-unfold themes Django's admin in a child process of its own (Django's
    settings are one per process): the harness logs in through its login form and reads
    the truth of a change form by the names Unfold draws."""
    pytest.importorskip("unfold", reason="needs the bench-apps dependency group")
    from tests.gui_harness.perception.webapps import FOURTH_HELD_OUT, webapp_pages

    assert "unfold" in FOURTH_HELD_OUT
    (page,) = webapp_pages(["unfold"], {"unfold": ["/admin/library/book/add/"]})
    named = dict(zip(page.names, (kind for kind, _ in page.interactive), strict=True))
    assert named["Title:"] == "input:text"
    assert named["Summary:"] == "textarea:textarea"
    assert named["Save and add another"] == "button:submit"
    assert named["In print"] == "input:checkbox"
