"""Redetector: detection again only where the screen changed equals a whole detection.

Frame sequences: the Tk demo form through its steps on Xvfb (the screenshots its observe
recorded), and the synthetic form with local changes drawn on it. Each frame's
incremental result is compared with detect_components() on the same frame.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

import numpy as np
import pytest
from PIL import Image, ImageDraw

from gui_harness.perception._pixels import grey_array
from gui_harness.perception.pixels._changes import Redetector
from gui_harness.perception.pixels.detect import detect_components
from tests.gui_harness.perception.screens import (
    _checkbox,
    _field,
    _raised_button,
    _sunken_field,
    _text,
    form_screen,
)

Change = Callable[[ImageDraw.ImageDraw], None]


def _found(components) -> list[tuple[str, tuple[int, int, int, int]]]:
    return [(c.kind, c.box) for c in components]


def _run(frames: list[Image.Image], redetector: Redetector | None = None) -> Redetector:
    """Feed `frames` in order; each result must equal a whole detection of its frame."""
    redetector = redetector or Redetector()
    for number, frame in enumerate(frames):
        grey = grey_array(frame)
        again = redetector.detect(frame, grey, max_components=200)
        whole = detect_components(frame, grey=grey_array(frame), max_components=200)
        assert _found(again) == _found(whole), f"frame {number}"
        assert [c.index for c in again] == list(range(1, len(again) + 1))
    return redetector


def _drawn(base: Image.Image, *changes: Change) -> list[Image.Image]:
    """`base`, then `base` with the changes drawn on one after the other."""
    frames = [base]
    for change in changes:
        frame = frames[-1].copy()
        change(ImageDraw.Draw(frame))
        frames.append(frame)
    return frames


def _tick(draw: ImageDraw.ImageDraw) -> None:
    _checkbox(draw, (140, 190, 16, 16), True)


def _type(draw: ImageDraw.ImageDraw) -> None:
    _field(draw, (140, 84, 280, 30), "Ada Lovelace")


def _type_in_panel(draw: ImageDraw.ImageDraw) -> None:
    _sunken_field(draw, (800, 96, 300, 30))
    draw.text((806, 103), "db.example.com", fill=(20, 20, 20))


def _drop_down(draw: ImageDraw.ImageDraw) -> None:
    draw.rectangle((140, 162, 419, 262), fill=(255, 255, 255), outline=(120, 120, 120))
    for row, name in enumerate(["Canada", "Chile", "China", "Colombia"]):
        _text(draw, (148, 166 + row * 24), name)


def _dialog(draw: ImageDraw.ImageDraw) -> None:
    draw.rectangle((760, 420, 1179, 579), fill=(245, 245, 245), outline=(90, 90, 90))
    _text(draw, (780, 440), "Discard the changes?", size=16)
    _raised_button(draw, (920, 520, 110, 32), "Discard")
    _raised_button(draw, (1050, 520, 110, 32), "Keep")


def _status(draw: ImageDraw.ImageDraw) -> None:
    draw.rectangle((718, 216, 1000, 240), fill=(236, 236, 236))
    _text(draw, (720, 220), "Status: connected")


@pytest.mark.parametrize(
    "changes",
    [
        [_tick],
        [_type],
        [_type_in_panel],
        [_drop_down],
        [_dialog],
        [_status],
        [_tick, _type, _drop_down, _dialog, _status, _type_in_panel],
    ],
    ids=["tick", "type", "type-in-panel", "drop-down", "dialog", "status", "all"],
)
def test_local_changes_on_the_synthetic_form_give_what_a_whole_detection_gives(form, changes):
    redetector = _run(_drawn(form[0], *changes))
    assert redetector.incremental >= 1  # at least one change was handled in its region


def test_an_unchanged_frame_reuses_the_previous_components_and_a_change_undone_is_seen():
    base, _ = form_screen((640, 400))
    ticked = _drawn(base, _tick)[1]
    redetector = _run([base, base.copy(), ticked, base])
    assert redetector.incremental == 3


def _cut_by_the_edge(draw: ImageDraw.ImageDraw) -> None:
    """A control the screen's right edge cuts: its outline closes only on a whole screen."""
    draw.rectangle((1200, 700, 1300, 740), fill=(255, 255, 255), outline=(120, 120, 120))


@pytest.mark.parametrize(
    "second",
    [
        lambda base: base.resize((base.width // 2, base.height // 2)),  # another size
        lambda base: Image.fromarray(255 - np.asarray(base)),  # everything changed
    ],
    ids=["size", "most-changed"],
)
def test_a_frame_of_another_size_or_mostly_changed_is_whole(form, second):
    redetector = _run([form[0], second(form[0])])
    assert redetector.incremental == 0


def test_a_control_cut_by_the_screens_edge_closes_there_in_its_region_too(form):
    redetector = _run([form[0], _drawn(form[0], _cut_by_the_edge)[1]])
    assert redetector.incremental == 1


_COLUMNS = list(range(0, 1200, 80))
_ROWS = list(range(140, 780, 18))


def _sheet() -> Image.Image:
    """A spreadsheet against the screen's left edge: a Name Box field above a ruled
    grid with a shaded header row and column, as LibreOffice Calc draws its sheet."""
    image = Image.new("RGB", (1280, 800), (246, 245, 244))
    draw = ImageDraw.Draw(image)
    _field(draw, (4, 96, 120, 28), "A1")
    draw.rectangle((0, 140, 1180, 776), fill=(255, 255, 255))
    draw.rectangle((0, 140, 1180, 158), fill=(230, 230, 230))
    draw.rectangle((0, 140, 40, 776), fill=(230, 230, 230))
    columns = [0, 40, *range(120, 1181, 80)]
    for x in columns:
        draw.line((x, 140, x, 776), fill=(190, 190, 190))
    for y in range(140, 777, 18):
        draw.line((0, y, 1180, y), fill=(190, 190, 190))
    return image


def _cursor_to(cell: tuple[int, int], name: str) -> Change:
    """The cell cursor moved to (column, row) of the body: its thick border, its
    headers highlighted, the Name Box naming it."""

    def change(draw: ImageDraw.ImageDraw) -> None:
        column, row = cell
        x, y = 40 + 80 * column, 158 + 18 * row
        draw.rectangle((x - 1, y - 1, x + 81, y + 19), outline=(0, 0, 0), width=2)
        draw.rectangle((x + 1, 141, x + 79, 157), fill=(200, 210, 240))
        draw.rectangle((1, y + 1, 39, y + 17), fill=(200, 210, 240))
        _field(draw, (4, 96, 120, 28), name)

    return change


def test_a_cell_cursor_moving_on_a_sheet_is_detected_again_only_around_it():
    sheet = _sheet()
    whole = detect_components(sheet)
    assert [c.kind for c in whole].count("grid") == 1
    redetector = _run(_drawn(sheet, _cursor_to((1, 1), "B2"), _cursor_to((3, 4), "D5")))
    assert redetector.incremental == 2


def test_forget_and_another_max_components_make_the_next_detection_whole(form):
    redetector = _run([form[0]])
    redetector.forget()
    _run([form[0]], redetector)
    assert redetector.incremental == 0
    grey = grey_array(form[0])
    few = redetector.detect(form[0], grey, max_components=5)
    assert redetector.incremental == 0
    assert _found(few) == _found(detect_components(form[0], max_components=5))


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_the_demo_form_through_its_steps_gives_what_whole_detections_give():
    from gui_harness.demo.run import check_saved_state, demo_run
    from openprogram.core.image import ImageRef

    run = demo_run()
    assert check_saved_state(run.state) is None
    dag = run.session.dag
    frames = []
    for node in dag.find(name="observe", kind="code"):
        shot = node.output["screenshot"]
        frames.append(dag.image(shot if isinstance(shot, ImageRef) else shot.ref()).pil)
    assert len(frames) >= 6
    redetector = _run(frames)
    assert redetector.incremental >= len(frames) // 2
