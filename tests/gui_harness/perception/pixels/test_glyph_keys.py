"""A calculator's keys labelled by the one symbol they draw (issue 41, the unseen-apps
task set): mate-calc's tree names its keys by what they do, "multiply", "divide",
"subtract", "result", "numeric_point", while they draw "×", "÷", "−", "=", "."; OCR
reads no line of text on a lone glyph (and "×" as the letter "x"), so a user's "×" was
found nowhere. A real mate-calc (GTK 3) on Xvfb, perceived as gui_agent does."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from gui_harness.agent import _accessibility
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Component, Perception
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(
        shutil.which("mate-calc") is None, reason="scripts/setup.sh --dev installs it"
    ),
]

_KEYS = {"×", "÷", "-", "=", ".", "+"}
_OTHERS = {"0", "1", "7", "9", "(", ")", "undo", "clear"}  # named by digits, words, OCR


def _buttons(components: tuple[Component, ...]) -> dict[str, Component]:
    return {(c.label or "").casefold(): c for c in components if c.kind == "button"}


def test_keys_that_draw_one_symbol_are_labelled_by_it(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    app = App(["mate-calc"], env=home, timeout=60.0)
    with VirtualDesktop((1280, 800), [app]) as desktop:
        source = _accessibility(desktop)
        assert source is not None
        perception = Perception(accessibility=source)
        try:
            deadline = time.monotonic() + 60  # the tree and OCR on a loaded machine
            while True:
                seen = perception.perceive(desktop.screenshot())
                buttons = _buttons(seen.components)
                # the keypad read, and the keys OCR names ("start_group" draws "(")
                ready = set(buttons) >= _OTHERS
                if (ready and set(buttons) >= _KEYS) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        finally:
            perception.close()
            source.close()
    assert ready, sorted(buttons)
    assert set(buttons) >= _KEYS, sorted(buttons)
    # the keys that draw digits and words keep their names; nothing else became a glyph
    assert set(buttons) >= _OTHERS, sorted(buttons)
    assert "multiply" not in buttons and "result" not in buttons
    glyphs = [c for c in seen.components if c.label in _KEYS]
    assert len(glyphs) == len(_KEYS), glyphs
