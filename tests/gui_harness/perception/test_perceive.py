"""Perception.perceive and Observation, and the perception package's public names."""

from __future__ import annotations

import json

import numpy as np
import pytest

import gui_harness.perception as perception
from gui_harness.perception import (
    ComponentMemory,
    Observation,
    Perception,
    describe,
    detect_components,
)
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
            "KIND_COLOURS",
            "describe",
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


def test_ocr_defaults_to_whether_tesseract_is_installed(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert Perception().ocr is False
    assert Perception(ocr=True).ocr is True
