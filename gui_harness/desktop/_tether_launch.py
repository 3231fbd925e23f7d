"""The program a TetheredProcess runs (`python -I -S _tether_launch.py FD PROGRAM ARGV...`):
it forks the watcher of its new process group, then execs PROGRAM with ARGV in its own
pid. The watcher waits for EOF on the tether FD, then stops every other process of the
group. Also `group_members` / `group_gone`, which the watcher needs. Imports little
(it starts with every Xvfb, bus and app): no subprocess, no pathlib.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

_GRACE_S = 5.0
_POLL_S = 0.01  # no event tells us when a process we did not start exits


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
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rsplit(b") ", 1)[1].split()
        except (OSError, IndexError):
            continue  # exited while we looked
        if int(fields[2]) == group and fields[0] != b"Z":
            members.append(int(name))
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
