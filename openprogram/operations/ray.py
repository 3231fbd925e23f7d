"""RayOperations: operations run as Ray tasks, on a cluster of many machines (extra `ray`).
Also what every Ray user of the project shares: init_ray, and shared_store (the store
every node of a cluster opens).

Each operation is one Ray task that imports the module registering its kind and runs its
executor; a thread per operation waits for its result. Heartbeats come back through a
Ray queue (an actor) that one thread relays (at most _BEAT_EVERY_S apart per operation),
and cancelling asks Ray to stop the task (ray.cancel, force=True). A task lost with its
node is reported `lost`.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import signal
import socket
import threading
import time
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit

from openprogram.echo import cut, echo, mask_url
from openprogram.errors import ConfigError, StoreError, UsageError
from openprogram.operations.manager import Report, run_executor
from openprogram.operations.operation import Operation, OperationContext, OperationKind, kind_of
from openprogram.store.open import open_store
from openprogram.store.sqlite import SQLiteStore

__all__ = ["RayOperations", "import_ray", "init_ray", "shared_store"]


def import_ray(who: str = "RayOperations") -> ModuleType:
    """The ray module, with Ray's usage statistics off (nothing reaches the network
    unasked); ImportError naming `who` and the extra to install when Ray is missing."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError as exc:
        raise ImportError(f'{who} needs Ray: pip install "openprogram[ray]" ({exc})') from exc
    return ray


def _ray() -> Any:
    return import_ray("RayOperations")


_BEAT_EVERY_S = 0.25
"""A Ray worker sends an operation's heartbeats at most this often (each is a call to
the queue actor); the ones between are dropped."""


def _execute(
    module: str, kind: str, version: int, id: str, args: dict[str, Any], beats: Any = None
) -> Any:
    """In a Ray worker: run the operation, its heartbeats put on `beats` (a Ray queue);
    (report, value)."""
    importlib.import_module(module)
    last = [0.0]

    def heartbeat(detail: str | None) -> None:
        now = time.monotonic()
        if beats is not None and now - last[0] >= _BEAT_EVERY_S:
            last[0] = now
            with contextlib.suppress(Exception):  # a beat lost is no failure of the work
                beats.put_nowait((id, detail))

    context = OperationContext(id, heartbeat)
    return run_executor({"args": args}, kind_of(kind, version, operation=id), context)


class RayOperations:
    """Runs operations as Ray tasks. address: the cluster's (None: the one ray.init()
    finds or starts); other keyword arguments go to ray.init() when Ray is not yet
    initialised (num_cpus=1 for a small local cluster). cpus_per_operation: CPUs each
    operation's task asks Ray for."""

    def __init__(
        self, address: str | None = None, *, cpus_per_operation: float = 1, **init: Any
    ) -> None:
        self._address = address
        self._init = init
        self._num_cpus = cpus_per_operation
        self._lock = threading.Lock()
        self._refs: dict[str, Any] = {}
        self._reports: dict[str, Report] = {}
        self._remote: Any = None
        self._beats: Any = None
        self._relaying: threading.Thread | None = None
        self._closed = threading.Event()

    def _task(self) -> Any:
        with self._lock:
            if self._remote is None:
                ray = _ray()
                if not ray.is_initialized():
                    init_ray(ray, address=self._address, **self._init)
                from ray.util.queue import Queue

                self._beats = Queue(actor_options={"num_cpus": 0})
                self._remote = ray.remote(num_cpus=self._num_cpus, max_retries=0)(_execute)
                self._relaying = threading.Thread(
                    target=self._relay, daemon=True, name="openprogram-ray"
                )
                self._relaying.start()
            return self._remote

    def submit(self, operation: Operation, kind: OperationKind, report: Report) -> None:
        task = self._task()
        if not report(operation.id, "running", None):
            return
        args = (kind.module, kind.kind, kind.version, operation.id, operation.args, self._beats)
        ref = task.remote(*args)
        with self._lock:
            self._refs[operation.id] = ref
            self._reports[operation.id] = report
        threading.Thread(target=self._await, args=(operation.id, ref, report), daemon=True).start()

    def _relay(self) -> None:
        """Report the heartbeats the workers put on the queue, until closed."""
        from ray.util.queue import Empty

        beats = self._beats
        while not self._closed.is_set():
            try:
                id, detail = beats.get(timeout=0.2)
            except Empty:
                continue
            except BaseException:  # the queue's actor is gone (Ray shut down: SystemExit)
                return
            with self._lock:
                report = self._reports.get(id)
            if report is not None:
                with contextlib.suppress(Exception):  # its record failed: the tracker logs
                    report(id, "heartbeat", detail)

    def _await(self, id: str, ref: Any, report: Report) -> None:
        ray = _ray()
        try:
            what, value = ray.get(ref)
        except ray.exceptions.TaskCancelledError:
            what, value = "cancelled", None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
            what, value = "lost", f"the Ray worker died: {exc}"
        except Exception as exc:
            what, value = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._refs.pop(id, None)
                self._reports.pop(id, None)
        report(id, what, value)

    def cancel(self, id: str) -> bool:
        with self._lock:
            ref = self._refs.get(id)
        if ref is None:
            return False
        _ray().cancel(ref, force=True)
        return True

    def close(self) -> None:
        """Cancel what runs; stop relaying heartbeats (before ray.shutdown, which would
        end the relay's wait with SystemExit) and end the queue's actor."""
        self._closed.set()
        with self._lock:
            refs = list(self._refs.values())
            relaying, beats = self._relaying, self._beats
        for ref in refs:
            _ray().cancel(ref, force=True)
        if relaying is not None:
            relaying.join(5)
            with contextlib.suppress(Exception):
                beats.shutdown()

    def __repr__(self) -> str:
        return f"RayOperations(address={self._address!r})"


def init_ray(ray: ModuleType, **options: Any) -> None:
    """ray.init(**options), then this process's SIGTERM handler as it was: Ray installs
    its own in the driver (sys.exit) and leaves it after shutdown, which would take the
    place of the graceful drain (and of whatever the program set), also in its fork
    children. Every ray.init of the project goes through here."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGTERM) if main else None
    ray.init(**options)
    if main and before is not None:
        signal.signal(signal.SIGTERM, before)


def _local(address: str | None) -> bool:
    """Whether the cluster at `address` is this machine's: a local one, or one whose head
    listens on one of this machine's addresses (one a socket here can bind)."""
    if address in (None, "local", "auto"):
        return True
    host = urlsplit(address if "://" in address else f"ray://{address}").hostname or ""
    if host in ("localhost", "::1") or host.startswith("127."):
        return True
    try:
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as probe:
            probe.bind((host, 0))
    except OSError:
        return False
    return True


def shared_store(store: object, address: str | None, *, who: str) -> str:
    """The store URL every Ray worker of the cluster at `address` opens: a PostgreSQL
    URL, or an SQLite file (its absolute path) when the workers share this machine.
    Checks that it opens, creating the file. `who` names the caller in errors. Raises
    UsageError for no store, ConfigError for one the workers cannot reach or open."""
    if isinstance(store, SQLiteStore) and not store.memory:
        spec: Any = store.url
    elif isinstance(store, (str, os.PathLike)) and str(store) not in ("", "memory"):
        spec = os.fspath(store)
    else:
        raise UsageError(
            f"{who} records every run in a store its workers open: pass store= a file "
            f"path, 'sqlite:////absolute/file.db' or 'postgresql://...', not {echo(store, 60)}"
        )
    if "://" not in spec:
        spec = os.path.abspath(os.path.expanduser(spec))  # a worker's folder may differ
    if not spec.startswith(("postgresql://", "postgres://")) and not _local(address):
        raise ConfigError(
            f"store={echo(mask_url(spec))}: workers on other machines cannot share an SQLite "
            "file; pass store='postgresql://user@host/db' that every node can reach"
        )
    opened = None
    try:
        opened, _ = open_store(spec)
        assert opened is not None
        opened.list_sessions()
    except StoreError as exc:
        raise ConfigError(
            f"cannot use the store {echo(mask_url(spec))} ({cut(mask_url(str(exc)))}); no run "
            "was started"
        ) from exc
    finally:
        if opened is not None:
            opened.close()
    return str(spec)
