"""A row of a list that a menu mostly covers keeps its name on the part that shows
(issue 41, "drawn text left unlabelled"): Qt 5 lists a side pane's row as a named item
and an unnamed one in the same place, a little wider; under an open menu the named one
showed under a quarter of itself and was dropped, the unnamed one kept, unnamed, where
the row's first letters are drawn (pcmanfm-qt's "root", "Desktop", … under its Edit
menu). A real pcmanfm-qt on Xvfb."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.support.toolkits import ACCESSIBLE

pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(shutil.which("pcmanfm-qt") is None, reason="scripts/setup.sh --dev"),
]


def _pane(seen: AccessibilitySnapshot, right: int) -> list[Component]:
    """The tree's buttons (rows) ending left of `right`, below the menu bar."""
    return [
        c
        for c in seen.components
        if c.kind == "button" and c.box[0] + c.box[2] <= right and c.box[1] > 100
    ]


def test_rows_a_menu_mostly_covers_keep_their_names(tmp_path: Path) -> None:
    runtime = tmp_path / "runtime"
    runtime.mkdir(mode=0o700)
    # a home of its own: nothing shared with a pcmanfm-qt another test runs meanwhile
    home = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "XDG_RUNTIME_DIR": str(runtime)}  # fmt: skip
    app = App(["pcmanfm-qt", str(tmp_path)], env=home, timeout=60.0)
    with VirtualDesktop((1280, 800), [app]) as desktop:
        source = AccessibilitySource(
            desktop.accessibility_bus, screen=desktop.size, timeout=5.0,
            windows=desktop.desktop.visible_windows,
        )  # fmt: skip
        try:
            first = wait_for(
                source,
                lambda s: (
                    bool(labelled(s, "button", "Edit"))
                    and sum(bool(c.label) for c in _pane(s, 200)) >= 5
                ),
            )
            (edit,) = labelled(first, "button", "Edit")
            seen = first
            for _ in range(3):  # a busy Qt may drop the click: click until the menu shows
                desktop.execute(Click(x=edit.center[0], y=edit.center[1]))
                seen = wait_for(source, lambda s: len(desktop.desktop.visible_windows()) > 1)
                if len(desktop.desktop.visible_windows()) > 1:
                    break
            menu = desktop.desktop.visible_windows()[-1]
            seen = wait_for(source, lambda s: bool(_pane(s, menu.x + 2)), limit=20)
            seen = source.snapshot()  # (the menu's window listed, what it covers cut)
        finally:
            source.close()
    rows = _pane(seen, menu.x + 2)
    assert len(rows) >= 3, seen.components  # (the rows the menu leaves a strip of)
    assert all(row.label for row in rows), rows
    # each named as it was before the menu opened: the row at its height then
    for row in rows:
        before = [c.label for c in first.components if abs(c.box[1] - row.box[1]) <= 2]
        assert row.label in before, (row, before)
