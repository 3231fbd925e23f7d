"""The `bystander` fixture: another Ray on the machine, not joined by the code under test
(Ray, asked for no address, joins whatever Ray it finds among the machine's processes;
the private clusters ask for "local"). Used by the run-queue and batch Ray tests; so is
start_cluster, which starts a test's cluster again when a raylet died starting."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest


def patient_get_node(services: Any) -> Any:
    """services.get_node, asking the GCS again for up to 300 s."""
    get_node = services.get_node

    def patient(*args: object, **kwargs: object) -> object:
        deadline = time.monotonic() + 300
        while True:
            try:
                return get_node(*args, **kwargs)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)  # asking the GCS again, not waiting for a guess

    return patient


def start_cluster(*nodes: dict[str, Any], attempts: int = 3) -> Any:
    """A ray.cluster_utils.Cluster of these nodes (add_node's arguments), each registered.

    A raylet gives its dashboard agent 15 s to write its port files (hard-coded in Ray
    2.60) and aborts when the agent, a Python process, takes longer to start, as it does
    on a machine loaded far beyond its cores: that node never registers, and waiting
    for it ran into the 300 s limit (the bystander's error in two whole-suite runs at
    load 15-20). A raylet that died is seen at once, and the cluster started again."""
    from ray.cluster_utils import Cluster

    for _ in range(attempts):
        cluster = Cluster()
        try:
            for node in nodes:
                cluster.add_node(wait=False, **node)
            if _registered(cluster, timeout=300):
                return cluster
        except BaseException:
            cluster.shutdown()
            raise
        cluster.shutdown()
    raise RuntimeError(f"a raylet died starting, in each of {attempts} attempts")


def _registered(cluster: Any, timeout: float) -> bool:
    """True once every node of `cluster` is registered; False as soon as one of their
    raylets has died (it will never register)."""
    nodes = cluster.list_all_nodes()
    deadline = time.monotonic() + timeout
    while len(cluster.global_state._live_node_ids()) != len(nodes):
        if any(kind == "raylet" for node in nodes for kind, _ in node.dead_processes()):
            return False
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(nodes)} Ray nodes did not all register in {timeout} s")
        time.sleep(0.2)  # asking the GCS again
    return True


@pytest.fixture
def bystander(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Another Ray on the machine (one node, not joined here)."""
    import ray._private.services

    monkeypatch.setattr(ray._private.services, "get_node", patient_get_node(ray._private.services))
    sigterm = signal.getsignal(signal.SIGTERM)
    try:
        other = start_cluster({"num_cpus": 1, "include_dashboard": False})
        try:
            yield other
        finally:
            other.shutdown()
    finally:
        signal.signal(signal.SIGTERM, sigterm)
