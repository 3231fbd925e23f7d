"""Ctrl-C for a command started as a child process: SIGINT sent, its exit waited for, and
where it hangs when it does not stop (faulthandler's stacks), never a timing assert.

`sigint_ignored` and `sigint_blocked` are `preexec_fn`s that start a child as a parent
that ignores or blocks SIGINT would (a shell's background job, a test runner's worker).
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess

import pytest

__all__ = ["FAULTHANDLER", "interrupted", "sigint_blocked", "sigint_ignored"]

FAULTHANDLER = {"PYTHONFAULTHANDLER": "1"}
"""A child's environment addition: a SIGABRT makes it print every thread's stack."""

_TGKILL = 234  # x86_64's syscall number


def sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def sigint_blocked() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def interrupted(process: subprocess.Popen[str], *, thread: bool = False) -> str:
    """SIGINT `process` (delivered to one of its other threads when `thread`, as the
    kernel may deliver it) and its stderr once it has exited; a process still running
    after 60 s is aborted (its stacks in the failure), never left behind."""
    if thread:  # tgkill: signal one thread, not the process
        tids = [int(t) for t in os.listdir(f"/proc/{process.pid}/task") if int(t) != process.pid]
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.syscall(_TGKILL, process.pid, tids[0], signal.SIGINT) == 0
    else:
        process.send_signal(signal.SIGINT)
    try:
        return process.communicate(timeout=60)[1]
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
        try:
            errors = process.communicate(timeout=20)[1]
        except subprocess.TimeoutExpired:
            process.kill()
            errors = process.communicate()[1]
        pytest.fail(
            f"{' '.join(map(str, process.args))} was still running 60 s after SIGINT "
            f"(aborted); its threads:\n{errors[-6000:]}"
        )
