"""RayOperations on a private local Ray cluster (1 CPU): operations run as Ray tasks in
worker processes, their results and failures come back through the manager protocol."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from openprogram.operations import Operation
from openprogram.operations.operation import kind_of
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds
from tests.openprogram.operations.test_managers import Reports, _run

ray = pytest.importorskip("ray", reason='needs pip install "openprogram[ray]"')


def test_ray_operations_run_as_ray_tasks():
    from openprogram.operations import RayOperations

    before = signal.getsignal(signal.SIGTERM)
    manager = RayOperations(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        what, pid, _ = _run(manager, "test.pid")
        assert what == "done" and pid != os.getpid()
        # Ray's own SIGTERM handler (left after shutdown) never replaces the process's:
        # fork children inherited it and ignored a Pool's terminate()
        assert signal.getsignal(signal.SIGTERM) == before
        assert _run(manager, "test.fail", {"why": "ray"})[:2] == ("failed", "RuntimeError: ray")
        # a long operation's heartbeats come back from its worker; cancelling stops it
        reports = Reports()
        operation = Operation("test.block", {})
        manager.submit(operation, kind_of("test.block", 1), reports)
        deadline = time.monotonic() + 60  # a bound, not a measure: it fails, never hangs
        while "heartbeat" not in reports.of(operation.id):
            assert time.monotonic() < deadline, "no heartbeat came back from the Ray worker"
            threading.Event().wait(0.05)
        assert manager.cancel(operation.id)
        assert reports.wait(operation.id) == ("cancelled", None)
    finally:
        manager.close()
        ray.shutdown()
