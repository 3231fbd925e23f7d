"""Journal: the records of a waiting batch, kept in a file until their commit.

Group commit (recorder.py) writes records to the store in batches; between two commits
they live in memory. A Journal appends each of them to a file beside the store as well,
so a process killed at any instant, SIGKILL included, loses none of them: the kernel
keeps what was written. A record is one pwrite (no fsync), never a copy into a map of
the file: another process cutting the file would kill the writer with SIGBUS, and no
check before the copy can rule that out. The writer notices a file cut short at its
next record and commits its batch at once (append() returns False), and starts the
file afresh. Each record carries the file's generation, which clear() advances after
the batch's commit, so the records of an earlier batch left in the file are never read
again. Generations come from one counter of the process: of a writer's two files, the
one holding the newer batch has the higher generation, and its records win when they
are folded in together. When the session closes the file is removed.

Each writer (session and lease owner) has its own files in `<store>-pending/` (two: the
records of the batch being committed in one, those made meanwhile in the other), locked
with `flock` for as long as its process lives. Whoever opens the store next finds the
files nobody holds — their writers died — and folds them into the store with
`replay()` (sqlite.py calls it), a writer's files together, fenced by the dead writer's
lease: rows of a session another writer has taken over since are refused, and logged.
The folder and its files are trusted only when they are ours (_checked_folder, _claim):
anything else is named in a warning and left alone; a file grown long is read a record
at a time. The bytes of a journal file are _records.py's. Start at Journal.open().
"""

from __future__ import annotations

import atexit
import errno
import itertools
import json
import logging
import os
import secrets
import stat
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from openprogram.store._records import (
    FRAME,
    FRAME_LIMIT,
    RECORDS_LIMIT,
    SLOT,
    VERSION,
    Damaged,
    body_records,
    header,
    record,
)
from openprogram.store.format import NodeRow

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock, so no journal (see available)
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "FRAME_LIMIT", "RECORDS_LIMIT", "Journal", "JournalRefused", "Pending", "available",
    "pending", "pending_dir", "replay",
]  # fmt: skip

log = logging.getLogger("openprogram.store")

_RESERVE = 64 << 10
"""Bytes for records a new journal reserves, doubled when full; cut back to this after
a commit once it grew past _KEEP."""
_KEEP = 1 << 20
_ALLOCATE = hasattr(os, "posix_fallocate")
"""Whether the reserved space is allocated on disk (a full disk then fails the
reservation, not a record); elsewhere the file is only extended."""
_generations = itertools.count(1)
"""Every journal's generation, at its start and at each clear(): a later batch's file
has a higher one than an earlier batch's, whichever of a writer's two files it is."""
_OPEN_ATTEMPTS = 20
"""New files a writer makes before it gives up, when openers keep taking them."""
_HEADER_LIMIT = 64 << 10
_READ = 1 << 16  # a reader's buffer (bytes)
_FOLDER_FLAGS = os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_DIRECTORY", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
"""Opening a journal never follows a symbolic link nor waits (on a FIFO, say)."""


class JournalRefused(OSError):
    """The journals' folder, or a file in it, is not this store's own (another user's,
    writable by others, a symbolic link, not a regular file): nothing is written into
    it or read from it. The message names it and says why."""


def available() -> bool:
    """Whether journals can be kept here (they need flock: not on Windows, where the
    Recorder commits each record of a SQLite file session at once instead)."""
    return fcntl is not None


def pending_dir(store_path: Path) -> Path:
    """Where the journals of the SQLite file `store_path` live."""
    return store_path.with_name(store_path.name + "-pending")


def _owners(directory: Path) -> set[int]:
    """Who may own the journals in `directory`: this process's user, and the owner of
    the store file it belongs to."""
    owners = {os.geteuid()}
    with suppress(OSError):
        owners.add(os.stat(directory.with_name(directory.name[: -len("-pending")])).st_uid)
    return owners


def _foreign(found: os.stat_result, owners: set[int]) -> str | None:
    """Why a folder or file with this stat is not ours, or None when it is."""
    if found.st_uid not in owners:
        mine = " or ".join(str(uid) for uid in sorted(owners))
        return (
            f"it belongs to uid {found.st_uid}, not to the store's owner or this process ({mine})"
        )
    if found.st_mode & 0o022:
        return f"others than its owner may write it (mode {stat.filemode(found.st_mode)})"
    return None


def _checked_folder(directory: Path, *, create: bool) -> int:
    """A descriptor of the journals' folder, which is ours: created 0700 when `create`
    and missing. Raises JournalRefused when it is not ours, OSError when it cannot be
    opened (FileNotFoundError: there is none)."""
    if create:
        with suppress(FileExistsError):
            os.mkdir(directory, 0o700)
    try:
        fd = os.open(directory, _FOLDER_FLAGS | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise JournalRefused(
                f"the journals' folder {str(directory)!r} is not used: it is a symbolic "
                "link or not a folder"
            ) from None
        raise
    why = _foreign(os.fstat(fd), _owners(directory))
    if why is not None:
        os.close(fd)
        raise JournalRefused(f"the journals' folder {str(directory)!r} is not used: {why}")
    return fd


class Journal:
    """The open journal of one writer: append() before a record waits, clear() after
    its batch is committed, close() when the writer is done."""

    def __init__(self, path: Path, fd: int, folder: int, line: bytes, generation: int) -> None:
        self.path = path
        self._fd = fd
        self._folder = folder  # the checked folder's descriptor: the file is removed there
        self._line = line  # the header line, written again when the file is cut short
        self._start = len(line) + SLOT.size  # where records begin, after the generation
        self._at = self._start  # where the next record goes
        self._generation = generation
        self._capacity = 0  # the file's reserved size: it is shorter only when cut
        self._empty = True

    @classmethod
    def open(cls, directory: Path, session: str, owner: str) -> Journal:
        """A new journal for `owner`'s records of `session` in `directory` (created 0700
        when missing), locked until close() or the process's end. Raises JournalRefused
        when the folder is not ours (see _checked_folder), OSError when it cannot be.

        Between creating the file and locking it, an opener folding dead writers'
        journals in may take the file (unlocked, headerless: a writer that died
        creating it) and remove it. So the lock is taken only on a file still linked
        in the folder, else a new file is made: records are never written into a file
        no opener can find."""
        for _ in range(_OPEN_ATTEMPTS):
            journal = cls._create(directory, session, owner)
            if journal is not None:
                _open.add(journal)
                return journal
        raise OSError(
            errno.EAGAIN,
            f"could not start a journal in {str(directory)!r}: each new file was taken by "
            f"another process folding journals in ({_OPEN_ATTEMPTS} tries)",
        )

    @classmethod
    def _create(cls, directory: Path, session: str, owner: str) -> Journal | None:
        """One try of open(): None when another process took the new file first."""
        name = f"{os.getpid()}-{secrets.token_hex(6)}.log"
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | _NOFOLLOW
        for attempt in range(3):
            folder = _checked_folder(directory, create=True)
            try:
                fd = os.open(name, flags, 0o600, dir_fd=folder)
                break
            except FileNotFoundError:  # the last journal's owner removed the folder
                os.close(folder)
                if attempt == 2:
                    raise
            except BaseException:
                os.close(folder)
                raise
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # an opener holds it, to remove it: leave it that
                taken = True
            else:  # the file we locked may be one an opener removed meanwhile
                taken = os.fstat(fd).st_nlink == 0
            if taken:
                os.close(fd)
                with suppress(OSError):  # its name is ours alone (O_EXCL, random)
                    os.unlink(name, dir_fd=folder)
                os.close(folder)
                return None
            generation = next(_generations)
            start = header(session, owner, generation)
            _write_all(fd, start, 0)
            journal = cls(directory / name, fd, folder, start[: -SLOT.size], generation)
            journal._reserve(journal._start + _RESERVE)
        except BaseException:
            os.close(fd)
            with suppress(OSError):
                os.unlink(name, dir_fd=folder)
            os.close(folder)
            raise
        return journal

    def append(self, row: NodeRow, *, with_input: bool = True) -> bool:
        """Add one record (a reader never takes half of it, a kill never loses a
        written one); without `with_input`, its input is left out (an earlier record of
        the node holds it, in this journal or in the store). False when it is not added
        (commit it now, with the batch): it would pass FRAME_LIMIT or RECORDS_LIMIT, or
        another process has cut the file short, losing the records before it (the file
        is started afresh for the next batch). Raises OSError (no space left: the
        records written before it stay)."""
        written = record(row, with_input, self._generation)
        end = self._at + len(written)
        if len(written) - FRAME.size > FRAME_LIMIT or end - self._start > RECORDS_LIMIT:
            return False
        if end >= self._capacity:  # never up to the end: a file cut, then written, is shorter
            self._reserve(min(max(end + 1, 2 * self._capacity), self._start + RECORDS_LIMIT + 1))
        _write_all(self._fd, written, self._at)
        if self._size() < self._capacity:  # checked after the write: so is a cut during it
            self._restart()
            return False
        self._at = end
        self._empty = False
        return True

    @property
    def empty(self) -> bool:
        """Whether it holds no record (none written since it was opened or cleared)."""
        return self._empty

    def forget_in_fork_child(self) -> None:
        """In a fork child: close this copy of the parent's journal, which stays the
        parent's (its flock, its file): never written, emptied or removed from here."""
        if self._fd >= 0:
            with suppress(OSError):
                os.close(self._fd)
                os.close(self._folder)
            self._fd = self._folder = -1

    def clear(self) -> None:
        """Forget the records: their batch is committed. Raises OSError."""
        if self._empty:
            return
        generation = next(_generations)
        _write_all(self._fd, SLOT.pack(generation), self._start - SLOT.size)
        self._generation, self._at, self._empty = generation, self._start, True
        size = self._size()
        if size < self._capacity:
            self._restart()
        elif size - self._start > _KEEP:  # a burst is over, or another process grew it
            self._capacity = size
            self._reserve(self._start + _RESERVE)

    def _size(self) -> int:
        """The file's size: short of the reserved size only when another process cut
        it (one that grew it took nothing from it; a reader stops at our records' end)."""
        return os.lseek(self._fd, 0, os.SEEK_END)

    def _restart(self) -> None:
        """Start the file afresh after it was cut: its header, a new generation (what is
        left of its records is never read), its space. Raises OSError."""
        self._generation = next(_generations)
        self._at, self._empty = self._start, True
        _write_all(self._fd, self._line + SLOT.pack(self._generation), 0)
        os.ftruncate(self._fd, self._start + _RESERVE)  # nothing the other process left
        self._capacity = 0
        self._reserve(self._start + _RESERVE)

    def _reserve(self, size: int) -> None:
        """Make the file `size` bytes, every one of them on disk where it can be.
        OSError when the disk has no room: the journal stays as it was, nothing written
        lost."""
        if size < self._capacity or not _ALLOCATE:
            os.ftruncate(self._fd, size)
        if _ALLOCATE:
            os.posix_fallocate(self._fd, 0, size)
        self._capacity = size

    def close(self) -> None:
        """Remove the file (its records are committed) and let its lock go. Once, when
        called from two threads at once (a session's closing and the exit handler):
        a descriptor closed twice could be another file's by then."""
        with _closing:
            fd, folder = self._fd, self._folder
            self._fd = self._folder = -1
        if fd < 0:
            return
        with suppress(OSError):
            os.unlink(self.path.name, dir_fd=folder)
        os.close(fd)
        os.close(folder)
        _remove_if_empty(self.path.parent)


def _write_all(fd: int, data: bytes, at: int) -> None:
    """Write `data` at offset `at` of `fd`: OSError when not all of it went (a full
    disk; a reader takes a cut record for one the process died writing)."""
    if os.pwrite(fd, data, at) != len(data):
        raise OSError(errno.ENOSPC, f"could not write {len(data)} bytes (disk full?)")


_open: weakref.WeakSet[Journal] = weakref.WeakSet()
_closing = threading.Lock()


def _forget_in_child() -> None:
    """In a fork child: close its copies of the parent's journals (the flock stays the
    parent's, the files are never written, emptied or removed from here)."""
    global _closing
    _closing = threading.Lock()  # a parent's thread may have held it at the fork
    for journal in list(_open):
        journal.forget_in_fork_child()
    _open.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


@atexit.register
def _close_emptied() -> None:
    """At interpreter exit, remove the journals with nothing left in them (the
    Recorder's flusher, whose exit handler is registered later and so runs first,
    has committed their batches); one still holding records stays for the next opener."""
    for journal in list(_open):
        if journal.empty:
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
    generation: int  # of its records (0: format 1, which has none)
    _fd: int

    def done(self) -> None:
        """Its rows are in the store (or refused): remove it."""
        with suppress(OSError):
            folder = _checked_folder(self.path.parent, create=False)
            try:
                os.unlink(self.path.name, dir_fd=folder)
            finally:
                os.close(folder)
        self.skip()
        _remove_if_empty(self.path.parent)

    def skip(self) -> None:
        """Leave it for a later opener."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def pending(
    directory: Path, session: str | None = None, refused: list[str] | None = None
) -> Iterator[Pending]:
    """The journals in `directory` whose writers have died (of `session` only, when
    given), each locked while the caller handles it; the caller calls done() or skip().
    Unreadable files are left alone; a folder or file that is not ours (see
    JournalRefused), or is damaged, is left alone and why is added to `refused`."""
    if fcntl is None:
        return
    try:
        folder = _checked_folder(directory, create=False)
    except JournalRefused as exc:
        _refuse(refused, str(exc))
        return
    except OSError:
        return
    try:
        names = sorted(os.listdir(folder))
        owners = _owners(directory)
        for name in names:
            if not name.endswith(".log"):
                continue
            found = _claim(folder, directory / name, session, owners, refused)
            if found is not None:
                yield found
    finally:
        os.close(folder)


_warned: set[str] = set()


def _refuse(refused: list[str] | None, why: str) -> None:
    """Note a refused folder or file: in `refused` when given, else logged (once per
    process and reason, so a planted file does not flood the log)."""
    if refused is not None:
        refused.append(why)
    elif why not in _warned:
        _warned.add(why)
        log.warning("openprogram: %s; nothing in it is folded into the store", why)


def _claim(
    folder: int, path: Path, session: str | None, owners: set[int], refused: list[str] | None
) -> Pending | None:
    try:
        fd = os.open(path.name, os.O_RDONLY | os.O_CLOEXEC | _NOFOLLOW, dir_fd=folder)
    except OSError as exc:  # removed meanwhile, or not ours to read
        if exc.errno == errno.ELOOP:
            _refuse(refused, f"the journal {str(path)!r} is not read: it is a symbolic link")
        return None
    try:
        found = os.fstat(fd)
        why = _foreign(found, owners)
        if not stat.S_ISREG(found.st_mode):
            why = "it is not a regular file"
        if why is not None:
            os.close(fd)
            _refuse(refused, f"the journal {str(path)!r} is not read: {why}")
            return None
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if os.fstat(fd).st_nlink == 0:  # another opener folded it in while we waited
            raise BlockingIOError
        with open(fd, "rb", buffering=_READ, closefd=False) as file:
            return _parse(path, file, session, fd, refused)
    except Damaged as exc:
        os.close(fd)
        _refuse(refused, f"the journal {str(path)!r} is damaged and not read: {exc}")
        return None
    except OSError:  # its writer is alive (it holds the lock), or it is gone, or unreadable
        os.close(fd)
        return None


def _parse(
    path: Path, file: BinaryIO, session: str | None, fd: int, refused: list[str] | None
) -> Pending | None:
    """The journal `file` reads (of the caller's locked `fd`, closed here when it is not
    returned, or when this raises): its header line, then its records one at a time.
    Damaged when its first _HEADER_LIMIT bytes hold no line, or a record is one no
    writer writes (see _records)."""
    line = file.readline(_HEADER_LIMIT + 1)
    if not line.endswith(b"\n"):
        if len(line) > _HEADER_LIMIT:
            raise Damaged(f"its first {_HEADER_LIMIT:,} bytes hold no header line")
        if session is None:  # it died creating the file: no record in it
            return Pending(path, "", "", [], False, 0, fd)
        os.close(fd)
        return None
    try:
        fields = json.loads(line)
        version = fields.get("journal")
        if version not in (1, VERSION):
            raise ValueError(f"journal version {version!r}")
        owner, owner_session = fields["owner"], fields["session"]
        if not isinstance(owner, str) or not isinstance(owner_session, str):
            raise ValueError("a header without the writer and session")
    except Exception:
        os.close(fd)
        _refuse(refused, f"{str(path)!r} is not a journal this version reads")
        return None
    if session is not None and owner_session != session:
        os.close(fd)
        return None
    rows, torn, generation = body_records(version, file.read)
    return Pending(path, owner_session, owner, _merged(rows), torn, generation, fd)


def _merged_files(found: Sequence[Pending]) -> list[NodeRow]:
    """The rows of one writer's journals together (the Recorder keeps two: the batch
    being committed in one, the next batch in the other): the newer batch's, the file of
    the higher generation, win. Format 1 files have no generation, so between them a
    node's completion (it has an end) wins over its start."""
    if all(journal.generation for journal in found):
        ordered = sorted(found, key=lambda journal: journal.generation)
        return _merged([row for journal in ordered for row in journal.rows])
    return _merged([row for journal in found for row in journal.rows], across=True)


def _merged(rows: Sequence[NodeRow], *, across: bool = False) -> list[NodeRow]:
    """The newest record of each node, in seq order; a completion written without its
    input (the created record before it holds it) gets the input back. `across`: the
    rows come from several files, so a completion wins over a start written after it."""
    newest: dict[int, NodeRow] = {}
    for row in rows:
        before = newest.get(row.seq)
        if before is not None and before.id == row.id:
            if across and before.ended_at is not None and row.ended_at is None:
                row, before = before, row
            if row.input is None:
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
    fails is left for the next opener. A writer's journals are folded in together."""
    folded = 0
    writers: dict[tuple[str, str], list[Pending]] = {}
    for found in pending(directory, session):
        writers.setdefault((found.session, found.owner), []).append(found)
    for (of, owner), journals in writers.items():
        rows = _merged_files(journals)
        if not rows:
            refused = None
        else:
            try:
                refused = write(of, rows, owner)
            except Exception as exc:
                log.warning(
                    "openprogram: could not fold the %d unsaved records of a writer of "
                    "session %r that died into %s (left in %s for the next opener): %s",
                    len(rows), of, where, ", ".join(str(j.path) for j in journals), exc,
                )  # fmt: skip
                for journal in journals:
                    journal.skip()
                continue
        if rows and refused is None:
            folded += len(rows)
            log.info(
                "openprogram: folded %d records of session %r that a writer which died had "
                "not committed into %s",
                len(rows), of, where,
            )  # fmt: skip
        elif refused is not None:
            log.warning(
                "openprogram: dropped %d records of session %r that a writer which died had "
                "not committed into %s: another writer has recorded into the session since "
                "(node %s #%s)",
                len(rows), of, where, refused.name, refused.seq,
            )  # fmt: skip
        for journal in journals:
            journal.done()
    return folded
