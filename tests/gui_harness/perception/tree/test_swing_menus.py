"""A Swing menu as drawn (Java through Debian's ATK wrapper, which VirtualDesktop switches
on): the wrapper reports a popup menu's items where the menu that opened it is, not where
the popup draws them (13–20 px too high, over the menu bar), and the popup is drawn in
its window (no window of its own), so nothing in the window listing says what it covers.
The items are offered where they show, the button under the open menu is not, and once
the menu closed and another opened its items are gone (Java says nothing of them). A real
Swing window (a one-file Java program) on Xvfb."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from gui_harness.actions import Click, Keypress
from gui_harness.desktop.buses import JAVA_ATK_WRAPPER
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySnapshot, AccessibilitySource, Component
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.support.toolkits import ACCESSIBLE


def _has_java_compiler() -> bool:
    if shutil.which("java") is None:
        return False
    modules = subprocess.run(["java", "--list-modules"], capture_output=True, text=True)
    return "jdk.compiler@" in modules.stdout


pytestmark = [
    *ACCESSIBLE,
    pytest.mark.skipif(not _has_java_compiler(), reason="needs a JDK's java (default-jdk)"),
    pytest.mark.skipif(
        not Path(JAVA_ATK_WRAPPER).exists(), reason="needs libatk-wrapper-java(-jni)"
    ),
]

_PROGRAM = """
import javax.swing.*;
import java.awt.*;

public class Menus {
    public static void main(String[] args) {
        SwingUtilities.invokeLater(() -> {
            JFrame frame = new JFrame("Menus");
            JMenuBar bar = new JMenuBar();
            JMenu file = new JMenu("File");
            for (String name : new String[] {"Alpha", "Beta", "Gamma", "Delta"}) {
                file.add(new JMenuItem(name));
            }
            bar.add(file);
            JMenu edit = new JMenu("Edit");
            for (String name : new String[] {"Cut", "Copy"}) {
                edit.add(new JMenuItem(name));
            }
            bar.add(edit);
            frame.setJMenuBar(bar);
            JPanel row = new JPanel(new FlowLayout(FlowLayout.LEFT, 0, 0));
            row.add(new JButton("Under"));
            row.add(new JButton("Aside the menu"));
            frame.getContentPane().add(row, BorderLayout.NORTH);
            frame.setSize(400, 300);
            frame.setLocation(0, 0);
            frame.setVisible(true);
        });
    }
}
"""


def _items(snapshot: AccessibilitySnapshot) -> list[Component]:
    names = ("Alpha", "Beta", "Gamma", "Delta")
    return [c for c in snapshot.components if c.label in names]


def _placed(snapshot: AccessibilitySnapshot, file: Component) -> bool:
    """Whether the menu's items are all offered, below the File menu (the popup, added
    with no event where it is, is read a moment after its items)."""
    items = _items(snapshot)
    return len(items) == 4 and all(c.box[1] >= file.box[1] + file.box[3] - 2 for c in items)


def test_a_swing_menus_items_are_where_drawn_and_hide_what_is_under_it(tmp_path: Path) -> None:
    source_file = tmp_path / "Menus.java"
    source_file.write_text(_PROGRAM)
    app = App(["java", str(source_file)], timeout=90.0, env={"HOME": str(tmp_path)})
    with VirtualDesktop((1024, 768), [app]) as d:
        source = AccessibilitySource(
            d.accessibility_bus, screen=d.size, timeout=5.0, windows=d.desktop.visible_windows
        )
        try:
            seen = wait_for(source, lambda s: bool(labelled(s, "button", "Under")))
            (file,) = labelled(seen, "button", "File")
            (under,) = labelled(seen, "button", "Under")
            (aside,) = labelled(seen, "button", "Aside the menu")
            d.execute(Click(x=file.center[0], y=file.center[1]))
            seen = wait_for(source, lambda s: _placed(s, file), limit=30)
            # closed, and another menu opened: the first one's items are gone (Java
            # says nothing of them when its popup closes)
            d.execute(Keypress(keys=["escape"]))
            (edit,) = labelled(seen, "button", "Edit")
            d.execute(Click(x=edit.center[0], y=edit.center[1]))
            other = wait_for(source, lambda s: bool(labelled(s, "button", "Copy")), limit=30)
            other = wait_for(source, lambda s: not _items(s), limit=10)
        finally:
            source.close()
    assert not _items(other), other.components
    items = [
        c for name in ("Alpha", "Beta", "Gamma", "Delta") for c in labelled(seen, "button", name)
    ]
    assert len(items) == 4, seen.components
    # the popup opens below the menu bar: its first item is below the File menu, not on it
    assert min(c.box[1] for c in items) >= file.box[1] + file.box[3] - 2, items
    tops = sorted(c.box[1] for c in items)
    assert tops == sorted(set(tops))  # one below the other
    # the button under the open menu is not offered; the one beside it still is
    first = min(items, key=lambda c: c.box[1])
    assert first.box[1] <= under.box[1] + under.box[3] // 2 <= first.box[1] + first.box[3] + 4
    assert not labelled(seen, "button", "Under")
    assert [c.box for c in labelled(seen, "button", "Aside the menu")] == [aside.box]
