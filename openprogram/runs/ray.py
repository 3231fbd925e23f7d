"""RayWorkers: run-queue workers as Ray actors, on the nodes of a Ray cluster (extra `ray`).

Ray is the compute engine here, not the queue: each replica is one Ray actor running a
Worker (runs/worker.py) on the store every node opens (a PostgreSQL URL; an SQLite file
only when the actors share this machine). Ray places each actor where the resources it
asks for are (CPUs, GPUs, custom resources: a queue of runs that need a GPU gets workers
that ask for one) and restarts an actor whose node died wherever there is room again.
Meanwhile the other replicas take the dead one's runs over, as any worker does: at once
on this machine (its process is gone), elsewhere once its lease's heartbeat expired.
Start at RayWorkers.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from typing import Any

from openprogram.errors import ConfigError, UsageError
from openprogram.operations.ray import import_ray, init_ray, shared_store
from openprogram.runs.worker import Worker

__all__ = ["RayWorkers"]


def _ray() -> Any:
    return import_ray("RayWorkers")


class _Replica:
    """In a Ray actor: one Worker. Threaded (max_concurrency=2): run() works while stop()
    and where() are answered beside it."""

    def __init__(
        self, store: str, queues: Sequence[str], concurrency: int, imports: Sequence[str],
        poll_s: float, watch_s: float,
    ) -> None:  # fmt: skip
        for module in imports:
            importlib.import_module(module)
        self.worker = Worker(
            store, queues=queues, concurrency=concurrency, poll_s=poll_s, watch_s=watch_s
        )

    def run(self, until_idle: bool) -> dict[str, int]:
        self.worker.run(until_idle=until_idle)
        return {
            "pid": os.getpid(),
            "started": self.worker.started,
            "finished": self.worker.finished,
        }

    def stop(self) -> None:
        self.worker.stop()

    def where(self) -> dict[str, Any]:
        ray = _ray()
        return {"node": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


class RayWorkers:
    """`replicas` run-queue workers as Ray actors, each taking runs of `queues` from
    `store`, `concurrency` at once.

    address: the Ray cluster to join (None: the one already initialised in this process,
    else a private local one, stopped by close()). num_cpus, num_gpus, resources: what
    each replica asks Ray for; Ray puts it on a node that has them. imports: modules each
    replica imports first (where the run functions register). max_restarts: how often Ray
    starts a replica again after its process or node died (-1: always); the run its
    replica had is taken over by another replica meanwhile. init: more ray.init()
    arguments when this starts Ray (runtime_env, num_cpus of a local cluster...).

        with RayWorkers("postgresql://…", replicas=8, num_gpus=1, queues=["gpu"]) as workers:
            workers.wait()  # or: workers.start(until_idle=True); workers.wait()
    """

    def __init__(
        self,
        store: object,
        *,
        replicas: int = 1,
        queues: Sequence[str] = ("default",),
        concurrency: int = 1,
        imports: Sequence[str] = (),
        num_cpus: float = 1,
        num_gpus: float = 0,
        resources: dict[str, float] | None = None,
        max_restarts: int = -1,
        address: str | None = None,
        poll_s: float = 0.2,
        watch_s: float = 0.5,
        **init: Any,
    ) -> None:
        if not isinstance(replicas, int) or replicas < 1:
            raise UsageError(f"replicas={replicas!r} must be a whole number >= 1")
        if not isinstance(concurrency, int) or concurrency < 1:
            raise UsageError(f"concurrency={concurrency!r} must be a whole number >= 1")
        if (
            isinstance(queues, str)
            or not queues
            or not all(isinstance(q, str) and q for q in queues)
        ):
            raise UsageError(f"queues={queues!r} must be a list naming at least one queue")
        self.store = shared_store(store, address, who="RayWorkers")
        self.replicas = replicas
        self.queues = tuple(queues)
        self.concurrency = concurrency
        self.imports = tuple(imports)
        self.address = address
        self._options: dict[str, Any] = {
            "num_cpus": num_cpus,
            "num_gpus": num_gpus,
            "resources": dict(resources or {}),
            "max_restarts": max_restarts,
            "max_task_retries": -1 if max_restarts != 0 else 0,  # run() again once restarted
            "max_concurrency": 2,
        }
        self._timing = (poll_s, watch_s)
        self._init = init
        self._owned = False
        self._actors: list[Any] = []
        self._runs: list[Any] = []
        self._lock = threading.Lock()

    def start(self, *, until_idle: bool = False) -> RayWorkers:
        """Start Ray if this process has none, then the replicas; each works until stop()
        or, with `until_idle`, until no run of its queues is queued, running or due."""
        ray = _ray()
        with self._lock:
            if self._actors:
                raise UsageError("these RayWorkers are started already: stop() them first")
            if not ray.is_initialized():
                # "local": a private Ray; None would join any Ray running on the machine
                # (Ray looks for one among the processes), whose workers have another
                # environment
                address = self.address or "local"
                options: dict[str, Any] = {"address": address, "log_to_driver": False}
                if self.address is None:
                    options["include_dashboard"] = False
                options.update(self._init)
                try:
                    init_ray(ray, **options)
                except (ConnectionError, RuntimeError) as exc:
                    raise ConfigError(
                        f"cannot start or join Ray at {self.address!r}: {exc}"
                    ) from exc
                self._owned = True
            replica = ray.remote(**self._options)(_Replica)
            poll_s, watch_s = self._timing
            self._actors = [
                replica.remote(
                    self.store, self.queues, self.concurrency, self.imports, poll_s, watch_s
                )
                for _ in range(self.replicas)
            ]
            self._runs = [actor.run.remote(until_idle) for actor in self._actors]
        return self

    def where(self, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Each replica's Ray node id and process id, in replica order."""
        ray = _ray()
        return list(ray.get([actor.where.remote() for actor in self._actors], timeout=timeout))

    def wait(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """Until every replica's work ended (started with until_idle, or stopped): what
        each did (its last process: pid, runs started, finished; a replica lost for good
        with its node: "lost", why). TimeoutError after `timeout` seconds."""
        ray = _ray()
        _, pending = ray.wait(self._runs, num_returns=len(self._runs), timeout=timeout)
        if pending:
            raise TimeoutError(f"{len(pending)} of {len(self._runs)} replicas still work")
        done: list[dict[str, Any]] = []
        for ref in self._runs:
            try:
                done.append(ray.get(ref))
            except ray.exceptions.RayError as exc:  # lost with its node, not restarted
                done.append({"pid": None, "started": 0, "finished": 0, "lost": str(exc)[:500]})
        return done

    def stop(self, timeout: float = 60.0) -> None:
        """Drain every replica (each running run stops at its next call boundary and goes
        back to its queue), wait up to `timeout` seconds for them, then end the actors
        and the Ray this started."""
        ray = _ray()
        with self._lock:
            actors, runs = self._actors, self._runs
            self._actors, self._runs = [], []
        try:
            if actors:
                for actor in actors:
                    try:
                        actor.stop.remote()
                    except ray.exceptions.RayError:
                        continue  # a replica that is gone drains nothing
                ray.wait(runs, num_returns=len(runs), timeout=timeout)
                for actor in actors:
                    ray.kill(actor, no_restart=True)
        finally:
            if self._owned and ray.is_initialized():
                ray.shutdown()
            self._owned = False

    def __enter__(self) -> RayWorkers:
        return self if self._actors else self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return (
            f"RayWorkers(replicas={self.replicas}, queues={list(self.queues)}, "
            f"concurrency={self.concurrency}, address={self.address!r})"
        )
