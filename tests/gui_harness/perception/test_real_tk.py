"""Detection on a real screenshot: classic Tk widgets on a private Xvfb display."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import numpy as np
import pytest
from PIL import Image

from gui_harness.perception import OcrWorker, Perception

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]

FORM = """
import tkinter as tk
root = tk.Tk()
root.geometry("640x400+0+0")
tk.Label(root, text="Name:").grid(row=0, column=0, padx=10, pady=10, sticky="w")
tk.Entry(root, width=30).grid(row=0, column=1, padx=10, pady=10)
tk.Checkbutton(root, text="Subscribe", variable=tk.IntVar()).grid(row=1, column=1, sticky="w")
tk.Checkbutton(root, text="Remember me", variable=tk.IntVar(value=1)).grid(
    row=2, column=1, sticky="w")
tk.Button(root, text="Save").grid(row=3, column=1, sticky="w", pady=10)
tk.Button(root, text="Cancel").grid(row=3, column=1, sticky="e", pady=10)
tk.Label(root, text="Status: idle").grid(row=4, column=0, columnspan=2, sticky="w", padx=10)
root.mainloop()
"""


@pytest.fixture(scope="module")
def tk_screenshot() -> Iterator[Image.Image]:
    """A screenshot of FORM running on its own Xvfb display."""
    pytest.importorskip("tkinter")
    mss = pytest.importorskip("mss")
    read, write = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x800x24", "-nolisten", "tcp"],
        pass_fds=(write,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    app = None
    try:
        with os.fdopen(read) as answer:
            display = f":{answer.readline().strip()}"
        env = {**os.environ, "DISPLAY": display}
        app = subprocess.Popen([sys.executable, "-c", FORM], env=env)
        factory = getattr(mss, "MSS", None) or mss.mss
        with factory(display=display) as grabber:
            deadline = time.monotonic() + 20
            while True:
                shot = grabber.grab(grabber.monitors[1])
                image = Image.frombytes("RGB", shot.size, shot.rgb)
                # Wait until the widgets are drawn: the window's corner is not blank.
                if np.asarray(image.convert("L"))[:240, :400].std() > 20:
                    # then until three grabs in a row agree: Tk has finished drawing
                    same, previous = 0, shot.rgb
                    while same < 2 and time.monotonic() < deadline:
                        shot = grabber.grab(grabber.monitors[1])
                        same = same + 1 if shot.rgb == previous else 0
                        previous = shot.rgb
                    yield Image.frombytes("RGB", shot.size, shot.rgb)
                    break
                if time.monotonic() > deadline:
                    pytest.fail("the Tk form did not appear on Xvfb within 20 s")
                time.sleep(0.1)
    finally:
        for process in (app, xvfb):
            if process is not None:
                process.terminate()
                process.wait(timeout=10)


def test_tk_widgets_are_found_with_their_kinds(tk_screenshot):
    observation = Perception(ocr=False).perceive(tk_screenshot)
    kinds = [c.kind for c in observation.components]
    assert kinds.count("field") == 1
    assert kinds.count("checkbox") == 2
    assert kinds.count("button") == 2
    assert kinds.count("text") == 4  # Name:, Subscribe, Remember me, Status: idle


@pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_onnxruntime") is None and shutil.which("tesseract") is None,
    reason="neither RapidOCR nor tesseract is installed",
)
def test_tk_widgets_get_their_labels_by_ocr_on_a_later_look(tk_screenshot):
    worker = OcrWorker()  # RapidOCR when installed, else tesseract
    looker = Perception(ocr=worker)
    looker.perceive(tk_screenshot)  # queues the crops; OCR reads them in the background
    assert worker.wait_idle(timeout=120)
    observation = looker.perceive(tk_screenshot)
    worker.close()
    labels = {(c.kind, c.label) for c in observation.components}
    assert {("button", "Save"), ("button", "Cancel"), ("checkbox", "Remember me")} <= labels


def test_the_demo_forms_entry_is_a_field_and_save_a_button(tmp_path):
    from gui_harness.demo.app import demo_app
    from gui_harness.desktop.virtual import VirtualDesktop
    from gui_harness.perception import Perception

    with VirtualDesktop(apps=[demo_app(tmp_path / "state.json")]) as desktop:
        observation = Perception(ocr=False).perceive(desktop.screenshot())
        geometry = json.loads((tmp_path / "state.json").read_text())["widgets"]

    def kind_at(widget: str) -> str:
        box = geometry[widget]
        cx, cy = box["x"] + box["w"] // 2, box["y"] + box["h"] // 2
        hits = [
            c for c in observation.components
            if c.box[0] <= cx < c.box[0] + c.box[2] and c.box[1] <= cy < c.box[1] + c.box[3]
        ]  # fmt: skip
        return hits[0].kind if hits else "missing"

    assert kind_at("name") == "field"
    assert kind_at("save") == "button"
    box = geometry["subscribe"]  # the whole Checkbutton: its indicator and its text
    inside = [
        c.kind for c in observation.components
        if box["x"] <= c.box[0] and c.box[0] + c.box[2] <= box["x"] + box["w"] + 2
        and box["y"] <= c.box[1] and c.box[1] + c.box[3] <= box["y"] + box["h"] + 2
    ]  # fmt: skip
    assert "checkbox" in inside
    assert kind_at("country") == "dropdown"
    for colour in ("red", "green", "blue"):
        box = geometry[f"choice_{colour}"]  # the Radiobutton: its round indicator and text
        inside = [
            c.kind for c in observation.components
            if box["x"] <= c.box[0] and c.box[0] + c.box[2] <= box["x"] + box["w"] + 2
            and box["y"] <= c.box[1] and c.box[1] + c.box[3] <= box["y"] + box["h"] + 2
        ]  # fmt: skip
        assert "radio" in inside and "checkbox" not in inside, (colour, inside)


@pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_onnxruntime") is None and shutil.which("tesseract") is None,
    reason="neither RapidOCR nor tesseract is installed",
)
def test_the_first_look_at_the_demo_has_its_buttons_labelled(tmp_path):
    from gui_harness.demo.app import demo_app
    from gui_harness.desktop.virtual import VirtualDesktop

    worker = OcrWorker()  # its own cache: nothing read before this look
    with VirtualDesktop(apps=[demo_app(tmp_path / "state.json")]) as desktop:
        # a generous bound for a loaded machine: the look returns once its crops are read
        observation = Perception(ocr=worker, first_look=120).perceive(desktop.screenshot())
        geometry = json.loads((tmp_path / "state.json").read_text())["widgets"]
    worker.close()
    box = geometry["save"]
    centre = (box["x"] + box["w"] // 2, box["y"] + box["h"] // 2)
    save = [
        c for c in observation.components
        if 0 <= centre[0] - c.box[0] < c.box[2] and 0 <= centre[1] - c.box[1] < c.box[3]
    ]  # fmt: skip
    assert [c.label for c in save] == ["Save"], observation.text
    assert "Save" in observation.text and worker.reads > 0
