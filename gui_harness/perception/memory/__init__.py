"""Component memory: what an app's components are called, kept per app on disk
(DESIGN.md §8).

memory.py owns the index and the template crops (remember, match, label, forget);
_match.py the multi-scale template matching behind it. Start at memory.py's
ComponentMemory.
"""

from gui_harness.perception.memory.memory import (
    FORMAT_VERSION,
    SCALES,
    ComponentMemory,
    MemoryEntry,
    default_data_dir,
)

__all__ = ["FORMAT_VERSION", "SCALES", "ComponentMemory", "MemoryEntry", "default_data_dir"]
