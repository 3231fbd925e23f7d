"""Where batch episodes run: a local process pool, or Ray tasks on a cluster.

Owns starting one attempt of an episode and learning when it ended and whether its
worker died. Both engines run episode.run_episode in the worker; the results travel
through the shared store, not through the engine. Choosing what to run is run.py's.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing.connection
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol
from urllib.parse import urlsplit

from gui_harness.batch.episode import run_episode
from gui_harness.batch.tasks import BatchTask
from openprogram.errors import ConfigError
from openprogram.operations.ray import init_ray

__all__ = ["Engine", "EngineName", "LocalEngine", "RayEngine", "make_engine"]

EngineName = Literal["local", "ray"]

_RAY_INSTALL = 'pip install "openprogram[ray]"'
_EPISODE_MEMORY = 1 << 30  # bytes a Ray episode asks for: Xvfb, Chromium and the agent


class Engine(Protocol):
    """Starts attempts and reports the ones that ended (with a crash message or None)."""

    def open(self) -> None:
        """Start or join what the attempts run on, before the first start (not called when
        a rerun finds nothing left to run); raises ConfigError when that cannot be done."""

    def start(
        self, task: BatchTask, session: str, model: str, provider: dict[str, str] | None = None
    ) -> Hashable: ...

    def wait(self, running: Sequence[Hashable]) -> list[tuple[Hashable, str | None]]: ...

    def close(self) -> None: ...


@dataclass(eq=False)
class _Worker:
    process: subprocess.Popen[bytes]
    pidfd: int


class LocalEngine:
    """One fresh interpreter per attempt (no state leaks between episodes), each in its
    own process group: when it ends, whatever it left running (Xvfb, Chromium after a
    crash) is stopped with it."""

    def __init__(self, store: str) -> None:
        self.store = store
        self._running: set[_Worker] = set()

    def open(self) -> None:
        pass  # each attempt starts its own process

    def start(
        self, task: BatchTask, session: str, model: str, provider: dict[str, str] | None = None
    ) -> Hashable:
        spec = {"task": task.model_dump(exclude_none=True), "store": self.store,
                "session": session, "model": model, "provider": provider or {}}  # fmt: skip
        # the spec goes in on stdin: a store URL's password must not show in `ps`
        process = subprocess.Popen(
            [sys.executable, "-m", "gui_harness.batch._worker"],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
        assert process.stdin is not None
        with contextlib.suppress(BrokenPipeError), process.stdin:  # a dead worker: wait() says
            process.stdin.write(json.dumps(spec).encode("utf-8"))
        worker = _Worker(process, os.pidfd_open(process.pid))
        self._running.add(worker)
        return worker

    def wait(self, running: Sequence[Hashable]) -> list[tuple[Hashable, str | None]]:
        workers: dict[int, _Worker] = {}
        for worker in running:
            assert isinstance(worker, _Worker)
            workers[worker.pidfd] = worker
        ended: list[tuple[Hashable, str | None]] = []
        for pidfd in multiprocessing.connection.wait(list(workers)):
            worker = workers[pidfd]  # type: ignore[index]
            # before reaping, while its pid (and so its group id) is still reserved
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(worker.process.pid, signal.SIGKILL)
            code = worker.process.wait()
            os.close(worker.pidfd)
            self._running.discard(worker)
            crash = None
            if code != 0:
                killed = f" (killed by {signal.Signals(-code).name})" if code < 0 else ""
                crash = f"the worker process exited with code {code}{killed}"
            ended.append((worker, crash))
        return ended

    def close(self) -> None:
        """Stop every worker still running (the batch was interrupted) with its group."""
        for worker in list(self._running):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(worker.process.pid, signal.SIGKILL)
            worker.process.wait()
            os.close(worker.pidfd)
        self._running.clear()


def _ray() -> Any:
    # nothing of Ray's may reach the network unasked: no usage statistics
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f"the Ray engine needs the ray extra: {_RAY_INSTALL} ({exc})") from exc
    return ray


def _ray_episode(
    task: dict[str, Any], store: str, session: str, model: str, provider: dict[str, str]
) -> None:
    run_episode(
        BatchTask.model_validate(task), store=store, session=session, model=model,
        provider=provider,
    )  # fmt: skip


def check_address(address: str, timeout: float = 5.0) -> None:
    """Raise ConfigError unless something listens at a Ray address "host:port" or
    "ray://host:port" ("auto" and "local" are left to Ray)."""
    if address in ("auto", "local"):
        return
    parts = urlsplit(address if "://" in address else f"ray://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host = port = None
    if not host or not port:
        raise ConfigError(
            f"Ray address {address!r} is not host:port; pass e.g. --address 10.0.0.5:6379 "
            "(the head node's GCS port) or ray://10.0.0.5:10001 (Ray Client)"
        )
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:
        raise ConfigError(
            f"no Ray cluster answers at {address!r} ({exc}); start one with `ray start "
            "--head` on the head node, or check the address and the firewall"
        ) from None


class RayEngine:
    """Each attempt is a Ray task asking for one CPU and 1 GiB of memory.

    address None starts a private local Ray (`num_cpus` CPUs, no dashboard) when the
    first attempt is to run (open) and stops it on close; otherwise joins that cluster
    then, whose workers need this package, Xvfb and Chromium (docs/scale.md). Ray's own
    retries are off: the batch retries.
    """

    def __init__(
        self,
        store: str,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        runtime_env: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        ray = _ray()
        if address is not None:
            check_address(address)
        self._ray = ray
        self._address = address
        self._options: dict[str, Any] = {"runtime_env": runtime_env, "log_to_driver": False}
        if address is None:
            self._options.update(num_cpus=num_cpus, include_dashboard=False)
        self._owned = False
        self._remote: Any = None

    def open(self) -> None:
        """Start the private Ray, or join the cluster: only once there is an attempt to
        run (a rerun that skips every episode starts none, seconds of CPU saved)."""
        if self._remote is not None:
            return
        ray = self._ray
        self._owned = not ray.is_initialized()
        if self._owned:
            try:
                # "local": a private Ray; None would join any Ray running on the machine
                # (Ray looks for one among the processes) and refuse num_cpus there
                init_ray(ray, address=self._address or "local", **self._options)
            except (ConnectionError, RuntimeError) as exc:
                raise ConfigError(f"cannot start or join Ray at {self._address!r}: {exc}") from exc
        self._remote = ray.remote(num_cpus=1, memory=_EPISODE_MEMORY, max_retries=0)(_ray_episode)

    def start(
        self, task: BatchTask, session: str, model: str, provider: dict[str, str] | None = None
    ) -> Hashable:
        self.open()
        ref: Hashable = self._remote.remote(
            task.model_dump(exclude_none=True), self.store, session, model, provider or {}
        )
        return ref

    def wait(self, running: Sequence[Hashable]) -> list[tuple[Hashable, str | None]]:
        ready, _ = self._ray.wait(list(running), num_returns=1)
        ended = []
        for ref in ready:
            try:
                self._ray.get(ref)
                crash = None
            except self._ray.exceptions.RayError as exc:
                crash = f"the Ray task failed: {type(exc).__name__}: {str(exc)[:500]}"
            ended.append((ref, crash))
        return ended

    def close(self) -> None:
        if self._owned and self._ray.is_initialized():
            self._ray.shutdown()


def make_engine(
    engine: str,
    *,
    store: str,
    address: str | None = None,
    workers: int = 1,
    runtime_env: dict[str, Any] | None = None,
) -> Engine:
    """The engine named `engine`; raises ConfigError for an unknown name or an
    unreachable Ray cluster (before any episode starts)."""
    chosen: LocalEngine | RayEngine
    if engine == "local":
        if address is not None:
            raise ConfigError(
                f"address={address!r} is for the Ray engine; pass engine='ray' to use it"
            )
        chosen = LocalEngine(store)
    elif engine == "ray":
        chosen = RayEngine(
            store, address, num_cpus=workers if address is None else None, runtime_env=runtime_env
        )
    else:
        raise ConfigError(f"engine={engine!r} is not one of 'local', 'ray'")
    return chosen
