"""A one-glyph button OCR does not read, on a real web page, pixels and OCR alone (the
tree switched off), in headless Chromium (issue 41): a stepper's minus ('−' or '-', in
a bordered button or a plain one) is labelled "-", as the tree path names a spin
button's part, beside the "+" OCR reads; on the old code it had no label."""

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

BASKET = """<!doctype html><html><head><meta charset="utf-8"><style>
body { font: 16px serif; margin: 30px 40px; }
.item { display: flex; align-items: center; gap: 10px; margin: 12px 0; }
.item span.name { width: 160px; }
.step { width: 28px; height: 28px; border: 1px solid #888; background: #f4f1ea;
  border-radius: 4px; font: 18px sans-serif; padding: 0; }
.qty { width: 24px; text-align: center; }
.bar button { width: 34px; height: 30px; font: 16px sans-serif; }
</style></head><body>
<h2>Basket</h2>
<div class="item"><span class="name">Apples</span><button class="step">&minus;</button>
<span class="qty">3</span><button class="step">+</button></div>
<div class="item"><span class="name">Brown bread</span><button class="step">-</button>
<span class="qty">1</span><button class="step">+</button></div>
<div class="item bar"><span class="name">Zoom</span><button>&minus;</button>
<button>+</button></div>
</body></html>"""


@pytest.fixture(scope="module")
def seen():
    return perceived_page(BASKET, "basket")


def test_each_stepper_button_is_labelled_by_its_glyph(seen):
    page, components = seen
    assert page.names == ("−", "+", "-", "+", "−", "+")
    labels = []
    for _, box in page.interactive:
        (hit,) = [c for c in components if clicks_on(c.box, box)]
        labels.append(hit.label)
    assert labels == ["-", "+", "-", "+", "-", "+"], components


def test_no_other_control_or_text_is_named_minus(seen):
    _, components = seen
    minus = [c for c in components if c.label == "-"]
    assert len(minus) == 3, components
    assert all(c.kind == "button" for c in minus), minus
