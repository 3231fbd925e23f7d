"""Text in custom-drawn tiles (issue 41): a grid of ~95×80 px tiles, each with its name
centred on two lines and no accessible children, drawn by a real Tk canvas on Xvfb. OCR
read a tile's crop as one line and gave nothing, or one word; it now reads each line
(_lines.py) and joins them."""

from __future__ import annotations

import json
import time

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader

pytestmark = [pytest.mark.x11]

NAMES = [
    "Display Settings", "Power Manager", "Mouse Touchpad", "Window Manager",
    "Color Profiles", "Removable Drives", "Session Startup", "Keyboard Layout",
    "Default Apps", "Accessibility Tools", "Printer Queue", "Screen Saver",
]  # fmt: skip

TILES = """
import json, sys, tkinter as tk
NAMES = %r
root = tk.Tk()
root.geometry("640x220+0+0")
canvas = tk.Canvas(root, width=640, height=200, bg="#f6f5f4", highlightthickness=0)
canvas.pack()
for i, name in enumerate(NAMES):
    x, y = 12 + i %% 6 * 100, 12 + i // 6 * 90
    chosen = i == 3  # the selected tile: white on blue
    canvas.create_rectangle(x, y, x + 95, y + 80, fill="#3584e4" if chosen else "#ffffff",
                            outline="#3584e4" if chosen else "#c0bfbc")
    canvas.create_text(x + 47, y + 40, text=name.replace(" ", "\\n"), justify="center",
                       font=("DejaVu Sans", 9), fill="#ffffff" if chosen else "#241f31")

def save():
    ox, oy = canvas.winfo_rootx(), canvas.winfo_rooty()
    boxes = {n: [ox + 12 + i %% 6 * 100, oy + 12 + i // 6 * 90, 95, 80]
             for i, n in enumerate(NAMES)}
    json.dump(boxes, open(sys.argv[1], "w"))

root.after(300, save)
root.mainloop()
"""


def test_a_tile_s_two_line_name_is_read_whole(tmp_path):
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    script, state = tmp_path / "tiles.py", tmp_path / "tiles.json"
    script.write_text(TILES % (NAMES,))
    app = App(["/usr/bin/python3", str(script), str(state)], timeout=60.0)
    with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:
        deadline = time.monotonic() + 30
        while not state.exists():
            assert time.monotonic() < deadline, "the tiles were never drawn"
            time.sleep(0.1)
        desktop.wait_settled(timeout=5.0)
        image = desktop.screenshot()
    boxes = json.loads(state.read_text())
    worker = OcrWorker(reader)
    try:
        seen = Perception(ocr=worker, first_look=60.0).perceive(image)
    finally:
        worker.close()
    read = {}
    for name, (x, y, w, h) in boxes.items():
        centre = (x + w // 2, y + h // 2)
        under = [
            c
            for c in seen.components
            if c.box[0] <= centre[0] < c.box[0] + c.box[2]
            and c.box[1] <= centre[1] < c.box[1] + c.box[3]
        ]
        assert under, f"no component on the tile {name!r}"
        read[name] = min(under, key=lambda c: c.box[2] * c.box[3]).label
    # every tile named by both its lines, in order; OCR may misread a letter of one
    assert all(label is not None and len(label.split()) == 2 for label in read.values()), read
    assert sum(label == name for name, label in read.items()) >= len(NAMES) - 1, read
