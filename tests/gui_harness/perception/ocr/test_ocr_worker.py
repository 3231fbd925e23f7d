"""OcrWorker: labels read in the background, filled on a later call, cached by crop."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from PIL import Image, ImageDraw

from gui_harness.perception import Component, detect_components
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader
from tests.gui_harness.perception.screens import font, iou

SAVE = (140, 270, 100, 34)


def _save(components: list[Component]) -> Component:
    return max(components, key=lambda c: iou(c.box, SAVE))


def test_a_label_is_queued_not_waited_for_and_appears_on_a_later_call(form):
    image, _ = form
    gate = threading.Event()
    seen: list[tuple[int, ...]] = []

    def reader(crop: np.ndarray) -> str:
        gate.wait()  # the read cannot finish before the first label() has returned
        seen.append(crop.shape)
        return "Save"

    worker = OcrWorker(reader)
    components = [_save(detect_components(image))]
    first = worker.label(image, components)
    assert first[0].label is None and worker.queued == 1 and worker.reads == 0
    gate.set()
    assert worker.wait_idle(timeout=30)
    later = worker.label(image, components)
    assert later[0].label == "Save" and worker.hits == 1
    assert worker.label(image, components)[0].label == "Save"
    assert (worker.reads, worker.queued, worker.hits) == (1, 1, 2)  # an unchanged crop: a hit
    worker.close()


def test_changed_pixels_are_read_again_and_a_crop_in_flight_is_queued_once(form):
    image, _ = form
    reads: list[int] = []
    worker = OcrWorker(lambda crop: reads.append(int(crop.sum())) or "x")
    components = [_save(detect_components(image))]
    worker.label(image, components)
    worker.label(image, components)
    assert worker.wait_idle(timeout=30)
    changed = np.asarray(image).copy()
    changed[280:290, 150:160] = 0
    worker.label(changed, components)
    assert worker.wait_idle(timeout=30)
    assert len(reads) == 2 and reads[0] != reads[1]
    worker.close()


def test_a_reader_that_raises_gives_no_label_and_the_worker_goes_on(form):
    image, _ = form
    calls: list[int] = []

    def reader(crop: np.ndarray) -> str:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("engine broke")
        return "Apply"

    worker = OcrWorker(reader)
    components = detect_components(image)
    buttons = [c for c in components if c.kind == "button"][:2]
    worker.label(image, buttons)
    assert worker.wait_idle(timeout=30)
    labels = [c.label for c in worker.label(image, buttons)]
    assert sorted(labels, key=str) == sorted([None, "Apply"], key=str)
    worker.close()


def test_rapidocr_reads_a_rendered_button_label(form):
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    image, _ = form
    worker = OcrWorker(reader)
    components = [_save(detect_components(image))]
    worker.label(image, components)
    assert worker.wait_idle(timeout=120)
    assert worker.label(image, components)[0].label == "Save"
    worker.close()


def test_the_newest_call_is_read_first(form):
    image, _ = form
    started, gate = threading.Event(), threading.Event()
    order: list[int] = []

    def reader(crop: np.ndarray) -> str:
        started.set()
        gate.wait()
        order.append(crop.shape[1])
        return "x"

    worker = OcrWorker(reader)
    found = [c for c in detect_components(image) if c.kind in ("button", "field", "text")]
    widths = {c.box[2]: c for c in found}  # one component of each width
    first, older, newest = list(widths.values())[:3]
    worker.label(image, [first])
    assert started.wait(timeout=60)  # the reader holds `first`
    worker.label(image, [older])
    worker.label(image, [newest])  # what is on the screen now
    gate.set()
    assert worker.wait_idle(timeout=60)
    reads = {first.box[2]: "first", older.box[2]: "older", newest.box[2]: "newest"}
    assert [reads[min(reads, key=lambda w: abs(w - width))] for width in order] == [
        "first",
        "newest",
        "older",
    ]
    worker.close()
    assert worker.label(image, found) is not None and worker.wait_idle(timeout=0)


# -- the first look (issue 35): what a waiting call waits for, and who reads -----------


def _lines(*texts: str, width: int = 900) -> tuple[Image.Image, list[Component]]:
    """White lines of black text, one every 40 px, as text components."""
    image = Image.new("RGB", (width, 40 * len(texts) + 20), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    components = []
    for number, text in enumerate(texts):
        left, top, right, bottom = draw.textbbox((10, 10 + 40 * number), text, font=font(14))
        draw.text((10, 10 + 40 * number), text, font=font(14), fill=(0, 0, 0))
        box = (int(left), int(top), int(right - left), int(bottom - top))
        components.append(Component(number + 1, "text", box))
    return image, components


def test_a_waiting_call_waits_for_labels_not_for_a_long_line_of_content():
    long_line = "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor"
    image, components = _lines(long_line, "Save")
    returned = threading.Event()
    overdue: list[bool] = []

    def reader(crop: np.ndarray) -> str:
        if crop.shape[1] > 10 * crop.shape[0]:  # the paragraph's line: read after the call
            overdue.append(not returned.wait(timeout=10))
            return "lorem"
        return "Save"

    worker = OcrWorker(reader)
    try:
        first = worker.label(image, components, wait=30.0)
        returned.set()
        assert first[1].label == "Save" and first[0].label is None
        assert worker.wait_idle(timeout=30) and overdue == [False]
        assert worker.label(image, components)[0].label == "lorem"  # on a later look
    finally:
        returned.set()
        worker.close()


def test_a_waiting_call_waits_for_a_paragraph_s_first_line_not_the_rest():
    paragraph = [
        "Lorem ipsum dolor sit amet, consectetur",
        "adipiscing elit, sed do eiusmod tempor",
        "incididunt ut labore et dolore magna",
        "aliqua. Ut enim ad minim veniam, quis",
    ]
    image = Image.new("RGB", (500, 140), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    components = []
    for number, text in enumerate(paragraph):  # 17 px apart: a paragraph's spacing
        left, top, right, bottom = draw.textbbox((10, 10 + 17 * number), text, font=font(14))
        draw.text((10, 10 + 17 * number), text, font=font(14), fill=(0, 0, 0))
        box = (int(left), int(top), int(right - left), int(bottom - top))
        components.append(Component(number + 1, "text", box))
    returned = threading.Event()
    first_line: tuple[int, int] | None = None
    overdue: list[bool] = []

    def reader(crop: np.ndarray) -> str:
        if first_line is not None and crop.shape == first_line:
            return "Lorem"
        overdue.append(not returned.wait(timeout=10))  # the rest: read after the call
        return "more"

    worker = OcrWorker(reader)
    try:
        _, _, w, h = components[0].box
        first_line = (h + 6, w + 6)  # the crop of a text line: 3 px around it
        labelled = worker.label(image, components, wait=30.0)
        returned.set()
        assert [c.label for c in labelled] == ["Lorem", None, None, None]
        assert worker.wait_idle(timeout=30) and overdue == [False, False, False]
    finally:
        returned.set()
        worker.close()


def test_a_second_thread_reads_while_a_call_waits_and_only_then():
    image, components = _lines("Save", "Open", "Quit")
    both = threading.Barrier(2, timeout=10)  # the first two reads meet: two threads read
    lock = threading.Lock()
    readers: list[str] = []

    def reader(crop: np.ndarray) -> str:
        with lock:
            readers.append(threading.current_thread().name)
            meet = len(readers) <= 2
        if meet:
            both.wait()
        return "x"

    worker = OcrWorker(reader)
    try:
        labelled = worker.label(image, components, wait=20.0)
        assert all(c.label == "x" for c in labelled) and not both.broken
        assert len(set(readers[:2])) == 2
        # without a waiting call only the one thread reads: it leaves the other core free
        readers.clear()
        image, components = _lines("Edit", "View", "Help")
        worker.label(image, components)
        assert worker.wait_idle(timeout=30)
        assert set(readers) == {"ocr-worker"}
    finally:
        worker.close()


def test_rapidocr_reads_lone_header_letters_cut_to_their_ink():
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    read = 0
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    for letter in letters:  # a sheet's column headers: one letter in a wide cell
        cell = Image.new("L", (78, 15), 230)
        ImageDraw.Draw(cell).text((39, 7), letter, font=font(11), fill=30, anchor="mm")
        read += reader(np.asarray(cell)).upper() == letter
    assert read >= 22  # 14 of 26 when the cell was read whole, padded to 320 px


# -- the first look waits for labels, not for checks of tree names (issue 41) ------------


def test_a_waiting_call_does_not_wait_for_the_drawn_text_of_a_tree_name_it_checks():
    image, (text,) = _lines("Serif")
    x, y, w, h = text.box
    box = (x - 6, y - 6, w + 60, h + 12)  # the text and room for an arrow
    dropdown = Component(1, "dropdown", box, "Sans", 0.9, (), "accessibility")
    returned = threading.Event()
    overdue: list[bool] = []

    def reader(crop: np.ndarray) -> str:
        overdue.append(not returned.wait(timeout=20))  # read after the call returned
        return "Serif"

    worker = OcrWorker(reader)
    try:
        first = worker.label(image, [dropdown], wait=60.0)
        returned.set()
        assert first[0].label == "Sans" and worker.reads == 0  # the tree's name stands
        assert worker.wait_idle(timeout=30) and overdue == [False]
        later = worker.label(image, [dropdown])[0]  # checked against the drawn text
        assert (later.label, later.caption) == ("Serif", "Sans")
    finally:
        returned.set()
        worker.close()
