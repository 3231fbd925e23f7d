"""A text box captioned by a heading's bar above it (issue 41, the unseen-apps task set):
Poedit (wx) draws "Translation" in a grey bar over its translation box; the tree lists
the box, unnamed and uncaptioned, and no label; pixels took the bar for a field of its
own, labelled "Translation". "Click the Translation field" clicked the bar, the text
went to no box. The bar now captions the box and is the text it is. A real Poedit on
Xvfb, perceived as gui_agent does."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from gui_harness.agent import _accessibility
from gui_harness.bench.desktop_oracle import find_target
from gui_harness.bench.desktop_spec import Target
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Perception
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(shutil.which("poedit") is None, reason="scripts/setup.sh --dev installs it"),
]

_PO = """msgid ""
msgstr ""
"Language: de\\n"
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

msgid "Open file"
msgstr ""
"""


def test_a_heading_bar_captions_the_text_box_below_it(tmp_path: Path) -> None:
    catalogue = tmp_path / "de.po"
    catalogue.write_text(_PO, encoding="utf-8")
    home = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    app = App(["poedit", str(catalogue)], env=home, timeout=90.0)
    with VirtualDesktop((1280, 800), [app]) as desktop:
        source = _accessibility(desktop)
        assert source is not None
        perception = Perception(accessibility=source)
        try:
            deadline = time.monotonic() + 60  # the tree and OCR on a loaded machine
            while True:
                seen = perception.perceive(desktop.screenshot())
                box = find_target(Target(label="Translation", kind="field"), seen.components)
                if (box is not None and box.source == "accessibility") or (
                    time.monotonic() > deadline
                ):
                    break
                time.sleep(0.5)
        finally:
            perception.close()
            source.close()
    assert box is not None, seen.components
    assert box.source == "accessibility" and box.box[3] > 60, box  # the box, many lines
    bars = [c for c in seen.components if c.label == "Translation" and c.source == "pixels"]
    assert all(bar.kind == "text" for bar in bars), bars
