"""Process groups that end when the process that started them dies, however it dies.

Owns `TetheredProcess`: a Popen that leads a new session and process group in which a
small watcher waits on a pipe whose only write end this (owning) process holds. When
that end closes (release(), or the owner's death, SIGKILL included: the kernel closes
it) the watcher stops the whole group: SIGTERM, then SIGKILL after a grace period.
PR_SET_PDEATHSIG would not do: it fires when the forking *thread* exits, and worker
threads start desktops. Also owns `group_members` / `group_gone`.

The process it starts runs _tether_launch.py, which forks the watcher and then execs the
program in its own pid.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gui_harness.desktop._tether_launch import group_gone, group_members

__all__ = ["TetheredProcess", "group_gone", "group_members"]

_LAUNCHER = str(Path(__file__).with_name("_tether_launch.py"))


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
        launcher = [sys.executable, "-I", "-S", _LAUNCHER, str(read_fd), program, *argv]
        try:
            super().__init__(launcher, pass_fds=pass_fds, start_new_session=True, **kwargs)
        except BaseException:
            self.release()
            raise
        finally:
            os.close(read_fd)

    def stop_group(self, timeout: float) -> None:
        """Send the whole group SIGTERM, wait up to `timeout` seconds for this process,
        then SIGKILL the group and reap it. The group's other members (processes that
        are not our children) may outlive it; release() still closes the tether."""
        # the unreaped leader keeps its pid (and so its group id) reserved: signalling
        # is safe
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGTERM)
        try:
            self.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
            self.wait()

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
