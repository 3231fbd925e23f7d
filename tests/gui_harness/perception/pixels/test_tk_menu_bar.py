"""A Tk menu bar read from pixels alone (issue 41): Tk publishes no accessibility tree, so
IDLE's menu bar is what detection and OCR make of it. Tk draws the bar as a raised 3-D
relief (lit top edge, shaded bottom one) spanning its window; its inside is the window's
grey, light enough to pass for an entry's, so the whole bar was one field labelled
"File Edit Shell Debug Options Window Help", with no "File" or "Options" to click. A
raised relief is no field: the bar is split into its items, each a button."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from itertools import pairwise

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Component
from tests.gui_harness.perception.pixels.test_swing_pixels import (
    Look,
    click_until,
    looking_at,
    until,
)

IDLE = shutil.which("idle-python3.11") or shutil.which("idle3") or shutil.which("idle")

pytestmark = [pytest.mark.x11, pytest.mark.skipif(IDLE is None, reason="IDLE is not installed")]

MENUS = ["File", "Edit", "Shell", "Debug", "Options", "Window", "Help"]


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VirtualDesktop, Look]]:
    """IDLE's shell on its own Xvfb screen, and a fresh look at it (pixels and OCR)."""
    assert IDLE is not None
    home = tmp_path_factory.mktemp("idle")
    with looking_at(App([IDLE], timeout=60.0, env={"HOME": str(home)}), tree=False) as seen:
        yield seen


def _menus(seen: list[Component]) -> list[Component]:
    """The components labelled by a menu's name, left to right."""
    return sorted((c for c in seen if c.label in MENUS), key=lambda c: c.box[0])


def test_idles_menu_bar_is_one_button_per_menu(idle):
    _, look = idle
    seen = until(look, lambda s: len(_menus(s)) == len(MENUS), limit=60.0)
    menus = _menus(seen)
    assert [c.label for c in menus] == MENUS, seen
    assert all(c.kind == "button" for c in menus), menus
    # side by side on one row, none over another, and no field over the bar
    assert all(a.box[0] + a.box[2] <= b.box[0] for a, b in pairwise(menus))
    top, bottom = min(c.box[1] for c in menus), max(c.box[1] + c.box[3] for c in menus)
    over = [
        c for c in seen if c.kind == "field" and c.box[1] < bottom and c.box[1] + c.box[3] > top
    ]
    assert not over, over


def test_clicking_idles_options_button_opens_its_menu(idle):
    desktop, look = idle
    seen = until(look, lambda s: any(c.label == "Options" for c in s), limit=60.0)
    (options,) = [c for c in seen if c.label == "Options"]
    click_until(
        desktop, look, options, lambda s: any("Configure IDLE" in (c.label or "") for c in s)
    )
