"""Process groups that end when the process that started them dies, however it dies.

Owns `TetheredProcess`: a Popen that leads a new session and process group in which a
small watcher waits on a pipe whose only write end this (owning) process holds. When
that end closes (release(), or the owner's death, SIGKILL included: the kernel closes
it) the watcher stops the whole group: SIGTERM, then SIGKILL after a grace period.
PR_SET_PDEATHSIG would not do: it fires when the forking *thread* exits, and worker
threads start desktops. Also owns `group_members` / `group_gone`.

Run as a script (`python -I -S _tether.py FD PROGRAM ARGV...`) this file is the
launcher: it forks the watcher, then execs PROGRAM with ARGV in its own pid. Stdlib only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["TetheredProcess", "group_gone", "group_members"]

_GRACE_S = 5.0
_POLL_S = 0.01  # no event tells us when a process we did not start exits


class TetheredProcess(subprocess.Popen[bytes]):
    """`subprocess.Popen(argv, start_new_session=True, **kwargs)`, whose process group a
    watcher in it ends once this process's end of the tether closes.

    The process itself runs `argv` under its own pid (the group's id); `pass_fds` and
    the other Popen arguments work as usual. Stop the group yourself (os.killpg) and
    then call release(): the watcher, still waiting, dies of that signal with the rest.
    Raises FileNotFoundError / PermissionError as Popen would when `argv[0]` cannot run.
    """

    def __init__(self, argv: Sequence[str], **kwargs: Any) -> None:
        argv = [str(arg) for arg in argv]
        program = _executable(argv[0])
        read_fd, self._tether = os.pipe()  # both O_CLOEXEC: no other child inherits them
        pass_fds = (*kwargs.pop("pass_fds", ()), read_fd)
        launcher = [sys.executable, "-I", "-S", __file__, str(read_fd), program, *argv]
        try:
            super().__init__(launcher, pass_fds=pass_fds, start_new_session=True, **kwargs)
        except BaseException:
            self.release()
            raise
        finally:
            os.close(read_fd)

    def release(self) -> None:
        """Close the tether: the watcher stops whatever is left of the group. Idempotent."""
        fd, self._tether = self._tether, -1
        if fd >= 0:
            os.close(fd)


def _executable(name: str) -> str:
    found = shutil.which(name)
    if found is not None:
        return found
    problem = errno.EACCES if os.sep in name and os.path.exists(name) else errno.ENOENT
    raise OSError(problem, os.strerror(problem), name)


def group_gone(group: int, timeout: float, *, besides: int | None = None) -> bool:
    """Wait until no running process (other than pid `besides`) is left in process group
    `group`; whether none is by `timeout` seconds. Zombies count as gone."""
    deadline = time.monotonic() + timeout
    while [pid for pid in group_members(group) if pid != besides]:
        if time.monotonic() > deadline:
            return False
        time.sleep(_POLL_S)
    return True


def group_members(group: int) -> list[int]:
    """The pids of the running (not zombie) processes in process group `group`."""
    members = []
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(entry.name))
    return members


def _watch(fd: int) -> None:
    """The watcher: wait for EOF on `fd`, then end every other process of our group."""
    os.closerange(0, fd)  # hold no other pipe open (a reader would wait on us for EOF)
    os.closerange(fd + 1, os.sysconf("SC_OPEN_MAX"))
    with contextlib.suppress(OSError):
        while os.read(fd, 4096):
            pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the group's SIGTERM is for the others
    group = os.getpgrp()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    if not group_gone(group, _GRACE_S, besides=os.getpid()):
        os.killpg(group, signal.SIGKILL)  # ends this watcher too


def _launch(args: list[str]) -> None:
    fd, program, argv = int(args[0]), args[1], args[2:]
    if os.fork() == 0:
        try:
            _watch(fd)
        finally:
            os._exit(0)
    os.close(fd)
    os.execv(program, argv)


if __name__ == "__main__":
    _launch(sys.argv[1:])
