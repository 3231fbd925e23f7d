"""A control named by its value is shown with the caption that labels it: a Qt drop-down
names itself by its current option and links its caption ("Look in:") by a labelled-by
relation only (Qt 5's file dialog not even that: its caption is the label just left of
it, with or without a colon); the component keeps its label (what an exact match of
"/root" needs) and carries the caption, which describe() shows and a task's target may
name."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gui_harness.bench.desktop_oracle import find_target
from gui_harness.bench.desktop_spec import Target
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, describe
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for

_PYTHON = "/usr/bin/python3"  # Debian's PyQt6 lives in the system Python

_FORM = """
import sys
from PyQt6.QtWidgets import QApplication, QComboBox, QGridLayout, QLabel, QLineEdit, QWidget
app = QApplication(sys.argv)
win = QWidget(); win.setWindowTitle('Open'); win.setGeometry(40, 40, 500, 200)
grid = QGridLayout(win)
caption = QLabel('&Look in:'); combo = QComboBox(); combo.addItems(['/root', '/tmp'])
caption.setBuddy(combo)
grid.addWidget(caption, 0, 0); grid.addWidget(combo, 0, 1)
name = QLabel('File &name:'); entry = QLineEdit(); name.setBuddy(entry)
grid.addWidget(name, 1, 0); grid.addWidget(entry, 1, 1)
types = QComboBox(); types.addItems(['All files (*)'])  # captioned, but not linked
grid.addWidget(QLabel('Files of type:'), 2, 0); grid.addWidget(types, 2, 1)
mode = QComboBox(); mode.addItems(['Fast'])  # captioned without a colon (GNOME's forms)
grid.addWidget(QLabel('Speed'), 3, 0); grid.addWidget(mode, 3, 1)
win.show()
app.exec()
"""


def _has_pyqt6() -> bool:
    probe = [_PYTHON, "-c", "import PyQt6.QtWidgets"]
    return Path(_PYTHON).exists() and subprocess.run(probe, capture_output=True).returncode == 0


def test_a_caption_is_kept_apart_from_the_label_and_recorded_only_when_there_is_one():
    plain = Component(1, "dropdown", (10, 20, 100, 24), "/root", 1.0, (), "accessibility")
    captioned = Component(
        1, "dropdown", (10, 20, 100, 24), "/root", 1.0, (), "accessibility", caption="Look in:"
    )
    assert "caption" not in plain.to_dict()  # records without one read as before
    assert Component.from_dict(captioned.to_dict()) == captioned
    assert describe([captioned]) == ('#1 dropdown at (10, 20, 100x24) "/root" captioned "Look in:"')
    assert find_target(Target(label="Look in:"), [captioned]) is captioned
    assert find_target(Target(label="look in"), [captioned]) is captioned
    assert find_target(Target(label="/root"), [captioned]) is captioned
    assert find_target(Target(label_contains="look"), [captioned]) is captioned
    assert find_target(Target(label="Look in:"), [plain]) is None


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
@pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon")
@pytest.mark.skipif(not _has_pyqt6(), reason="python3-pyqt6 is not installed")
def test_a_qt_drop_down_named_by_its_value_carries_the_caption_labelling_it(tmp_path: Path):
    script = tmp_path / "form.py"
    script.write_text(_FORM)
    with VirtualDesktop((800, 600), [App([_PYTHON, str(script)], timeout=60.0)]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            timeout=5.0,
            windows=desktop.desktop.visible_windows,
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "dropdown", "/root")))
            (combo,) = labelled(seen, "dropdown", "/root")  # its label stays its value
            assert combo.caption == "Look in:"
            # an entry Qt names by its caption already: no second copy of it
            (entry,) = labelled(seen, "field", "File name:")
            assert entry.caption is None
            # and a task names it as the user says it, with or without the colon
            assert find_target(Target(label="File name"), seen.components) is entry
            assert find_target(Target(label="File name:"), seen.components) is entry
            # a caption Qt does not link (Qt 5's file dialog): the label ending in a colon
            # just left of it on its row
            (types,) = labelled(seen, "dropdown", "All files (*)")
            assert types.caption == "Files of type:"
            # nor a colon: the text left of it on its row, by captions.py's layout rule
            (mode,) = labelled(seen, "dropdown", "Fast")
            assert mode.caption == "Speed"
        finally:
            source.close()


_GROUPED = """
import sys
from PyQt6.QtWidgets import (QApplication, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                             QSpinBox, QVBoxLayout, QWidget)
app = QApplication(sys.argv)
win = QWidget(); win.setWindowTitle('Prefs'); win.resize(500, 300)
group = QGroupBox('Window Settings')
form = QFormLayout(group)
size = QSpinBox(); size.setValue(5); form.addRow('Start with this size:', size)
row = QHBoxLayout(); delay = QSpinBox(); delay.setValue(7)
row.addWidget(QLabel('Delay of auto-selection:')); row.addWidget(delay); form.addRow(row)
QVBoxLayout(win).addWidget(group)
win.show()
app.exec()
"""


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
@pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon")
@pytest.mark.skipif(not _has_pyqt6(), reason="python3-pyqt6 is not installed")
def test_a_qt_spin_box_named_by_its_group_box_is_captioned_by_its_row(tmp_path: Path):
    """Qt links a spin box no caption is linked to to its group box and names it so
    ("Window Settings", featherpad's and pcmanfm-qt's preferences): that is no name of
    the field, and its caption is the label left of it on its row."""
    script = tmp_path / "prefs.py"
    script.write_text(_GROUPED)
    with VirtualDesktop((800, 600), [App([_PYTHON, str(script)], timeout=60.0)]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            timeout=5.0,
            windows=desktop.desktop.visible_windows,
        )
        try:
            seen = wait_for(source, lambda s: sum(c.kind == "field" for c in s.components) == 2)
        finally:
            source.close()
    first, second = sorted(
        (c for c in seen.components if c.kind == "field"), key=lambda c: c.box[1]
    )
    assert first.label == "Start with this size:" and first.caption is None
    assert second.label is None, seen.components
    assert second.caption == "Delay of auto-selection:"
    assert not [c for c in seen.components if c.label == "Window Settings"]
