"""Coloured text in a small font, which pixels take for links (a Tk console's blue
output lines, tkcon's), is labelled by what it says (issue 41, "drawn text left
unlabelled"): a link found on pixels hugs its letters, 9–11 px high at 8 pt, and the
crop was cut inside its box as a button's is, leaving no line to read. A real Tk window
on Xvfb, pixels and RapidOCR only."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader

pytestmark = [pytest.mark.x11]

CONSOLE = """
import sys, tkinter as tk
root = tk.Tk()
root.geometry("560x160+0+0")
text = tk.Text(root, font=("DejaVu Sans Mono", 8), bg="white", relief="flat")
text.pack(fill="both", expand=True)
text.tag_configure("out", foreground="#2020d0")
for line in ("buffer line limit: 512   max line length: unlimited",
             "Main console display active (Tcl8.6.13 / Tk8.6.13)",
             "Report printed to console"):
    text.insert("end", line + "\\n", "out")
root.after(300, lambda: open(sys.argv[1], "w").write("drawn"))
root.mainloop()
"""

WORDS = {"buffer", "limit", "unlimited", "console", "display", "active", "report", "printed"}


def test_small_coloured_text_taken_for_links_is_read(tmp_path: Path) -> None:
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    script, state = tmp_path / "console.py", tmp_path / "drawn"
    script.write_text(CONSOLE)
    app = App(["/usr/bin/python3", str(script), str(state)], timeout=60.0)
    with VirtualDesktop((800, 400), [app], accessibility=False) as desktop:
        deadline = time.monotonic() + 30
        while not state.exists():
            assert time.monotonic() < deadline, "the console was never drawn"
            time.sleep(0.1)
        desktop.wait_settled(timeout=5.0)
        image = desktop.screenshot()
    worker = OcrWorker(reader)
    try:
        seen = Perception(ocr=worker, first_look=60.0).perceive(image)
    finally:
        worker.close()
    links = [c for c in seen.components if c.kind == "link" and c.box[2] >= 20]
    assert links, seen.text  # (what pixels make of it: the premise of this test)
    read = {w for c in links for w in re.findall(r"[a-z]+", (c.label or "").casefold())}
    assert read >= WORDS, (WORDS - read, seen.text)
