"""ProcessOperations: operations run in a separate sandbox process, over a socketpair.

The parent (this module) records each operation `running` before it sends it, then
reads the child's reports on a thread of its own, which never blocks and trusts the
child with no deadline: a child that is silent too long, sends a frame that is not one,
stops halfway through a frame or runs an operation past its kind's time limit is taken
for dead and killed with everything it started. The child (_child.py) runs under
bubblewrap (`bwrap`) when it is installed on Linux, else as a plain child process with
resource limits; docs/operations.md says what either does and does not protect. A child
that dies takes its running operations with it: they are reported `lost` (the tracker
applies each kind's effect rule) and the next operation starts a new child.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Literal

from openprogram.errors import UsageError
from openprogram.operations._reaper import kill_tree
from openprogram.operations._wire import FrameError, Frames, encode, write_frame
from openprogram.operations.manager import Report
from openprogram.operations.operation import Operation, OperationKind

__all__ = ["ProcessOperations", "Sandbox", "paths_under_tmp"]

log = logging.getLogger("openprogram.operations")

Sandbox = Literal["auto", "bwrap", "rlimits"]
"""auto: bwrap when installed (Linux), else rlimits. bwrap: bubblewrap or an error.
rlimits: a plain child process with resource limits (no file system isolation)."""
_START_TIMEOUT_S = 30.0
_STDERR_KEPT = 8192  # bytes of the child's stderr kept to say why it ended
_REPORTS = ("heartbeat", "done", "failed", "cancelled")


class ProcessOperations:
    """Runs operations in one sandbox process reached over a unix socketpair.

    sandbox: see `Sandbox`. workdir: the one folder the sandbox may write (bwrap binds it
    read-write; everything else is read-only), and where commands start; default the
    current folder. memory_limit: bytes of address space the child may map (RLIMIT_AS;
    None for none). network: whether a bwrap sandbox keeps the network (rlimits always
    does). stall_s: how long the child may stay silent while it runs operations, take to
    finish a frame it began, or overrun an operation's time limit, before it is taken
    for hung and killed (its operations are lost). `.sandbox` says which sandbox the
    child runs in once started.
    """

    def __init__(
        self,
        *,
        sandbox: Sandbox = "auto",
        workdir: str | os.PathLike[str] | None = None,
        memory_limit: int | None = 8 << 30,
        network: bool = True,
        stall_s: float = 10.0,
    ) -> None:
        if sandbox not in ("auto", "bwrap", "rlimits"):
            raise UsageError(f"sandbox={sandbox!r} is not one of 'auto', 'bwrap', 'rlimits'")
        if not isinstance(stall_s, (int, float)) or not 0.5 <= stall_s <= 3600:
            raise UsageError(f"stall_s={stall_s!r} must be a number of seconds from 0.5 to 3600")
        bwrap = shutil.which("bwrap") if sys.platform.startswith("linux") else None
        if sandbox == "bwrap" and bwrap is None:
            raise UsageError(
                "sandbox='bwrap' but bubblewrap is not installed (apt-get install bubblewrap); "
                "use sandbox='rlimits' or 'auto'"
            )
        self.sandbox: Literal["bwrap", "rlimits"] = (
            "bwrap" if bwrap is not None and sandbox != "rlimits" else "rlimits"
        )
        self._bwrap = bwrap
        self.workdir = Path(workdir or os.getcwd()).resolve()
        self.memory_limit = memory_limit
        self.network = network
        self.stall_s = float(stall_s)
        self._lock = threading.Lock()
        self._current: _Child | None = None  # the live child, if one runs
        self._closed = False

    # -- the child -----------------------------------------------------------------------
    def _argv(self, fd: int) -> list[str]:
        alive_s = repr(self.stall_s / 4)
        python = [sys.executable, "-m", "openprogram.operations._child", str(fd), alive_s]
        if self.sandbox == "rlimits":
            return python
        assert self._bwrap is not None
        argv = [self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        argv += ["--tmpfs", "/tmp"]
        for path in paths_under_tmp():  # the interpreter and the code it runs, read-only again
            argv += ["--ro-bind", path, path]
        argv += ["--bind", str(self.workdir), str(self.workdir), "--chdir", str(self.workdir)]
        argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--die-with-parent"]
        argv += ["--new-session"]
        if not self.network:
            argv.append("--unshare-net")
        return argv + python

    def _limits(self) -> None:  # in the child, before exec
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if self.memory_limit is not None:
            resource.setrlimit(resource.RLIMIT_AS, (self.memory_limit, self.memory_limit))

    def _start(self) -> _Child:
        """The live child, starting one (the caller holds _lock)."""
        current = self._current
        if current is not None and not current.dead and current.process.poll() is None:
            return current
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            child = subprocess.Popen(
                self._argv(theirs.fileno()),
                cwd=self.workdir,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(_python_path())},
                stdin=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(theirs.fileno(),),
                preexec_fn=self._limits,  # setrlimit only, nothing a thread could hold
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        stderr = _Tail(child)
        frames = Frames()
        try:
            self._hello(ours, child, frames, stderr)
        except BaseException:
            ours.close()
            kill_tree(child.pid)
            child.wait()
            raise
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self._current = started = _Child(ours, child)
        threading.Thread(
            target=self._read,
            args=(started, frames, stderr),
            daemon=True,
            name="openprogram-ops-read",
        ).start()
        return started

    def _hello(
        self, sock: socket.socket, child: subprocess.Popen[bytes], frames: Frames, stderr: _Tail
    ) -> None:
        """Wait for the child's first frame; raise UsageError with its cause if it ends
        (or says something else, or nothing) first."""
        deadline = time.monotonic() + _START_TIMEOUT_S
        what = f"the operations sandbox ({self.sandbox})"
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise UsageError(
                    f"{what} did not start within {_START_TIMEOUT_S:g} s{stderr.said()}"
                )
            if not _readable(sock, min(remaining, 0.5)):
                if child.poll() is None:
                    continue
                data = b""
            else:
                data = sock.recv(1 << 16)
            if not data:  # it ended before it could say hello: say why
                with contextlib.suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=5)
                stderr.join()
                raise UsageError(
                    f"{what} could not start (exit status {child.returncode}){stderr.said()}"
                )
            try:
                messages = frames.feed(data)
            except FrameError as exc:
                raise UsageError(f"{what} started wrong: {exc}{stderr.said()}") from None
            if messages:
                if messages[0].get("report") != "hello":
                    raise UsageError(f"{what} started wrong: its first frame is {messages[0]!r}")
                return

    def _read(self, started: _Child, frames: Frames, stderr: _Tail) -> None:
        """Hand the child's reports on until it goes away; then its operations are lost.
        Never blocks for long: each turn also checks the child against its deadlines."""
        sock, child = started.sock, started.process
        heard = time.monotonic()
        partial_since: float | None = None
        why: str | None = None  # why the child is taken for dead
        while why is None:
            ready = _readable(sock, 0.2)
            now = time.monotonic()
            if ready:
                try:
                    data = sock.recv(1 << 20)
                except OSError:
                    data = b""
                if not data:
                    break
                heard = now
                try:
                    for message in frames.feed(data):
                        self._hand_on(started, message)
                except FrameError as exc:
                    why = f"it sent {exc}"
                    break
                partial_since = (partial_since or now) if frames.pending else None
            elif child.poll() is not None:
                break
            why = self._overdue(started, now, heard, partial_since)
        with self._lock:  # no operation is sent to it from now on
            started.dead = True
            if self._current is started:
                self._current = None
            lost, started.reports = started.reports, {}
            started.deadlines = {}
        if why is not None:
            log.warning("openprogram: the operations sandbox is killed: %s", why)
            kill_tree(child.pid)
        sock.close()
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:  # the socket broke, but it lives on
            kill_tree(child.pid)
            child.wait()
        stderr.join()
        cause = f"the sandbox process ended (exit status {child.returncode})"
        if why is not None:
            cause = f"the sandbox process was killed: {why}"
        for id, report in lost.items():
            try:
                report(id, "lost", cause + stderr.said())
            except Exception:
                log.exception("openprogram: operation %s could not be recorded", id)

    def _hand_on(self, started: _Child, message: dict[str, Any]) -> None:
        """One frame of the child's: a report is passed on; any other frame than the
        child sends is a FrameError (a broken or hostile child)."""
        what = message.get("report")
        if what in ("hello", "alive", "pong"):
            return
        id = message.get("id")
        if what not in _REPORTS or not isinstance(id, str):
            raise FrameError(f"a frame that is no report: {str(message)[:200]}")
        with self._lock:
            report = started.reports.get(id)
            if report is not None and what != "heartbeat":
                del started.reports[id]
                started.deadlines.pop(id, None)
        if report is not None:
            try:
                report(id, what, message.get("value"))
            except Exception:  # its record failed (the store): the others go on
                log.exception("openprogram: operation %s could not be recorded", id)

    def _overdue(
        self, started: _Child, now: float, heard: float, partial_since: float | None
    ) -> str | None:
        """Why the child is taken for hung now, or None."""
        stall = self.stall_s
        if partial_since is not None and now - partial_since > stall:
            return f"it began a frame and did not finish it within {stall:g} s"
        with self._lock:
            busy = bool(started.reports)
            since = max(heard, started.busy_since)
            late = next((id for id, at in started.deadlines.items() if now > at), None)
        if busy and now - since > stall:
            return f"it said nothing for {stall:g} s while it ran operations"
        if late is not None:
            return f"operation {late} ran past its time limit by more than {stall:g} s"
        return None

    # -- OperationManager ----------------------------------------------------------------
    def submit(self, operation: Operation, kind: OperationKind, report: Report) -> None:
        if self._closed:
            report(operation.id, "failed", "the operation manager was closed")
            return
        try:
            with self._lock:
                self._start()
        except (OSError, UsageError) as exc:  # never started: failed, not lost
            report(operation.id, "failed", f"the operations sandbox could not start: {exc}")
            return
        if not report(operation.id, "running", None):
            return
        message: dict[str, Any] = {
            "do": "run",
            "id": operation.id,
            "kind": kind.kind,
            "version": kind.version,
            "module": kind.module,
            "args": operation.args,
        }
        if kind.module == "__main__":  # a script's own kind: the child runs the script as
            main = sys.modules["__main__"]  # multiprocessing's spawn does, not as __main__
            message["path"] = getattr(main, "__file__", None)
        limit = None
        if kind.time_limit is not None:
            try:
                limit = kind.time_limit(operation.args)
            except Exception:  # arguments its executor will refuse as well
                log.warning("openprogram: the time limit of %s is unknown", operation.id)
        data = encode(message)
        child: _Child | None = None
        try:
            with self._lock:  # the child started above may have died since: then a new one
                child = self._start()
                if not child.reports:
                    child.busy_since = time.monotonic()
                child.reports[operation.id] = report
                if limit is not None:
                    child.deadlines[operation.id] = time.monotonic() + limit + self.stall_s
            with child.send_lock:  # a child that stops reading is killed by _read: unblocked
                child.sock.sendall(data)
        except (OSError, UsageError) as exc:
            if child is None:  # it never reached a child
                report(operation.id, "failed", f"the operations sandbox could not start: {exc}")
                return
            with self._lock:  # unless _read took it already (it killed the child)
                ours = child.reports.pop(operation.id, None) is not None
                child.deadlines.pop(operation.id, None)
            if ours:
                report(operation.id, "lost", f"could not reach the sandbox process: {exc}")

    def cancel(self, id: str) -> bool:
        with self._lock:
            child = self._current
        if child is None or id not in child.reports:
            return False
        try:
            with child.send_lock:
                write_frame(child.sock, {"do": "cancel", "id": id})
        except OSError:
            return False
        return True

    @property
    def pid(self) -> int | None:
        """The sandbox process's pid while one runs."""
        child = self._current
        return None if child is None or child.process.poll() is not None else child.process.pid

    def close(self) -> None:
        """Stop the child and all it started (its running operations are reported lost)."""
        with self._lock:
            self._closed = True
            current = self._current
        if current is not None:
            with contextlib.suppress(OSError):  # closed by the child already
                current.sock.shutdown(socket.SHUT_RDWR)
            try:
                current.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                kill_tree(current.process.pid)
                current.process.wait()

    def __repr__(self) -> str:
        return f"ProcessOperations(sandbox={self.sandbox!r}, pid={self.pid})"


class _Child:
    """One sandbox process: its socket, and the operations sent to it (under the
    manager's lock), which are lost with it, and only with it."""

    def __init__(self, sock: socket.socket, process: subprocess.Popen[bytes]) -> None:
        self.sock = sock
        self.process = process
        self.send_lock = threading.Lock()
        self.reports: dict[str, Report] = {}
        self.deadlines: dict[str, float] = {}  # of those with a time limit: monotonic
        self.busy_since = 0.0  # when it last went from idle to busy
        self.dead = False  # its reader gave up on it


class _Tail:
    """The last few KiB a child wrote to stderr (read on a thread until it closes)."""

    def __init__(self, child: subprocess.Popen[bytes]) -> None:
        self._kept = bytearray()
        self._thread = threading.Thread(
            target=self._drain, args=(child,), daemon=True, name="openprogram-ops-stderr"
        )
        self._thread.start()

    def _drain(self, child: subprocess.Popen[bytes]) -> None:
        assert child.stderr is not None
        with child.stderr:
            while chunk := child.stderr.read1(65536):  # type: ignore[attr-defined]
                self._kept += chunk
                del self._kept[:-_STDERR_KEPT]

    def join(self) -> None:
        self._thread.join(timeout=2)  # a process the child started may hold it open

    def said(self) -> str:
        """': <its stderr>' (its last lines), or '' when it said nothing."""
        text = bytes(self._kept).decode("utf-8", "replace").strip()
        return f": {text}" if text else ""


def _readable(sock: socket.socket | int, timeout: float) -> bool:
    """Whether `sock` has something to read (or is closed) within `timeout` seconds."""
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    return bool(poller.poll(timeout * 1000))


def _python_path() -> list[str]:
    """The child's PYTHONPATH: where this openprogram was imported from (an editable
    install's finder need not put it on sys.path), then this process's sys.path."""
    here = str(Path(__file__).resolve().parents[2])  # the folder holding openprogram/
    places = [here] + [place or os.getcwd() for place in sys.path]
    return list(dict.fromkeys(places))


def paths_under_tmp() -> list[str]:
    """What the sandbox's Python needs that lies under /tmp (which it gets empty): the
    interpreter's prefixes, the folders on its PYTHONPATH and the folders every module
    imported here was loaded from (a checkout or venv made there)."""
    places = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.executable, *_python_path()]
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if isinstance(file, str):  # its folder; a file right in /tmp by itself
            places.append(
                file if os.path.dirname(os.path.abspath(file)) == "/tmp" else os.path.dirname(file)
            )
    found: set[str] = set()
    for place in places:
        for path in {os.path.abspath(place), os.path.realpath(place)}:
            if path.startswith("/tmp/") and os.path.exists(path):
                found.add(path)
    # a folder inside another bound one needs no bind of its own
    return sorted(p for p in found if not any(p.startswith(q + os.sep) for q in found))
