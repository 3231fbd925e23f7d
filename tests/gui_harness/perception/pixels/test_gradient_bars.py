"""A gradient's band is no border (issue 41): the JDK's Notepad demo (Swing, Metal) fills
its menu bar with a gradient that darkens 3 grey levels a row; the low-threshold edge
pass marked one of its bands as a line, which with the window's frame and the bar's top
made a 498×10 "field" over the menu bar, first in reading order, before the text area
the Java accessibility bridge reports. A planner that clicked "the field" to write
clicked it, and the text went nowhere. A box with a side that is only a band is no
field: the first field is the text area, and typing there writes."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from gui_harness.actions import Click, Type
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Component
from gui_harness.perception.ocr.ocr_worker import rapidocr_reader
from tests.gui_harness.perception.pixels.test_swing_pixels import Look, looking_at, until

NOTEPAD = Path("/usr/lib/jvm/java-17-openjdk-amd64/demo/jfc/Notepad/Notepad.jar")

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(
        shutil.which("java") is None or not NOTEPAD.exists(),
        reason="no Java runtime or no JDK demos (openjdk-17-demo)",
    ),
]


@pytest.fixture(scope="module")
def notepad(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VirtualDesktop, Look]]:
    """Notepad on its own Xvfb screen, and a fresh look at it as gui_agent's: its tree
    (through Debian's ATK wrapper, when installed), pixels and OCR."""
    home = tmp_path_factory.mktemp("notepad")
    app = App(["java", "-jar", str(NOTEPAD)], timeout=90.0, env={"HOME": str(home)})
    with looking_at(app, tree=True) as seen:
        yield seen


def _menu_bar(seen: list[Component]) -> tuple[int, int] | None:
    """The rows (top, bottom) of the menu bar's File and Edit, once both are read."""
    menus = [c for c in seen if c.label in ("File", "Edit")]
    if len(menus) != 2:
        return None
    return min(c.box[1] for c in menus), max(c.box[1] + c.box[3] for c in menus)


def test_no_field_over_notepads_gradient_menu_bar(notepad):
    _, look = notepad
    seen = until(look, lambda s: _menu_bar(s) is not None, limit=60.0)
    bar = _menu_bar(seen)
    assert bar is not None, seen
    top, bottom = bar
    over = [
        c for c in seen if c.kind == "field" and c.box[1] < bottom and c.box[1] + c.box[3] > top
    ]
    assert not over, over


def test_the_first_field_is_notepads_text_area_and_takes_typing(notepad):
    desktop, look = notepad
    seen = until(look, lambda s: _menu_bar(s) is not None, limit=60.0)
    fields = [c for c in seen if c.kind == "field"]
    if not any(c.source == "accessibility" for c in fields):
        pytest.skip("no tree from Notepad: Debian's ATK wrapper (libatk-wrapper-java) is off")
    first = fields[0]  # what a planner told to write in "the field" clicks
    assert first.box[2] >= 300 and first.box[3] >= 300, first  # the text area
    reader = rapidocr_reader()
    assert reader is not None
    x, y, _, _ = first.box

    def written() -> str:  # the text area's first line, read off the screen
        desktop.wait_settled(timeout=10.0)
        grey = np.asarray(desktop.screenshot().convert("L"))
        return reader(grey[y + 1 : y + 24, x + 1 : x + 300])

    for _ in range(3):  # a busy JVM can drop a click: click and type again (text adds up)
        desktop.execute(Click(x=first.center[0], y=first.center[1]))
        desktop.wait_settled(timeout=10.0)
        desktop.execute(Type(text="Shopping list"))
        deadline = time.monotonic() + 30.0
        while time.monotonic() < deadline:
            if "Shopping" in written():
                return
    pytest.fail(f"the text went nowhere: the text area reads {written()!r}")
