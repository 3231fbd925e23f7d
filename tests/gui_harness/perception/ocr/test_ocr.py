"""OCR labels through tesseract, and how OCR degrades when tesseract is absent or fails."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest
from PIL import Image, ImageDraw

from gui_harness.perception import (
    Component,
    detect_components,
    label_with_ocr,
    ocr_available,
    read_text,
)
from tests.gui_harness.perception.screens import DEJAVU, font, iou

needs_tesseract = pytest.mark.skipif(
    shutil.which("tesseract") is None, reason="tesseract is not installed"
)
needs_dejavu = pytest.mark.skipif(not DEJAVU.exists(), reason="DejaVu Sans is not installed")


def _word(text: str, size: int = 48) -> Image.Image:
    image = Image.new("RGB", (40 + size * len(text), size * 2), (255, 255, 255))
    ImageDraw.Draw(image).text((20, size // 2), text, font=font(size), fill=(0, 0, 0))
    return image


def _fake_tesseract(directory: Path, script: str) -> None:
    """Put a shell script named tesseract first on PATH."""
    program = directory / "tesseract"
    program.write_text("#!/bin/sh\n" + script + "\n")
    program.chmod(program.stat().st_mode | stat.S_IXUSR)


def test_without_tesseract_ocr_reports_unavailable_and_changes_nothing(form, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    image, _ = form
    components = detect_components(image)
    assert ocr_available() is False
    assert read_text(_word("Hello")) == ""
    assert label_with_ocr(image, components) == components


def test_a_tesseract_that_hangs_is_given_up_on(monkeypatch, tmp_path):
    _fake_tesseract(tmp_path, "exec sleep 30")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert read_text(_word("Slow"), timeout=0.3) == ""


def test_a_tesseract_that_fails_reads_nothing(monkeypatch, tmp_path):
    _fake_tesseract(tmp_path, "echo broken >&2; exit 1")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert read_text(_word("Broken")) == ""


def test_stray_border_marks_around_the_text_are_dropped(monkeypatch, tmp_path):
    _fake_tesseract(tmp_path, "cat >/dev/null; echo '| Open :'")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert read_text(_word("Open?")) == "Open"


def test_flat_crops_are_not_sent_to_tesseract(monkeypatch, tmp_path):
    _fake_tesseract(tmp_path, "echo called")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert read_text(Image.new("RGB", (200, 40), (255, 255, 255))) == ""


@needs_tesseract
@needs_dejavu
def test_a_large_rendered_word_is_read():
    assert read_text(_word("Perception")) == "Perception"


@needs_tesseract
@needs_dejavu
def test_light_text_on_a_dark_background_is_read():
    image = Image.new("RGB", (360, 60), (30, 30, 60))
    ImageDraw.Draw(image).text((20, 12), "Settings", font=font(30), fill=(250, 250, 250))
    assert read_text(image) == "Settings"


@needs_tesseract
@needs_dejavu
def test_buttons_text_and_checkboxes_get_labels_and_set_labels_stay(form):
    image, truths = form
    components = detect_components(image)
    save = max(components, key=lambda c: iou(c.box, (140, 270, 100, 34)))
    components[save.index - 1] = save.with_label("Keep me")
    labelled = label_with_ocr(image, components)

    def label_at(box: tuple[int, int, int, int]) -> str | None:
        return max(labelled, key=lambda c: iou(c.box, box)).label

    assert label_at((140, 270, 100, 34)) == "Keep me"
    assert label_at((256, 270, 100, 34)) == "Cancel"
    assert label_at((140, 224, 16, 16)) == "Remember me"
    assert label_at((140, 132, 280, 30)) == "ada@example.com"
    assert label_at((140, 84, 280, 30)) is None  # an empty field has nothing to read
    title = next(t for t in truths if t.label == "Account settings")
    assert label_at(title.box) == "Account settings"
    assert all(c.label is None for c in labelled if c.kind == "icon")


def test_label_with_ocr_accepts_no_components():
    assert label_with_ocr(Image.new("RGB", (10, 10)), []) == []


def test_components_with_labels_need_no_ocr(monkeypatch, tmp_path):
    _fake_tesseract(tmp_path, "echo wrong")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    image = _word("Hello")
    labelled = [Component(1, "text", (10, 10, 200, 60), "Hello")]
    assert label_with_ocr(image, labelled) == labelled
