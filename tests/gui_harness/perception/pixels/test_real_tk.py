"""Detection on a real screenshot: classic Tk widgets on a private Xvfb display."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gui_harness.actions import Click
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


CAPTIONS = """
import sys
import tkinter as tk
from tkinter import ttk
root = tk.Tk()
root.geometry("560x340+40+40")
ttk.Style(root).configure(".", font=("DejaVu Sans", 15))
book = ttk.Notebook(root)
account, notify = ttk.Frame(book, padding=16), ttk.Frame(book, padding=16)
ttk.Label(account, text="Username").grid(row=0, column=0)
values = [tk.BooleanVar(value=False) for _ in range(3)]  # kept: unset is 'alternate'
for row, text in enumerate(("Email alerts", "Show hidden files", "Auto save")):
    box = ttk.Checkbutton(notify, text=text, variable=values[row])
    box.grid(row=row, column=0, sticky="w", pady=8)
    if row == 0:  # the tab's click focuses it: its dotted focus ring hugs its caption
        box.bind("<FocusIn>", lambda e: root.after(200, open(sys.argv[2], "w").close))
book.add(account, text="Account")
book.add(notify, text="Notifications")
book.pack(fill="both", expand=True, padx=10, pady=10)
def where():  # the Notifications tab's middle on the screen
    xs = [x for x in range(book.winfo_width()) if book.identify(x, 12) and
          book.index(f"@{x},12") == 1]
    with open(sys.argv[1], "w") as f:
        f.write(f"{book.winfo_rootx() + (xs[0] + xs[-1]) // 2} {book.winfo_rooty() + 12}")
root.after(500, where)
root.mainloop()
"""


@pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_onnxruntime") is None, reason="RapidOCR is not installed"
)
def test_a_caption_its_focus_ring_hugs_keeps_its_word_spaces(tmp_path):
    """A ttk check button focused by its tab's click has a dotted focus ring hugging its
    caption: a box whose inset cut into the ink, and read touching the crop's sides
    'Email alerts' came out 'Emailalerts' (the desktop bench's ttk-notifications-tab)."""
    from gui_harness.desktop.virtual import App, VirtualDesktop

    script, tab, focused = tmp_path / "captions.py", tmp_path / "tab", tmp_path / "focused"
    script.write_text(CAPTIONS)

    def wait_file(path: Path) -> str:
        deadline = time.monotonic() + 60
        while not path.exists() or (not path.read_text().strip() and path is tab):
            assert time.monotonic() < deadline, f"the app never wrote {path.name}"
            time.sleep(0.05)
        return path.read_text()

    worker = OcrWorker()  # its own cache: nothing read before this look
    with VirtualDesktop(
        apps=[App([sys.executable, str(script), str(tab), str(focused)])]
    ) as desktop:
        x, y = map(int, wait_file(tab).split())
        desktop.execute(Click(x=x, y=y))
        wait_file(focused)  # the app says when its caption has the focus
        desktop.wait_settled(timeout=10.0)
        # a generous bound for a loaded machine: the look returns once its crops are read
        perception = Perception(ocr=worker, first_look=120)
        observation = perception.perceive(desktop.screenshot())
        expected = {"Email alerts", "Show hidden files", "Auto save", "Notifications"}
        # at load 20 the first look's 120 s ran out with the captions unread (a whole run
        # of the suite); the crops it queued are read meanwhile, and a later look of the
        # same screen takes them: look again once the worker is idle, a few times
        for _ in range(3):
            if expected <= {c.label for c in observation.components}:
                break
            worker.wait_idle(timeout=300)
            observation = perception.perceive(desktop.screenshot())
    worker.close()
    labels = {c.label for c in observation.components}
    assert expected <= labels, observation.text


SLIM_DROP_DOWNS = """
import tkinter as tk
from tkinter import ttk
root = tk.Tk()
root.geometry("640x300+0+0")
ttk.Style(root).configure(".", font=("DejaVu Sans", 12))
for row, text in enumerate(("Middle", "Weekly report", "Left")):
    box = ttk.Combobox(root, values=[text], width=48)
    box.set(text)
    box.grid(row=row, column=0, padx=20, pady=12)
root.mainloop()
"""


@pytest.mark.skipif(
    importlib.util.find_spec("rapidocr_onnxruntime") is None, reason="RapidOCR is not installed"
)
def test_wide_slim_drop_downs_are_read_whole_with_their_word_spaces(tmp_path):
    """A 400 px drop-down 21 px high: its inset cuts its text's top and bottom (read so,
    'Weekly report' came out 'Weeklyreport', 'Left' 'Let'), and its crop, from its text
    to its arrow, is mostly blank (cut to a blank as wide as it is high: 'Left' is read
    from a crop a fraction of the box's width)."""
    from gui_harness.desktop.virtual import App, VirtualDesktop
    from gui_harness.perception._pixels import grey_array
    from gui_harness.perception.ocr.ocr_worker import _crop, _inked

    script = tmp_path / "drop_downs.py"
    script.write_text(SLIM_DROP_DOWNS)
    worker = OcrWorker()  # its own cache: nothing read before this look
    with VirtualDesktop(apps=[App([sys.executable, str(script)])]) as desktop:
        desktop.wait_settled(timeout=10.0)
        image = desktop.screenshot()
    # a generous bound for a loaded machine: the look returns once its crops are read
    observation = Perception(ocr=worker, first_look=120).perceive(image)
    worker.close()
    drop_downs = [c for c in observation.components if c.kind == "dropdown"]
    assert [c.label for c in drop_downs] == ["Middle", "Weekly report", "Left"], observation.text
    crop = _crop(grey_array(image), drop_downs[2])
    assert crop is not None and _inked(crop).shape[1] < crop.shape[1] / 4


GLYPHS = """
import tkinter as tk
root = tk.Tk()
root.geometry("400x200+0+0")
for row, mark in enumerate(("•", "›", "×")):
    tk.Label(root, text=mark, font=("DejaVu Sans", 8)).grid(row=row, column=0, padx=10, pady=6)
    tk.Label(root, text=f"Item {row + 1}", font=("DejaVu Sans", 12)).grid(
        row=row, column=1, sticky="w")
tk.Button(root, text="Save", font=("DejaVu Sans", 12)).grid(row=3, column=1, pady=10)
root.mainloop()
"""


def test_a_first_look_waits_for_labels_not_for_glyph_sized_marks(tmp_path):
    """A text blob one small glyph in size (a '×', a bullet) costs a word's read and is
    no label: a waiting call reads it after it returns, and it shows on a later look."""
    from gui_harness.desktop.virtual import App, VirtualDesktop

    script = tmp_path / "glyphs.py"
    script.write_text(GLYPHS)
    with VirtualDesktop(apps=[App([sys.executable, str(script)])]) as desktop:
        desktop.wait_settled(timeout=10.0)
        image = desktop.screenshot()
    components = list(Perception(ocr=False).perceive(image).components)
    marks = [n for n, c in enumerate(components) if c.kind == "text" and c.box[2] <= 10]
    assert marks, [c.box for c in components]
    returned = threading.Event()
    overdue: list[bool] = []

    shapes = {(components[n].box[3] + 6, components[n].box[2] + 6) for n in marks}

    def reader(crop: np.ndarray) -> str:
        if crop.shape in shapes:  # a mark's crop: 3 px around it
            overdue.append(not returned.wait(timeout=10))
            return "x"
        return "label"

    worker = OcrWorker(reader)
    try:
        first = worker.label(image, components, wait=60.0)
        returned.set()
        assert all(first[n].label is None for n in marks)
        assert [c.label for c in first if c.kind == "button"][-1] == "label"
        assert worker.wait_idle(timeout=30) and overdue and not any(overdue)
        assert all(worker.label(image, components)[n].label == "x" for n in marks)
    finally:
        returned.set()
        worker.close()
