"""ProcessOperations: operations run in a separate sandbox process, over a unix socket.

The parent (this module) records each operation `running` before it sends it, then
reads the child's reports on a thread of its own. The child (_child.py) runs under
bubblewrap (`bwrap`) when it is installed on Linux, else as a plain child process with
resource limits; docs/operations.md says what either does and does not protect. A child
that dies takes its running operations with it: they are reported `lost` (the tracker
applies each kind's effect rule) and the next operation starts a new child.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

from openprogram.errors import UsageError
from openprogram.operations._wire import read_frame, write_frame
from openprogram.operations.manager import Report
from openprogram.operations.operation import Operation, OperationKind

__all__ = ["ProcessOperations", "Sandbox"]

log = logging.getLogger("openprogram.operations")

Sandbox = Literal["auto", "bwrap", "rlimits"]
"""auto: bwrap when installed (Linux), else rlimits. bwrap: bubblewrap or an error.
rlimits: a plain child process with resource limits (no file system isolation)."""
_START_TIMEOUT_S = 30.0


class ProcessOperations:
    """Runs operations in one sandbox process reached over a unix socket.

    sandbox: see `Sandbox`. workdir: the one folder the sandbox may write (bwrap binds it
    read-write; everything else is read-only), and where commands start; default the
    current folder. memory_limit: bytes of address space the child may map (RLIMIT_AS;
    None for none). network: whether a bwrap sandbox keeps the network (rlimits always
    does). `.sandbox` says which sandbox the child runs in once started.
    """

    def __init__(
        self,
        *,
        sandbox: Sandbox = "auto",
        workdir: str | os.PathLike[str] | None = None,
        memory_limit: int | None = 8 << 30,
        network: bool = True,
    ) -> None:
        if sandbox not in ("auto", "bwrap", "rlimits"):
            raise UsageError(f"sandbox={sandbox!r} is not one of 'auto', 'bwrap', 'rlimits'")
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
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._child: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._folder: str | None = None
        self._reports: dict[str, Report] = {}  # operations sent to the current child
        self._closed = False

    # -- the child -----------------------------------------------------------------------
    def _argv(self, path: str) -> list[str]:
        python = [sys.executable, "-m", "openprogram.operations._child", path]
        if self.sandbox == "rlimits":
            return python
        assert self._bwrap is not None and self._folder is not None
        argv = [self._bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        argv += ["--tmpfs", "/tmp"]
        for path in _under_tmp():  # the interpreter and its packages, read-only again
            argv += ["--ro-bind", path, path]
        argv += ["--bind", self._folder, self._folder]
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

    def _start(self) -> socket.socket:
        """The connection to a live child, starting one (the caller holds _lock)."""
        if self._sock is not None and self._child is not None and self._child.poll() is None:
            return self._sock
        self._folder = tempfile.mkdtemp(prefix="openprogram-ops-")
        path = os.path.join(self._folder, "socket")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        server.listen(1)
        server.settimeout(_START_TIMEOUT_S)
        environment = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        self._child = subprocess.Popen(
            self._argv(path),
            cwd=self.workdir,
            env=environment,
            stdin=subprocess.DEVNULL,
            preexec_fn=self._limits,  # setrlimit only, nothing a thread could hold
            start_new_session=True,
        )
        try:
            sock, _ = server.accept()
        except OSError as exc:
            self._child.kill()
            raise UsageError(
                f"the operations sandbox ({self.sandbox}) did not start within "
                f"{_START_TIMEOUT_S:g} s: {exc}"
            ) from exc
        finally:
            server.close()
            os.unlink(path)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self._sock = sock
        threading.Thread(
            target=self._read, args=(sock, self._child), daemon=True, name="openprogram-ops-read"
        ).start()
        return sock

    def _read(self, sock: socket.socket, child: subprocess.Popen[bytes]) -> None:
        """Hand the child's reports on until it goes away; then its operations are lost."""
        while True:
            message = read_frame(sock)
            if message is None:
                break
            what = message.get("report")
            with self._lock:
                report = self._reports.get(message.get("id", ""))
                if report is not None and what in ("done", "failed", "cancelled"):
                    del self._reports[message["id"]]
            if report is not None and what in ("heartbeat", "done", "failed", "cancelled"):
                try:
                    report(message["id"], what, message.get("value"))
                except Exception:  # its record failed (the store): the others go on
                    log.exception("openprogram: operation %s could not be recorded", message["id"])
        with self._lock:
            if self._sock is sock:
                self._sock = None
            lost, self._reports = self._reports, {}
        sock.close()
        child.wait()
        for id, report in lost.items():
            try:
                report(id, "lost", f"the sandbox process ended (exit status {child.returncode})")
            except Exception:
                log.exception("openprogram: operation %s could not be recorded", id)

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
        try:
            with self._lock:
                sock = self._start()
                self._reports[operation.id] = report
            with self._send_lock:
                write_frame(sock, message)
        except OSError as exc:
            with self._lock:
                self._reports.pop(operation.id, None)
            report(operation.id, "lost", f"could not reach the sandbox process: {exc}")

    def cancel(self, id: str) -> bool:
        with self._lock:
            known = id in self._reports
            sock = self._sock
        if not known or sock is None:
            return False
        try:
            with self._send_lock:
                write_frame(sock, {"do": "cancel", "id": id})
        except OSError:
            return False
        return True

    @property
    def pid(self) -> int | None:
        """The sandbox process's pid while one runs."""
        child = self._child
        return None if child is None or child.poll() is not None else child.pid

    def close(self) -> None:
        """Stop the child (its running operations are reported lost)."""
        with self._lock:
            self._closed = True
            sock, child = self._sock, self._child
        if sock is not None:
            with contextlib.suppress(OSError):  # closed by the child already
                sock.shutdown(socket.SHUT_RDWR)
        if child is not None:
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    def __repr__(self) -> str:
        return f"ProcessOperations(sandbox={self.sandbox!r}, pid={self.pid})"


def _under_tmp() -> list[str]:
    """What the sandbox's Python needs that lies under /tmp (which it gets empty): the
    interpreter's prefixes and the folders on sys.path (a checkout or venv made there)."""
    found: set[str] = set()
    for place in [sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path]:
        if not place:
            continue
        real = os.path.realpath(place)
        if (real == "/tmp" or real.startswith("/tmp/")) and os.path.exists(real):
            found.add(real)
    # a folder inside another bound one needs no bind of its own
    return sorted(p for p in found if not any(p.startswith(q + os.sep) for q in found))
