"""A Qt 6 app on a VirtualDesktop publishes its accessibility tree, as Qt 5 apps do: a
real PyQt6 form registers on the desktop's AT-SPI registry, and its controls are read
with their names, roles and boxes (the boxes checked against where Qt placed them)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest
from jeepney import DBusAddress, Properties, new_method_call
from jeepney.io.blocking import open_dbus_connection

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from tests.support.toolkits import ACCESSIBLE

_PYTHON = "/usr/bin/python3"  # Debian's PyQt6 lives in the system Python


def _has_pyqt6() -> bool:
    if not Path(_PYTHON).exists():
        return False
    probe = [_PYTHON, "-c", "import PyQt6.QtWidgets"]
    return subprocess.run(probe, capture_output=True, check=False).returncode == 0


pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(not _has_pyqt6(), reason="python3-pyqt6 is not installed"),
]

# The form writes where Qt placed each control (global pixels), again and again, so the
# test compares the tree's boxes with Qt's own once the window manager has placed it.
_FORM = """
import json, os, sys
from PyQt6.QtCore import QTimer
from PyQt6.QtWidgets import (QApplication, QCheckBox, QComboBox, QFormLayout, QLineEdit,
    QPushButton, QTabWidget, QVBoxLayout, QWidget)
app = QApplication(sys.argv)
out = sys.argv[1]
win = QWidget(); win.setWindowTitle('Qt 6 form'); win.resize(420, 260)
tabs = QTabWidget()
general = QWidget(); form = QFormLayout(general)
name = QLineEdit(); name.setAccessibleName('Display name'); form.addRow('Display name', name)
lang = QComboBox(); lang.addItems(['English', 'German']); lang.setAccessibleName('Language')
form.addRow('Language', lang)
beta = QCheckBox('Enable beta features'); form.addRow(beta)
tabs.addTab(general, 'General'); tabs.addTab(QWidget(), 'Advanced')
save = QPushButton('Save')
layout = QVBoxLayout(win); layout.addWidget(tabs); layout.addWidget(save)
def report():
    placed = {}
    for key, widget in (('name', name), ('lang', lang), ('beta', beta), ('save', save)):
        corner = widget.mapToGlobal(widget.rect().topLeft())
        placed[key] = [corner.x(), corner.y(), widget.width(), widget.height()]
    with open(out + '.part', 'w') as f:
        json.dump(placed, f)
    os.replace(out + '.part', out)
timer = QTimer(); timer.timeout.connect(report); timer.start(100)
win.show()
app.exec()
"""

_LIMIT_S = 20.0  # a registered Qt app shows its tree within a second or two


def test_a_qt6_app_publishes_its_controls_with_names_roles_and_boxes(tmp_path: Path) -> None:
    script = tmp_path / "form.py"
    script.write_text(_FORM)
    placed_file = tmp_path / "placed.json"
    app = App([_PYTHON, str(script), str(placed_file)], ready=placed_file.exists)
    with VirtualDesktop((800, 600), [app]) as desktop:
        assert desktop.accessibility_bus is not None, desktop.accessibility_note
        assert _toolkits(desktop.accessibility_bus) == [("Qt", "6")]  # it registered
        source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5)
        try:
            snapshot, placed = _read_in_place(source, placed_file)
        finally:
            source.close()
    assert snapshot.note is None and snapshot.apps == 1
    controls = {
        "save": _named(snapshot, "button", "Save"),
        "name": _named(snapshot, "field", "Display name"),
        "lang": _named(snapshot, "dropdown", "English"),  # what it shows
        "beta": _named(snapshot, "checkbox", "Enable beta features"),
    }
    for key, found in controls.items():
        assert len(found) == 1, (key, snapshot.components)
        whole = key != "beta"
        assert _near(found[0].box, placed[key], whole=whole), (key, found[0].box, placed[key])
    assert [c.label for c in snapshot.components if c.kind == "tab"] == ["General", "Advanced"]


def _toolkits(bus: str) -> list[tuple[str, str]]:
    """(toolkit, major version) of each app embedded in the registry at `bus`, read as a
    screen reader does, waiting up to _LIMIT_S for the first to register."""
    root = DBusAddress(
        "/org/a11y/atspi/accessible/root",
        bus_name="org.a11y.atspi.Registry",
        interface="org.a11y.atspi.Accessible",
    )
    deadline = time.monotonic() + _LIMIT_S
    with open_dbus_connection(bus) as connection:
        while True:
            reply = connection.send_and_get_reply(new_method_call(root, "GetChildren"), timeout=5)
            children = reply.body[0]
            if children or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        found = []
        for name, path in children:
            app = DBusAddress(path, bus_name=name, interface="org.a11y.atspi.Application")
            toolkit = connection.send_and_get_reply(Properties(app).get("ToolkitName"), timeout=5)
            version = connection.send_and_get_reply(Properties(app).get("Version"), timeout=5)
            found.append((toolkit.body[0][1], version.body[0][1].split(".")[0]))
    return found


def _read_in_place(
    source: AccessibilitySource, placed_file: Path
) -> tuple[AccessibilitySnapshot, dict[str, list[int]]]:
    """A snapshot showing the Save button, and where Qt placed its controls, read before
    and after it alike (so the window manager did not move the window in between)."""
    deadline = time.monotonic() + _LIMIT_S
    while True:
        before = json.loads(placed_file.read_text())
        snapshot = source.snapshot()
        after = json.loads(placed_file.read_text())
        shown = bool(_named(snapshot, "button", "Save")) and before == after
        if shown or time.monotonic() > deadline:
            return snapshot, after
        time.sleep(0.1)


def _named(snapshot: AccessibilitySnapshot, kind: str, label: str) -> list[Component]:
    return [c for c in snapshot.components if c.kind == kind and c.label == label]


def _near(box: tuple[int, int, int, int], placed: list[int], *, whole: bool) -> bool:
    """`box` is where Qt placed the widget (within 2 px), or, not `whole`, a part of it
    from its left edge (a check box's box and caption, not the row its widget spans)."""
    x, y, width, height = box
    left, top, full_width, full_height = placed
    if whole:
        return all(abs(a - b) <= 2 for a, b in zip(box, placed, strict=True))
    return (
        abs(x - left) <= 2
        and top - 2 <= y
        and y + height <= top + full_height + 2
        and 0 < width <= full_width
    )
