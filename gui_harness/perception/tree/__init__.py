"""The accessibility tree: the controls apps publish on the AT-SPI bus (DESIGN.md §8).

One D-Bus connection reads every app, a browser by one Collection query, any other app by
a bounded walk of its tree (_tree_walk.py, kept current across snapshots, on
_tree_read.py's reading of each object, with its grids and managed lists, into
_tree_node.py's elements); elements become components placed in the desktop's windows
(_tree_elements.py, _tree_windows.py); TreeWatch (_tree_settle.py) says when a tree
caught up with an action; _atspi.py holds the protocol's names and calls. Start at
accessibility.py's AccessibilitySource.snapshot().
"""

from gui_harness.perception.tree.accessibility import (
    ROLE_KINDS,
    AccessibilitySnapshot,
    AccessibilitySource,
)

__all__ = ["ROLE_KINDS", "AccessibilitySnapshot", "AccessibilitySource"]
