"""The SQLite files this process has found whole: SQLiteStore checks a file once, not on
every open, while only this process's own writes change it.

SQLite's quick_check (sqlite.py's _check_integrity) reads every page of the tables it
covers, so a check on every open made opening a store cost as much as its file is large:
a program recording each session through its own `Session(path)` slowed as the file grew
(issue 43: 10 000 sessions took 1 850 s). A file found whole is noted here by its device
and inode, with its modification time and size, and a descriptor kept open on it so
that no other file can take that inode while it is noted. Where this process's own
SQLite connection wrote the file (closing it, a checkpoint), the store notes the new
time (refresh); a file changed otherwise (by another process, by hand) is checked again,
and so is one deleted and made anew. At most _LIMIT files are noted (the oldest
forgotten first). Start at found_whole().
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict
from pathlib import Path

__all__ = ["found_whole", "note_whole", "refresh"]

_LIMIT = 64
_noted: OrderedDict[tuple[int, int], tuple[int, int, int]] = OrderedDict()
"""(device, inode) -> (descriptor kept open on it, modification time in ns, size)."""
_lock = threading.Lock()


def found_whole(path: Path) -> bool:
    """Whether this process has found the file at `path` whole, and nothing but its own
    writes changed it since."""
    try:
        found = os.stat(path)
    except OSError:
        return False
    key = (found.st_dev, found.st_ino)
    with _lock:
        _forget_deleted()
        noted = _noted.get(key)
        if noted is None or noted[1:] != (found.st_mtime_ns, found.st_size):
            return False
        _noted.move_to_end(key)
        return True


def note_whole(path: Path) -> None:
    """Note that the file at `path` is whole as it is now (a file that cannot be opened
    for reading is not noted: it is checked again next time)."""
    try:
        descriptor = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        found = os.fstat(descriptor)
    except OSError:
        os.close(descriptor)
        return
    key = (found.st_dev, found.st_ino)
    with _lock:
        old = _noted.pop(key, None)
        if old is not None:
            os.close(old[0])
        _noted[key] = (descriptor, found.st_mtime_ns, found.st_size)
        while len(_noted) > _LIMIT:
            _, (oldest, _, _) = _noted.popitem(last=False)
            os.close(oldest)


def refresh(path: Path) -> None:
    """This process's own SQLite connection has just written the file at `path`: a file
    noted whole stays noted, as it is now."""
    try:
        found = os.stat(path)
    except OSError:
        return
    key = (found.st_dev, found.st_ino)
    with _lock:
        noted = _noted.get(key)
        if noted is not None:
            _noted[key] = (noted[0], found.st_mtime_ns, found.st_size)


def _forget_deleted() -> None:
    for key, (descriptor, _, _) in list(_noted.items()):
        try:
            gone = os.fstat(descriptor).st_nlink == 0
        except OSError:
            gone = True
        if gone:
            del _noted[key]
            with contextlib.suppress(OSError):
                os.close(descriptor)
