"""The `bystander` fixture: another Ray on the machine, not joined by the code under test
(Ray, asked for no address, joins whatever Ray it finds among the machine's processes;
the private clusters ask for "local"). Used by the run-queue and batch Ray tests."""

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


@pytest.fixture
def bystander(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Another Ray on the machine (one node, not joined here)."""
    import ray._private.services
    from ray.cluster_utils import Cluster

    monkeypatch.setattr(ray._private.services, "get_node", patient_get_node(ray._private.services))
    sigterm = signal.getsignal(signal.SIGTERM)
    other = Cluster()
    try:
        other.add_node(num_cpus=1, include_dashboard=False, wait=False)
        other.wait_for_nodes(timeout=300)
        yield other
    finally:
        other.shutdown()
        signal.signal(signal.SIGTERM, sigterm)
