"""Icon-only buttons an app leaves with no name and no tooltip (gnome-font-viewer's
Search): named by the theme icon they draw when it is a common action's (_icons.py), on
a real GTK 4 window on Xvfb."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Perception
from tests.support.toolkits import GTK4

HEADER_BAR = """
import gi
gi.require_version("Gtk", "4.0")
from gi.repository import Gtk

def activate(app):
    window = Gtk.ApplicationWindow(application=app, title="Icons")
    window.set_default_size(600, 300)
    bar = Gtk.HeaderBar()
    for icon in ("edit-find-symbolic", "list-add-symbolic"):  # no name, no tooltip
        bar.pack_start(Gtk.Button(icon_name=icon))
    bar.pack_end(Gtk.MenuButton(icon_name="open-menu-symbolic"))
    bar.pack_end(Gtk.Button(icon_name="starred-symbolic"))  # no action of ours: unnamed
    window.set_titlebar(bar)
    window.set_child(Gtk.Label(label="Body"))
    window.present()

app = Gtk.Application(application_id="org.example.Icons")
app.connect("activate", activate)
app.run(None)
"""


pytestmark = [
    *GTK4,
    pytest.mark.skipif(
        not Path("/usr/share/icons/Adwaita/16x16").is_dir(), reason="no Adwaita icons"
    ),
]


def test_unnamed_icon_buttons_are_named_by_their_theme_icons(tmp_path):
    script = tmp_path / "icons.py"
    script.write_text(HEADER_BAR)
    with VirtualDesktop((1280, 800), [App(["/usr/bin/python3", str(script)], timeout=60.0)]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            deadline = time.monotonic() + 60
            while True:  # until the window's four header buttons are in the tree
                snapshot = source.snapshot()
                buttons = [c for c in snapshot.components if c.kind == "button" and c.box[1] < 60]
                if len(buttons) >= 4:
                    break
                assert time.monotonic() < deadline, snapshot.components
                time.sleep(0.2)
            d.wait_settled(timeout=5.0)
            seen = Perception(accessibility=source, ocr=False).perceive(
                d.screenshot(), accessibility=source.snapshot()
            )
        finally:
            source.close()
    icons = sorted(
        (c.box[0], c.label)
        for c in seen.components
        if c.source == "accessibility" and c.kind == "button" and c.box[2] <= 48
    )
    labels = [label for _, label in icons]
    assert labels[:2] == ["Search", "Add"], icons
    assert "Main Menu" in labels, icons
    assert labels.count(None) == 1, icons  # the star: no action of ours, no label
