"""ComponentMemory: remembering crops, matching them at other scales, and its files."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from gui_harness.perception import (
    FORMAT_VERSION,
    Component,
    ComponentMemory,
    default_data_dir,
    detect_components,
)
from gui_harness.perception.memory import memory as memory_module
from openprogram.errors import UsageError
from tests.gui_harness.perception.screens import iou

SAVE = (140, 270, 100, 34)
APPLY = (800, 150, 110, 32)
CHECKBOX = (140, 190, 16, 16)


class Clock:
    """A settable clock for last_seen and forget()."""

    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _at(components: list[Component], box: tuple[int, int, int, int]) -> Component:
    return max(components, key=lambda c: iou(c.box, box))


def _scaled(image: Image.Image, scale: float) -> Image.Image:
    return image.resize((round(image.width * scale), round(image.height * scale)))


def _scaled_box(box: tuple[int, int, int, int], scale: float) -> tuple[int, int, int, int]:
    return tuple(round(v * scale) for v in box)  # type: ignore[return-value]


@pytest.fixture
def taught(form, tmp_path):
    """A memory that knows the Save and Apply buttons of the form."""
    image, _ = form
    memory = ComponentMemory("Demo", tmp_path, save_interval=0)
    components = detect_components(image)
    memory.remember(image, _at(components, SAVE), "Save")
    memory.remember(image, _at(components, APPLY), "Apply")
    return memory


def test_remembered_components_are_labelled_on_the_same_screen(form, taught):
    image, _ = form
    labelled = taught.label(image, detect_components(image))
    assert {c.label: c.box for c in labelled if c.label} == {
        "Save": _at(labelled, SAVE).box,
        "Apply": _at(labelled, APPLY).box,
    }


@pytest.mark.parametrize("scale", [1.0, 1.2])
def test_remembered_components_are_labelled_at_another_scale(form, taught, scale):
    image = _scaled(form[0], scale)
    components = detect_components(image)
    matches = taught.match(image, components)
    found = {c.label: (c, score) for c, score in matches}
    assert set(found) == {"Save", "Apply"}
    for label, truth in (("Save", SAVE), ("Apply", APPLY)):
        component, score = found[label]
        assert iou(component.box, _scaled_box(truth, scale)) > 0.5
        assert component.index == _at(components, component.box).index
        assert 0.85 <= score <= 1.0 + 1e-6


@pytest.mark.parametrize("scale", [1.0, 1.2, 0.8])
def test_a_search_without_components_finds_them_anywhere(form, taught, scale):
    image = _scaled(form[0], scale)
    found = {c.label: c for c, _ in taught.match(image)}
    assert set(found) == {"Save", "Apply"}
    assert iou(found["Save"].box, _scaled_box(SAVE, scale)) > 0.7
    assert iou(found["Apply"].box, _scaled_box(APPLY, scale)) > 0.7
    assert [c.index for c in sorted(found.values(), key=lambda c: c.index)] == [1, 2]


def test_a_screen_without_them_gets_no_labels(taught):
    blank = Image.new("RGB", (1280, 800), (236, 236, 236))
    assert taught.match(blank) == []
    assert taught.match(blank, [Component(1, "button", SAVE)]) == []


def test_matches_count_hits_and_last_seen_and_reach_the_index(form, tmp_path):
    image, _ = form
    clock = Clock()
    memory = ComponentMemory("Demo", tmp_path, clock=clock, save_interval=60)
    components = detect_components(image)
    memory.remember(image, _at(components, SAVE), "Save")
    clock.now += 10
    memory.label(image, components)
    memory.label(image, components)
    (entry,) = memory.entries
    assert (entry.hits, entry.last_seen) == (2, clock.now)
    assert ComponentMemory("Demo", tmp_path).entries[0].hits == 0  # not yet written
    memory.flush()
    assert ComponentMemory("Demo", tmp_path).entries[0].hits == 2


def test_files_live_under_the_app_slug_with_a_versioned_index(form, taught, tmp_path):
    assert taught.directory == (tmp_path / "components" / "demo").resolve()
    index = json.loads((taught.directory / "index.json").read_text())
    assert index["version"] == FORMAT_VERSION
    assert sorted(e["label"] for e in index["entries"]) == ["Apply", "Save"]
    crops = sorted(p.name for p in (taught.directory / "crops").iterdir())
    assert crops == sorted(e["file"] for e in index["entries"])
    again = ComponentMemory("Demo", tmp_path)
    assert [e.label for e in again.entries] == [e.label for e in taught.entries]
    labelled = again.label(form[0], detect_components(form[0]))
    assert {c.label for c in labelled if c.label} == {"Save", "Apply"}


def test_the_same_label_remembered_again_replaces_its_crop(form, taught):
    image, _ = form
    before = {e.label: e.id for e in taught.entries}
    entry = taught.remember(image, Component(1, "button", SAVE), "Save", pinned=True)
    assert entry.id == before["Save"] and entry.pinned
    assert len(taught) == 2


def test_a_failed_index_write_leaves_the_old_index_whole(form, taught, monkeypatch):
    index = taught.directory / "index.json"
    before = index.read_bytes()

    def fail(source: str, target: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(memory_module.os, "replace", fail)
    with pytest.raises(OSError, match="disk full"):
        taught.remember(form[0], Component(1, "checkbox", CHECKBOX), "Subscribe")
    assert index.read_bytes() == before
    leftovers = [p.name for p in taught.directory.rglob("*.tmp")]
    assert leftovers == []


def test_forget_drops_the_least_recently_seen_but_spares_pinned(form, tmp_path):
    image, _ = form
    clock = Clock()
    memory = ComponentMemory("Demo", tmp_path, clock=clock)
    boxes = {"Save": SAVE, "Apply": APPLY, "Subscribe": CHECKBOX}
    for label, box in boxes.items():
        kind = "checkbox" if label == "Subscribe" else "button"
        memory.remember(image, Component(1, kind, box), label, pinned=label == "Save")
        clock.now += 100
    removed = memory.forget(max_entries=1)
    assert [e.label for e in removed] == ["Apply", "Subscribe"]
    assert [e.label for e in memory.entries] == ["Save"]
    assert len(list((memory.directory / "crops").iterdir())) == 1
    assert [e.label for e in ComponentMemory("Demo", tmp_path).entries] == ["Save"]


def test_forget_older_than_keeps_recent_and_pinned_entries(form, tmp_path):
    image, _ = form
    clock = Clock()
    memory = ComponentMemory("Demo", tmp_path, clock=clock)
    memory.remember(image, Component(1, "button", SAVE), "Save", pinned=True)
    memory.remember(image, Component(1, "button", APPLY), "Apply")
    clock.now += 3600
    memory.remember(image, Component(1, "checkbox", CHECKBOX), "Subscribe")
    removed = memory.forget(older_than=600)
    assert [e.label for e in removed] == ["Apply"]
    assert sorted(e.label for e in memory.entries) == ["Save", "Subscribe"]


@pytest.mark.parametrize("app", ["../evil", "a/b", "a\\b", "..", ".", "", "   ", "!!!"])
def test_app_names_that_are_paths_or_empty_are_rejected(tmp_path, app):
    with pytest.raises(UsageError, match="app="):
        ComponentMemory(app, tmp_path)
    assert not (tmp_path / "components").exists() or list(tmp_path.rglob("*.json")) == []


def test_app_names_are_sanitised_into_a_directory_inside_the_root(tmp_path):
    memory = ComponentMemory("My App: Settings (v2)", tmp_path)
    assert memory.directory == (tmp_path / "components" / "my-app-settings-v2").resolve()


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe\x00binary", b""])
def test_a_corrupt_index_is_moved_aside_and_memory_starts_empty(
    form, taught, tmp_path, caplog, garbage
):
    index = taught.directory / "index.json"
    index.write_bytes(garbage)
    with caplog.at_level(logging.WARNING, logger="gui_harness.perception.memory.memory"):
        memory = ComponentMemory("Demo", tmp_path)
    assert memory.entries == []
    assert "unreadable" in caplog.text
    aside = list(taught.directory.glob("index.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    memory.remember(form[0], Component(1, "button", SAVE), "Save")
    assert [e.label for e in ComponentMemory("Demo", tmp_path).entries] == ["Save"]


@pytest.mark.parametrize(
    "change",
    [
        {"version": 99},
        {"entries": "nope"},
        {
            "entries": [
                {
                    "id": "x",
                    "label": "Save",
                    "kind": "button",
                    "size": [9, 9],
                    "file": "../../../etc/passwd",
                }
            ]
        },
        {
            "entries": [
                {
                    "id": "x",
                    "label": "Save",
                    "kind": "slider",
                    "size": [9, 9],
                    "file": "0123456789abcdef.png",
                }
            ]
        },
    ],
)
def test_an_index_with_bad_entries_or_version_is_not_trusted(taught, tmp_path, change):
    index = taught.directory / "index.json"
    data = json.loads(index.read_text())
    data.update(change)
    index.write_text(json.dumps(data))
    assert ComponentMemory("Demo", tmp_path).entries == []
    assert list(taught.directory.glob("index.json.corrupt-*"))


def test_an_entry_whose_crop_is_missing_is_dropped(taught, tmp_path):
    save = next(e for e in taught.entries if e.label == "Save")
    (taught.directory / "crops" / save.file).unlink()
    assert [e.label for e in ComponentMemory("Demo", tmp_path).entries] == ["Apply"]


def test_remember_refuses_empty_labels_and_boxes_off_the_image(form, tmp_path):
    memory = ComponentMemory("Demo", tmp_path)
    with pytest.raises(UsageError, match="label"):
        memory.remember(form[0], Component(1, "button", SAVE), " ")
    with pytest.raises(UsageError, match="not inside"):
        memory.remember(form[0], Component(1, "button", (5000, 10, 50, 20)), "Far")
    assert len(memory) == 0


def test_the_data_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("OPENPROGRAM_DATA_DIR", str(tmp_path / "explicit"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "explicit"
    monkeypatch.delenv("OPENPROGRAM_DATA_DIR")
    assert default_data_dir() == tmp_path / "xdg" / "openprogram"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_data_dir() == Path(tmp_path) / ".local" / "share" / "openprogram"
    assert (
        ComponentMemory("Demo").directory
        == (tmp_path / ".local/share/openprogram/components/demo").resolve()
    )
