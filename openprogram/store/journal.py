"""Journal: the records of a waiting batch, kept in a file until their commit.

Group commit (recorder.py) writes records to the store in batches; between two commits
they live in memory. A Journal appends each of them to a file beside the store as well
(one `write` system call, no fsync), so a process killed at any instant, SIGKILL
included, loses none of them: the kernel keeps what was written. After each commit the
file is emptied; when the session closes it is removed.

Each writer (session and lease owner) has its own file in `<store>-pending/`, locked
with `flock` for as long as its process lives. Whoever opens the store next finds the
files nobody holds — their writers died — and folds them into the store with
`replay()` (sqlite.py calls it), fenced by the dead writer's lease: rows of a session
another writer has taken over since are refused, and logged. Start at Journal.open().
"""

from __future__ import annotations

import atexit
import json
import logging
import marshal
import os
import secrets
import struct
import weakref
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from openprogram.store.format import NodeRow

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, so no journal (see available)
    fcntl = None  # type: ignore[assignment]

__all__ = ["Journal", "Pending", "available", "pending", "pending_dir", "replay"]

log = logging.getLogger("openprogram.store")

_VERSION = 1
_MARSHAL = 4  # a format every later Python reads
_FRAME = struct.Struct("<II")  # a record's length and CRC-32, before it
_NUMBER, _TEXT, _NONE = (int, float), str, type(None)
_OPTIONAL_TEXT = (_TEXT, _NONE)
_FIELDS: tuple[type | tuple[type, ...], ...] = (
    int, _TEXT, _TEXT, _TEXT, _OPTIONAL_TEXT, _TEXT, _NUMBER, (*_NUMBER, _NONE),
    (int, _NONE), _OPTIONAL_TEXT, _OPTIONAL_TEXT, _OPTIONAL_TEXT,
)  # fmt: skip
"""The types of a NodeRow's fields, checked on every record read back."""


def available() -> bool:
    """Whether journals can be kept here (they need flock: not on Windows, where the
    Recorder commits each record of a SQLite file session at once instead)."""
    return fcntl is not None


def pending_dir(store_path: Path) -> Path:
    """Where the journals of the SQLite file `store_path` live."""
    return store_path.with_name(store_path.name + "-pending")


class Journal:
    """The open journal of one writer: append() before a record waits, clear() after
    its batch is committed, close() when the writer is done."""

    def __init__(self, path: Path, fd: int, header_size: int) -> None:
        self.path = path
        self._fd = fd
        self._header_size = header_size
        self._empty = True

    @classmethod
    def open(cls, directory: Path, session: str, owner: str) -> Journal:
        """A new journal for `owner`'s records of `session` in `directory` (created when
        missing), locked until close() or the process's end. Raises OSError."""
        path = directory / f"{os.getpid()}-{secrets.token_hex(6)}.log"
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
        for attempt in range(3):
            directory.mkdir(mode=0o700, exist_ok=True)
            try:
                fd = os.open(path, flags, 0o600)
                break
            except FileNotFoundError:  # the last journal's owner removed the folder
                if attempt == 2:
                    raise
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            header = json.dumps({"journal": _VERSION, "session": session, "owner": owner})
            os.write(fd, header.encode() + b"\n")
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        journal = cls(path, fd, len(header.encode()) + 1)
        _open.add(journal)
        return journal

    def append(self, row: NodeRow, *, with_input: bool = True) -> None:
        """Add one record (one write: a reader never sees half of it, a kill never
        loses a written one); without `with_input`, its input is left out (an earlier
        record of the node holds it, in this journal or in the store). Raises OSError."""
        values = row[:] if with_input else (*row[:9], None, *row[10:])
        data = marshal.dumps(values, _MARSHAL)
        record = _FRAME.pack(len(data), zlib.crc32(data)) + data
        self._empty = False
        if os.write(self._fd, record) != len(record):  # a full disk: the reader drops it
            raise OSError(f"could not write a whole record to {self.path} (disk full?)")

    def clear(self) -> None:
        """Forget the records: their batch is committed. Raises OSError."""
        if not self._empty:
            os.ftruncate(self._fd, self._header_size)
            self._empty = True

    def close(self) -> None:
        """Remove the file (its records are committed) and let its lock go."""
        if self._fd < 0:
            return
        with suppress(OSError):
            self.path.unlink()
        os.close(self._fd)
        self._fd = -1
        _remove_if_empty(self.path.parent)


_open: weakref.WeakSet[Journal] = weakref.WeakSet()


def _forget_in_child() -> None:
    """In a fork child: close its copies of the parent's journals (the flock stays the
    parent's, the files are never written, emptied or removed from here)."""
    for journal in list(_open):
        if journal._fd >= 0:
            with suppress(OSError):
                os.close(journal._fd)
            journal._fd = -1
    _open.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _close_emptied() -> None:
    """At interpreter exit, remove the journals with nothing left in them (the
    Recorder's flusher, whose exit handler is registered later and so runs first,
    has committed their batches); one still holding records stays for the next opener."""
    for journal in list(_open):
        if journal._empty:
            journal.close()


def _remove_if_empty(directory: Path) -> None:
    """Remove the journals' folder when it holds none (the store's folder stays tidy)."""
    with suppress(OSError):
        directory.rmdir()


@dataclass
class Pending:
    """A dead writer's journal, locked by this process until done() or skip()."""

    path: Path
    session: str
    owner: str
    rows: list[NodeRow]
    torn: bool  # its last record was cut short (the process died writing it)
    _fd: int

    def done(self) -> None:
        """Its rows are in the store (or refused): remove it."""
        with suppress(OSError):
            self.path.unlink()
        self.skip()
        _remove_if_empty(self.path.parent)

    def skip(self) -> None:
        """Leave it for a later opener."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def pending(directory: Path, session: str | None = None) -> Iterator[Pending]:
    """The journals in `directory` whose writers have died (of `session` only, when
    given), each locked while the caller handles it; the caller calls done() or skip().
    Unreadable or foreign files are left alone."""
    if fcntl is None:
        return
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return
    for name in names:
        if not name.endswith(".log"):
            continue
        found = _claim(directory / name, session)
        if found is not None:
            yield found


def _claim(path: Path, session: str | None) -> Pending | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # removed meanwhile, or not ours to read
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_nlink == 0:  # another opener folded it in while we waited
            raise BlockingIOError
        with open(fd, "rb", closefd=False) as file:
            data = file.read()
    except OSError:  # its writer is alive (it holds the lock), or it is gone
        os.close(fd)
        return None
    header, newline, body = data.partition(b"\n")
    if not newline:  # it died creating the file: no record in it
        if session is None:
            return Pending(path, "", "", [], False, fd)
        os.close(fd)
        return None
    try:
        fields = json.loads(header)
        if fields.get("journal") != _VERSION:
            raise ValueError(f"journal version {fields.get('journal')!r}")
        owner, owner_session = str(fields["owner"]), str(fields["session"])
    except Exception:
        os.close(fd)
        log.warning("openprogram: %s is not a journal this version reads; left alone", path)
        return None
    if session is not None and owner_session != session:
        os.close(fd)
        return None
    rows, torn = _records(body)
    return Pending(path, owner_session, owner, _merged(rows), torn, fd)


def _records(body: bytes) -> tuple[list[NodeRow], bool]:
    """The whole records in `body`, and whether it ends in a torn one (the process
    died writing it: it never returned, so nothing was lost)."""
    rows: list[NodeRow] = []
    at = 0
    while at < len(body):
        if len(body) - at < _FRAME.size:
            return rows, True
        size, crc = _FRAME.unpack_from(body, at)
        data = body[at + _FRAME.size : at + _FRAME.size + size]
        if len(data) < size or zlib.crc32(data) != crc:
            return rows, True
        try:
            values = marshal.loads(data)
        except (EOFError, ValueError, TypeError):
            return rows, True
        if not _is_row(values):
            return rows, True
        rows.append(NodeRow(*values))
        at += _FRAME.size + size
    return rows, False


def _is_row(values: object) -> bool:
    return (
        isinstance(values, tuple)
        and len(values) == len(_FIELDS)
        and all(isinstance(v, kind) for v, kind in zip(values, _FIELDS, strict=True))
    )


def _merged(rows: Sequence[NodeRow]) -> list[NodeRow]:
    """The newest record of each node, in seq order; a completion written without its
    input (the created record before it holds it) gets the input back."""
    newest: dict[int, NodeRow] = {}
    for row in rows:
        before = newest.get(row.seq)
        if before is not None and row.input is None and before.id == row.id:
            row = row._replace(input=before.input)
        newest[row.seq] = row
    return [newest[seq] for seq in sorted(newest)]


def replay(
    directory: Path,
    write: Callable[[str, Sequence[NodeRow], str], NodeRow | None],
    where: str,
    session: str | None = None,
) -> int:
    """Fold the dead writers' journals in `directory` into the store: `write(session,
    rows, owner)` upserts them fenced by `owner`'s lease and returns the refused row or
    None. Returns the number of rows folded in; a journal whose rows are refused (its
    session was taken over by another writer) is removed and logged, one whose write
    fails is left for the next opener."""
    folded = 0
    for found in pending(directory, session):
        if not found.rows:
            found.done()
            continue
        try:
            refused = write(found.session, found.rows, found.owner)
        except Exception as exc:
            log.warning(
                "openprogram: could not fold the %d unsaved records of a writer of session "
                "%r that died into %s (left in %s for the next opener): %s",
                len(found.rows), found.session, where, found.path, exc,
            )  # fmt: skip
            found.skip()
            continue
        if refused is None:
            folded += len(found.rows)
            log.info(
                "openprogram: folded %d records of session %r that a writer which died had "
                "not committed into %s",
                len(found.rows), found.session, where,
            )  # fmt: skip
        else:
            log.warning(
                "openprogram: dropped %d records of session %r that a writer which died had "
                "not committed into %s: another writer has recorded into the session since "
                "(node %s #%s)",
                len(found.rows), found.session, where, refused.name, refused.seq,
            )  # fmt: skip
        found.done()
    return folded
