"""Captions on the pixel path by the same layout rule as the tree's (captions.py): a Tk
form, which publishes no accessibility tree, read from its pixels with OCR. Its entry
takes the text left of it on its row, its multi-line text box the text above it, and a
field with a button between it and the text left of it takes none."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import OcrWorker, Perception, ocr_available

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(
        importlib.util.find_spec("rapidocr_onnxruntime") is None and not ocr_available(),
        reason="neither RapidOCR nor tesseract is installed",
    ),
]

_FORM = """
import tkinter as tk
root = tk.Tk()
root.geometry("640x420+0+0")
font = ("DejaVu Sans", 14)
tk.Label(root, text="Email", font=font).place(x=20, y=24)
tk.Entry(root, width=28, font=font).place(x=120, y=20)
tk.Label(root, text="Comments", font=font).place(x=120, y=80)
tk.Text(root, width=32, height=4, font=font).place(x=120, y=108)
tk.Label(root, text="Search", font=font).place(x=20, y=264)
tk.Button(root, text="Go", font=font).place(x=110, y=258)
tk.Entry(root, width=20, font=font).place(x=180, y=262)
root.mainloop()
"""


def test_a_tk_forms_fields_are_captioned_by_the_text_left_of_or_above_them(
    tmp_path: Path,
) -> None:
    script = tmp_path / "form.py"
    script.write_text(_FORM)
    worker = OcrWorker()
    try:
        with VirtualDesktop((800, 500), [App(["python3", str(script)], timeout=30.0)]) as d:
            observation = Perception(ocr=worker, first_look=60.0).perceive(d.screenshot())
    finally:
        worker.close()
    fields = sorted(
        (c for c in observation.components if c.kind == "field"), key=lambda c: c.box[1]
    )
    email = next(f for f in fields if f.box[1] < 60)
    comments = next(f for f in fields if 100 <= f.box[1] < 140)
    search = next(f for f in fields if f.box[1] > 240)
    assert email.caption == "Email", observation.text
    assert comments.caption == "Comments", observation.text
    assert comments.box[3] >= 60
    assert search.caption is None, observation.text
