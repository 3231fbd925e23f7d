"""Perception leaves an icon-only control of the tree unlabelled rather than labelled by
what OCR reads off its icon (issue #35: a magnifier read as 'Q', sidebar tab icons as
'国'); a named one, and pixel components, are read as before; a small unnamed one that
draws a word is read (issue 41)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import (
    AccessibilitySnapshot,
    AccessibilitySource,
    Component,
    Perception,
)
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader


def test_an_unnamed_icon_button_of_the_tree_is_not_labelled_by_ocr():
    image = np.full((200, 300, 3), 255, np.uint8)
    image[24:40, 24:40] = 40  # an icon in an icon-sized button
    image[24:40, 70:90] = 40  # and in a tab
    image[105:125, 160:200] = 60  # something drawn in a wide unnamed control of the tree
    worker = OcrWorker(lambda crop: "Q")
    try:
        perception = Perception(ocr=worker, first_look=5.0)
        tree = (
            Component(0, "button", (16, 16, 32, 32), None, 1.0, (), "accessibility"),
            Component(0, "tab", (60, 16, 40, 32), None, 1.0, (), "accessibility"),
            Component(0, "button", (146, 96, 148, 38), None, 1.0, (), "accessibility"),
        )
        seen = perception.perceive(
            image, accessibility=AccessibilitySnapshot(components=tree, screen=(300, 200))
        )
        by_box = {c.box: c.label for c in seen.components}
        assert by_box[(16, 16, 32, 32)] is None
        assert by_box[(60, 16, 40, 32)] is None
        assert by_box[(146, 96, 148, 38)] == "Q"  # wide: may hold text, read as before
    finally:
        worker.close()


_SMALL_HEADS = """
import sys
import gi
gi.require_version('Gtk', '3.0')
gi.require_version('Gdk', '3.0')
from gi.repository import Gdk, Gtk
css = Gtk.CssProvider()
css.load_from_data(b'button { padding: 2px 4px; min-width: 0; min-height: 0; }')
Gtk.StyleContext.add_provider_for_screen(Gdk.Screen.get_default(), css, 600)
window = Gtk.Window(title='Heads')
window.set_default_size(420, 200)
row = Gtk.Box(spacing=6, margin=12)
for picture in sys.argv[1:]:  # a word drawn as a picture: the tree has no text of it
    button = Gtk.Button()
    button.add(Gtk.Image.new_from_file(picture))
    row.pack_start(button, False, False, 0)
icon = Gtk.Button.new_from_icon_name('emblem-system-symbolic', Gtk.IconSize.BUTTON)
row.pack_start(icon, False, False, 0)
outer = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
outer.pack_start(row, False, False, 0)
window.add(outer)
window.connect('destroy', Gtk.main_quit)
window.show_all()
Gtk.main()
"""


def _has_gtk3() -> bool:
    code = (
        "import gi; gi.require_version('Gtk', '3.0'); gi.require_version('Gdk', '3.0'); "
        "from gi.repository import Gtk"
    )
    run = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True)
    return run.returncode == 0


@pytest.mark.x11
@pytest.mark.skipif(not _has_gtk3(), reason="no GTK 3 for /usr/bin/python3")
@pytest.mark.skipif(rapidocr_reader() is None, reason="rapidocr-onnxruntime is not installed")
def test_a_small_unnamed_control_of_the_tree_that_draws_a_word_is_read(tmp_path: Path) -> None:
    """An icon-sized unnamed button that draws a short word (GTK 4's column view heads,
    "Icon", "Name") is labelled by it: its ink is a line of letters, not one mark; the
    icon button beside it is still not read (it is named by its icon, or not at all).
    A real GTK 3 window on Xvfb, its tree and RapidOCR."""
    font = ImageFont.truetype("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", 12)
    words = ("Cool", "Nick", "Mode")
    pictures = []
    for word in words:
        right = int(font.getbbox(word)[2])
        picture = Image.new("RGBA", (right + 2, 15), (0, 0, 0, 0))
        ImageDraw.Draw(picture).text((1, 0), word, font=font, fill=(40, 40, 40, 255))
        picture.save(tmp_path / f"{word}.png")
        pictures.append(str(tmp_path / f"{word}.png"))
    script = tmp_path / "heads.py"
    script.write_text(_SMALL_HEADS)
    app = App(["/usr/bin/python3", str(script), *pictures], timeout=60.0)
    with VirtualDesktop((800, 500), [app]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        worker = OcrWorker()
        try:
            perception = Perception(accessibility=source, ocr=worker)
            deadline = time.monotonic() + 60
            while True:  # until the tree shows the four buttons and OCR has read them
                seen = perception.perceive(d.screenshot())
                small = [
                    c
                    for c in seen.components
                    if c.source == "accessibility" and c.kind == "button" and c.box[2] <= 48
                ]
                labels = [c.label for c in sorted(small, key=lambda c: c.box[0])]
                if labels[:3] == list(words) or time.monotonic() > deadline:
                    break
                worker.wait_idle(timeout=10)
        finally:
            worker.close()
            source.close()
    assert len(labels) == 4 and labels[:3] == list(words), labels
    assert labels[3] in (None, "Settings"), labels  # its icon's meaning, or nothing
