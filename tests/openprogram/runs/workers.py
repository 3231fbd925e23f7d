"""Worker processes for the run tests: `openprogram worker STORE` children whose stderr
is read line by line, so a test waits for what a worker says, and FIFOs that tell a test
when a worker reached a point of its run (tests/openprogram/runs/jobs.py's pause()).
"""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.openprogram.runs import jobs
from tests.support.children import ROOT

__all__ = ["WorkerProcess", "at_pause", "ran"]


class WorkerProcess:
    """`python -m openprogram worker STORE ...` in the checkout, its stderr collected."""

    def __init__(self, store: str, *args: str, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "openprogram", "worker", store, *args],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), **env},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.lines: list[str] = []
        self._new: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.wait_for("ready")

    @property
    def pid(self) -> int:
        return self.process.pid

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            self._new.put(line)
        self._new.put(None)

    def wait_for(self, text: str, timeout: float = 120.0) -> str:
        """The first line from now on holding `text` (AssertionError, with what the
        worker said, when it ends or `timeout` passes first)."""
        while True:
            try:
                line = self._new.get(timeout=timeout)
            except queue.Empty:
                said = self.said()
                raise AssertionError(f"no {text!r} from worker {self.pid}:\n{said}") from None
            if line is None:
                raise AssertionError(f"worker {self.pid} ended before {text!r}:\n{self.said()}")
            if text in line:
                return line

    def said(self) -> str:
        return "".join(self.lines[-40:])

    def signal(self, signum: int) -> None:
        if self.process.poll() is None:  # (not once it ended and was reaped)
            os.kill(self.pid, signum)

    def stop(self) -> int:
        """End the worker (drained) and return its exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=120)
        self._close()
        return code

    def wait(self) -> int:
        """Wait for the worker to end on its own; its exit code."""
        code = self.process.wait(timeout=120)
        self._close()
        return code

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=60)
        self._close()

    def _close(self) -> None:
        self._reader.join(timeout=30)
        if self.process.stderr is not None:
            self.process.stderr.close()


@contextmanager
def at_pause(fifos: Path, label: str) -> Iterator[None]:
    """Make pause point `label`, and wait until a worker stands at it: the block runs
    while it waits there; leaving the block lets it go on (if it still lives)."""
    path = fifos / label
    os.mkfifo(path)
    with open(path, "w"):  # returns once a worker opened it for reading
        path.unlink()  # whoever comes there next (a worker taking over) passes
        yield


def ran(log: Path) -> list[str]:
    """What the job bodies really ran, without the pids."""
    return [line.rsplit(" ", 1)[0] for line in log.read_text().splitlines()]


def pids(log: Path, entry: str) -> list[int]:
    return [int(line.rsplit(" ", 1)[1]) for line in log.read_text().splitlines()
            if line.rsplit(" ", 1)[0] == entry]  # fmt: skip


ENV = (jobs.LOG, jobs.FIFOS)
