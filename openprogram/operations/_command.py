"""Command: a command run under its reaper (_reaper.py), with its output on a pipe.

The reaper holds everything the command starts in one process tree; Command waits for
the command's exit status on a pipe of its own, kills the tree on demand, and after the
command ended lets what it left run until the time limit, watched from here. Used by
builtins.py (bash).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time

from openprogram.operations import _reaper
from openprogram.operations._reaper import kill_tree

__all__ = ["Command"]


class Command:
    """`argv` running under a reaper, with its output (stdout and stderr together) on
    `.stdout`. wait(timeout) says whether the command itself ended (then `.exit_code`,
    None if the reaper went without telling); kill() ends it and all it started;
    release() leaves what it started running until `limit_s` after the start, then
    kills it (a reaper that is stopped or killed meanwhile does not change that)."""

    def __init__(self, argv: list[str], *, cwd: str | None, limit_s: float) -> None:
        read, write = os.pipe()
        reaper = [sys.executable, "-I", "-S", _reaper.__file__, str(write), repr(limit_s)]
        try:
            self.process = subprocess.Popen(
                [*reaper, str(os.getpid()), "--", *argv],
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                pass_fds=(write,),
                start_new_session=True,
            )
        except BaseException:
            os.close(read)
            raise
        finally:
            os.close(write)
        self.stdout = self.process.stdout
        self.deadline = time.monotonic() + limit_s
        self.exit_code: int | None = None
        self.ended = False
        self._status = read
        self._told = b""

    def wait(self, timeout: float) -> bool:
        """Whether the command ended (waiting at most `timeout` seconds for it)."""
        poller = select.poll()
        poller.register(self._status, select.POLLIN)
        if not self.ended and poller.poll(timeout * 1000):
            data = os.read(self._status, 64)
            self._told += data
            if not data:  # the reaper closed it: told, or gone
                self.ended = True
                os.close(self._status)
                text = self._told.decode("ascii", "replace").strip()
                self.exit_code = int(text) if text.lstrip("-").isdigit() else None
        return self.ended

    def kill(self) -> None:
        """Stop and kill the reaper, the command and everything it started."""
        kill_tree(self.process.pid)
        self.process.wait()
        if not self.ended:
            self.ended = True
            os.close(self._status)

    def release(self) -> None:
        """The command ended: what it left runs on until the limit, watched from here."""

        def watch() -> None:
            try:
                self.process.wait(timeout=max(0.0, self.deadline - time.monotonic()))
            except subprocess.TimeoutExpired:  # the reaper did not end it (stopped?)
                self.kill()

        if self.process.poll() is None:
            threading.Thread(target=watch, daemon=True, name="openprogram-reaper").start()
