"""Perception.perceive and Observation, and the perception package's public names."""

from __future__ import annotations

import importlib.util
import json
import threading

import numpy as np
import pytest

import gui_harness.perception as perception
from gui_harness.perception import (
    ComponentMemory,
    Observation,
    OcrWorker,
    Perception,
    describe,
    detect_components,
)
from openprogram.core.image import Image as OpenprogramImage
from openprogram.errors import UsageError
from tests.gui_harness.perception.screens import iou

SAVE = (140, 270, 100, 34)


def test_the_package_exports_exactly_its_public_api():
    assert sorted(perception.__all__) == sorted(
        [
            "KINDS",
            "Component",
            "Kind",
            "detect_components",
            "reading_order",
            "Grid",
            "cell_point",
            "KIND_COLOURS",
            "describe",
            "read_description",
            "Described",
            "draw_marks",
            "FORMAT_VERSION",
            "SCALES",
            "ComponentMemory",
            "MemoryEntry",
            "default_data_dir",
            "label_with_ocr",
            "ocr_available",
            "read_text",
            "OcrWorker",
            "Observation",
            "Perception",
            "STATES",
            "SOURCES",
            "State",
            "Source",
            "ROLE_KINDS",
            "AccessibilitySnapshot",
            "AccessibilitySource",
            "fuse",
            "to_image",
        ]
    )
    assert all(hasattr(perception, name) for name in perception.__all__)


def test_an_observation_holds_the_image_its_components_and_their_text(form):
    image, _ = form
    observation = Perception(ocr=False).perceive(image)
    assert observation.image is image
    assert observation.size == (1280, 800)
    assert [(c.kind, c.box) for c in observation.components] == [
        (c.kind, c.box) for c in detect_components(image)
    ]
    assert observation.text == describe(observation.components)


def test_the_marked_image_is_drawn_once_and_only_when_asked_for(form):
    observation = Perception(ocr=False).perceive(form[0])
    assert "marked" not in vars(observation)
    marked = observation.marked
    assert marked is observation.marked
    assert marked.size == observation.size
    assert (np.asarray(marked) != np.asarray(observation.image)).any()


def test_numpy_screenshots_are_accepted(form):
    observation = Perception(ocr=False).perceive(np.asarray(form[0]))
    assert observation.size == (1280, 800)
    assert observation.image.mode == "RGB"
    assert observation.components


def test_labels_from_memory_appear_in_the_text(form, tmp_path):
    image, _ = form
    looker = Perception(ComponentMemory("Demo", tmp_path), ocr=False)
    first = looker.perceive(image)
    save = max(first.components, key=lambda c: iou(c.box, SAVE))
    looker.remember(first, save.index, "Save")
    second = looker.perceive(image)
    assert second.component(save.index).label == "Save"
    assert f"#{save.index} button at " in second.text
    assert second.text.count('"Save"') == 1


def test_components_are_looked_up_by_number(form):
    observation = Perception(ocr=False).perceive(form[0])
    assert observation.component(3).index == 3
    with pytest.raises(KeyError, match=r"#1 to #\d+"):
        observation.component(999)
    empty = Observation(form[0], (), "")
    with pytest.raises(KeyError, match="found none"):
        empty.component(1)


def test_remembering_needs_a_memory(form):
    looker = Perception(ocr=False)
    with pytest.raises(UsageError, match="ComponentMemory"):
        looker.remember(looker.perceive(form[0]), 1, "Title")


def test_an_observation_summary_is_json(form):
    observation = Perception(ocr=False).perceive(form[0])
    data = json.loads(json.dumps(observation.to_dict()))
    assert data["size"] == [1280, 800]
    assert data["text"] == observation.text
    assert len(data["components"]) == len(observation.components)


def test_ocr_defaults_to_whether_an_engine_is_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no tesseract: RapidOCR alone decides
    rapidocr = importlib.util.find_spec("rapidocr_onnxruntime") is not None
    looker = Perception()
    assert looker.ocr is rapidocr
    looker.close()
    assert Perception(ocr=False).ocr is False


def test_perceive_never_waits_for_ocr_and_shows_its_labels_on_a_later_look(form):
    image, _ = form
    gate = threading.Event()
    crops: list[tuple[int, ...]] = []

    def reader(crop: np.ndarray) -> str:
        gate.wait()  # blocks until the test lets it: perceive must return before
        crops.append(crop.shape)
        return "Save" if crop.shape[1] > 60 else "Subscribe"

    worker = OcrWorker(reader)
    looker = Perception(ocr=worker)
    first = looker.perceive(image)
    assert not crops and all(c.label is None for c in first.components)
    assert worker.queued > 0
    gate.set()
    assert worker.wait_idle(timeout=60)
    later = looker.perceive(image)
    save = max(later.components, key=lambda c: iou(c.box, SAVE))
    assert save.label == "Save" and '"Save"' in later.text
    # same pixels: every label came from the cache, nothing was read twice
    assert worker.reads == worker.queued == len(crops)
    looker.close()  # a worker passed in is the caller's: it keeps running
    assert looker.perceive(image).components == later.components
    worker.close()


def test_a_checkbox_takes_the_label_ocr_read_beside_it(form):
    image, _ = form
    worker = OcrWorker(lambda crop: "Subscribe to news")
    looker = Perception(ocr=worker)
    looker.perceive(image)
    assert worker.wait_idle(timeout=60)
    boxes = [c for c in looker.perceive(image).components if c.kind == "checkbox"]
    assert boxes and all(c.label == "Subscribe to news" for c in boxes)
    worker.close()


def test_perceptions_share_one_ocr_worker_and_closing_one_leaves_it_running(form):
    one, two = Perception(ocr=True), Perception(ocr=True)
    worker = one._worker
    assert worker is not None and worker is two._worker and worker._thread.is_alive()
    one.close()
    one.close()  # twice is harmless
    assert worker._thread.is_alive()
    assert Perception(ocr=False)._worker is None


def test_a_closed_worker_drops_what_it_had_not_read(form):
    image, _ = form
    started, gate = threading.Event(), threading.Event()

    def reader(crop: np.ndarray) -> str:
        started.set()
        gate.wait()
        return "read"

    worker = OcrWorker(reader)
    worker.label(image, detect_components(image))
    assert worker.queued > 1 and started.wait(timeout=60)
    worker.close(wait=False)  # returns with a read still blocked
    assert worker.wait_idle(timeout=0) is False  # the crop in the reader's hands
    gate.set()
    assert worker.wait_idle(timeout=60)
    assert worker.reads == 1  # the queued ones were dropped, not read


def test_the_marked_picture_is_one_image_value_hashed_once(form):
    observation = Perception(ocr=False).perceive(form[0])
    marked = observation.marked
    assert isinstance(marked, OpenprogramImage) and marked.size == observation.size
    assert marked.sha256 == marked.sha256 and observation.marked is marked


def test_only_a_new_screens_first_look_waits_for_ocr(form):
    image, _ = form
    waits: list[float] = []

    class Spy(OcrWorker):
        def label(self, image, components, *, wait=0.0):  # type: ignore[no-untyped-def]
            waits.append(wait)
            return super().label(image, components, wait=wait)

    worker = Spy(lambda crop: "")
    looker = Perception(ocr=worker, first_look=1.5)
    looker.perceive(image)  # the first look
    changed = np.asarray(image).copy()
    changed[280:290, 150:160] = 0  # a small change: the same screen
    looker.perceive(changed)
    looker.perceive(np.full_like(changed, 40))  # another screen altogether
    worker.close()
    assert waits == [1.5, 0.0, 1.5]
    with pytest.raises(UsageError, match="first_look"):
        Perception(ocr=False, first_look=-1)
