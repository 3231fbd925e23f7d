"""The SQLite files this process has found whole: SQLiteStore checks a file once, not on
every open, while only this process's own writes change it.

SQLite's quick_check (sqlite.py's _check_integrity) reads every page of the tables it
covers, so a check on every open made opening a store cost as much as its file is large:
a program recording each session through its own `Session(path)` slowed as the file grew
(issue 43: 10 000 sessions took 1 850 s). A file found whole is noted here by its device,
inode, modification time and size. Where this process's own SQLite connection wrote the
file (closing it, a checkpoint), the store notes its new time and size (refresh); a file
changed otherwise (by another process, by hand, a copy put in its place) no longer
matches and is checked again. No descriptor is kept on the file: closing one would drop
every POSIX lock SQLite holds on it in this process. At most _LIMIT files are noted (the
oldest forgotten first). Start at found_whole().
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ["found_whole", "note_whole", "refresh"]

_LIMIT = 64
_noted: OrderedDict[tuple[int, int], tuple[int, int]] = OrderedDict()
"""(device, inode) -> (modification time in ns, size) when last known whole."""
_lock = threading.Lock()


def _stat(path: Path) -> tuple[tuple[int, int], tuple[int, int]] | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino), (found.st_mtime_ns, found.st_size)


def found_whole(path: Path) -> bool:
    """Whether this process has found the file at `path` whole, and nothing but its own
    writes changed it since."""
    found = _stat(path)
    if found is None:
        return False
    key, state = found
    with _lock:
        if _noted.get(key) != state:
            return False
        _noted.move_to_end(key)
        return True


def note_whole(path: Path) -> None:
    """Note that the file at `path` is whole as it is now."""
    found = _stat(path)
    if found is None:
        return
    key, state = found
    with _lock:
        _noted[key] = state
        _noted.move_to_end(key)
        while len(_noted) > _LIMIT:
            _noted.popitem(last=False)


def refresh(path: Path) -> None:
    """This process's own SQLite connection has just written the file at `path`: a file
    noted whole stays noted, as it is now."""
    found = _stat(path)
    if found is None:
        return
    key, state = found
    with _lock:
        if key in _noted:
            _noted[key] = state
