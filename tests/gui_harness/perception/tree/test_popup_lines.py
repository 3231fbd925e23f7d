"""A text line never goes from one window into another (issue 41): Tk's Options menu in
IDLE opens over the shell's text, and its first item, highlighted, breaks the popup's
side, so detection joined it with the text beside it into one line, read "(ma: Configure
IDLE": no "Configure IDLE" to click. The desktop's window list says where the popup's
sides are; the line is cut there."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from tests.gui_harness.perception.pixels.test_swing_pixels import (
    Look,
    click_until,
    looking_at,
    until,
)

IDLE = shutil.which("idle-python3.11") or shutil.which("idle3") or shutil.which("idle")

pytestmark = [pytest.mark.x11, pytest.mark.skipif(IDLE is None, reason="IDLE is not installed")]


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VirtualDesktop, Look]]:
    """IDLE's shell on its own Xvfb screen with its bus (Tk publishes no tree, but the
    desktop lists its windows), and a fresh look as gui_agent's."""
    assert IDLE is not None
    home = tmp_path_factory.mktemp("idle")
    with looking_at(App([IDLE], timeout=60.0, env={"HOME": str(home)}), tree=True) as seen:
        yield seen


def test_a_popup_menus_item_is_not_joined_with_the_text_under_it(idle):
    desktop, look = idle
    seen = until(look, lambda s: any(c.label == "Options" for c in s), limit=60.0)
    (options,) = [c for c in seen if c.label == "Options"]
    seen = click_until(
        desktop, look, options, lambda s: any("Zoom Height" in (c.label or "") for c in s)
    )
    seen = until(look, lambda s: any(c.label == "Configure IDLE" for c in s), limit=30.0)
    assert any(c.label == "Configure IDLE" for c in seen), [(c.label, c.box) for c in seen]
