"""A process tree killed whole (kill_tree), and the reaper that holds a command's tree.

kill_tree stops every process of a tree (SIGSTOP, until none is new), then SIGKILLs them
all. This file run as a script (`python -I -S`, few and cheap imports: it starts for
every bash command) is a command's reaper: a child subreaper (PR_SET_CHILD_SUBREAPER),
so what the command starts stays in its tree even after `setsid` or a double fork; it
reports the command's exit status, reaps what it left, and at its time limit (or
SIGTERM, or its parent's death) kills the whole tree. _command.py starts it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time

__all__ = ["descendants", "kill_tree"]

_PROC = "/proc"


def _parents() -> dict[int, list[int]]:
    """Each process's children, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir(_PROC):
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC}/{name}/stat", "rb") as file:
                stat = file.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat[stat.rfind(b")") + 2 :].split()  # the name may hold spaces and ')'
        children.setdefault(int(fields[1]), []).append(int(name))
    return children


def descendants(root: int) -> list[int]:
    """Every process below `root` (children, theirs, ...), from /proc."""
    children = _parents()
    found: list[int] = []
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), ()):
            found.append(child)
            stack.append(child)
    return found


def _signal(pid: int, number: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone, or not ours
        os.kill(pid, number)


def _stopped(pids: list[int], until: float) -> None:
    """Wait (briefly) until each of `pids` is stopped or dead, so none forks after."""
    for pid in pids:
        while time.monotonic() < until:
            try:
                with open(f"{_PROC}/{pid}/stat", "rb") as file:
                    stat = file.read()
            except OSError:
                break
            if stat[stat.rfind(b")") + 2 :][:1] in (b"T", b"t", b"Z", b"X"):
                break
            time.sleep(0.001)


def kill_tree(root: int, *, include_root: bool = True) -> None:
    """SIGKILL `root` (unless include_root=False) and every process below it: first each
    is stopped (SIGSTOP), again and again until no new one appears, so none can fork or
    leave the tree meanwhile. Without /proc (not Linux): root's process group only."""
    if not os.path.isdir(f"{_PROC}/self"):
        try:
            os.killpg(root, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            if include_root:
                _signal(root, signal.SIGKILL)
        return
    stopped: set[int] = set()
    if include_root:
        _signal(root, signal.SIGSTOP)
        stopped.add(root)
    until = time.monotonic() + 2.0
    for _ in range(10_000):  # a fork bomb is stopped a generation at a time
        new = [pid for pid in descendants(root) if pid not in stopped]
        if not new:
            break
        for pid in new:
            _signal(pid, signal.SIGSTOP)
        stopped.update(new)
        _stopped(new, until)
    for pid in stopped:
        _signal(pid, signal.SIGKILL)


# -- the reaper (this file run as a script) ---------------------------------------------
def _reap(command: int, status_fd: int) -> bool:
    """Reap what ended; report the command's exit status. False once no child is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == command:
            os.write(status_fd, b"%d\n" % os.waitstatus_to_exitcode(status))
            os.close(status_fd)


def _main(argv: list[str]) -> None:
    status_fd, limit_s, parent = int(argv[0]), float(argv[1]), int(argv[2])
    command = argv[4:]
    os.set_inheritable(status_fd, False)  # what the command starts must not hold it open
    try:  # Linux: orphans of the tree come to this process; its parent's death ends it
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (ImportError, OSError, AttributeError):
        pass
    deadline = time.monotonic() + limit_s
    ending = {signal.SIGCHLD, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, ending)
    if os.getppid() != parent:  # the parent went before the death signal was set
        os._exit(1)
    defaults = {signal.SIGPIPE, signal.SIGXFSZ, *ending}
    try:
        pid = os.posix_spawnp(command[0], command, os.environ, setsigmask=(), setsigdef=defaults)
    except OSError as exc:
        os.write(2, f"{command[0]}: {exc.strerror}\n".encode())
        os.write(status_fd, b"127\n")
        os._exit(0)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):  # the output pipe's end is the command's now: EOF when it is done
        os.dup2(null, fd)
    os.close(null)
    while _reap(pid, status_fd):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        got = signal.sigtimedwait(ending, remaining)
        if got is not None and got.si_signo != signal.SIGCHLD:
            break
    kill_tree(os.getpid(), include_root=False)
    while True:
        try:
            os.wait()
        except ChildProcessError:
            os._exit(0)


if __name__ == "__main__":
    _main(sys.argv[1:])
