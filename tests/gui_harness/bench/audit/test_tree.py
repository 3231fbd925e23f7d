"""The audit's walk of the AT-SPI trees (gui_harness/bench/audit/tree.py), on perception's
AT-SPI client, on a real app: its controls with roles, names and boxes, and each app's
process, which tells the windows that are its own (asked on the same connection, no
second D-Bus client of the audit's)."""

from __future__ import annotations

import shutil

import pytest

from gui_harness.bench.audit.tree import read_tree
from gui_harness.desktop.virtual import App, VirtualDesktop
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(shutil.which("gtk3-widget-factory") is None, reason="needs gtk-3-examples"),
]


def test_the_walk_reads_a_real_apps_controls_and_its_process():
    with VirtualDesktop((1280, 800), [App(["gtk3-widget-factory"], timeout=60.0)]) as desktop:
        assert desktop.accessibility_bus is not None
        raw = read_tree(desktop.accessibility_bus, deadline_s=20.0)
        apps = {n.app for n in raw.nodes if n.control and n.showing and n.box}
        assert apps, raw.notes
        app = apps.pop()
        assert raw.pids[app] == desktop.pids[-1]
        names = {n.name for n in raw.nodes if n.app == app and n.control}
        assert {"checkbutton", "togglebutton"} <= names  # on the widget factory's first page
        windows = [w for w in desktop.desktop.visible_windows() if w.pid == raw.pids[app]]
        assert windows
