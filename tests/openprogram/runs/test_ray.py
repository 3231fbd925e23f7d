"""RayWorkers: run-queue workers as Ray actors on the nodes of a real Ray cluster (a head
and a worker node on this machine, each node its own raylet and processes). A node lost
in the middle of a run (its processes killed with it) costs nothing completed: a replica
on the other node takes the run over from its record."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram.errors import ConfigError, UsageError
from openprogram.runs import RayWorkers, submit
from tests.openprogram.runs import jobs
from tests.openprogram.runs.workers import pids, ran
from tests.support.children import ROOT
from tests.support.ray_bystander import patient_get_node, start_cluster

ray = pytest.importorskip("ray", reason='needs pip install "openprogram[ray]"')
from ray.cluster_utils import Cluster  # noqa: E402 - only with Ray installed

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def _cluster() -> Iterator[Cluster]:
    """A head node of one CPU and a worker node of one CPU, started once for the module
    (each start is a GCS, raylets and their Python helpers: the module's costliest part).

    A node's start-up gives its raylet 30 s to register (hard-coded in ray._private.node);
    on a machine loaded far beyond its 2 cores a raylet takes longer, and the cluster is
    the test's stage, not its subject: the registration is waited for patiently."""
    services = ray._private.services
    sigterm = signal.getsignal(signal.SIGTERM)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(services, "get_node", patient_get_node(services))
        # (start_cluster waits up to 300 s for the nodes, and starts them again when a
        # raylet died starting; wait_for_nodes' default, 30 s, is short at load 20)
        cluster = start_cluster({"num_cpus": 1, "include_dashboard": False}, {"num_cpus": 1})
        try:
            signal.signal(signal.SIGTERM, sigterm)  # Ray's node sets its own, and leaves it
            yield cluster
        finally:
            if ray.is_initialized():
                ray.shutdown()
            cluster.shutdown()
            signal.signal(signal.SIGTERM, sigterm)


@pytest.fixture
def cluster(_cluster: Cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    """The module's cluster, left as found: this process's Ray connection ended, Ray's
    SIGTERM handler (a node added by the test sets one) taken back, added nodes removed."""
    services = ray._private.services
    monkeypatch.setattr(services, "get_node", patient_get_node(services))
    sigterm = signal.getsignal(signal.SIGTERM)
    nodes = list(_cluster.worker_nodes)
    try:
        yield _cluster
    finally:
        if ray.is_initialized():
            ray.shutdown()
        for node in list(_cluster.worker_nodes):
            if node not in nodes:
                _cluster.remove_node(node, allow_graceful=False)
        signal.signal(signal.SIGTERM, sigterm)


def test_a_lost_nodes_run_is_taken_over_by_a_replica_on_another_node(
    cluster: Cluster, tmp_path: Path
) -> None:
    fifos, log = tmp_path / "fifos", tmp_path / "ran.log"
    fifos.mkdir()
    log.touch()
    store = str(tmp_path / "runs.db")
    environment = {jobs.LOG: str(log), jobs.FIFOS: str(fifos), "PYTHONPATH": str(ROOT)}
    options = {"address": cluster.address, "runtime_env": {"env_vars": environment}}
    cluster.add_node(num_cpus=1, resources={"doomed": 1}, wait=False)  # removed below
    cluster.wait_for_nodes(timeout=300)
    doomed = RayWorkers(store, resources={"doomed": 1}, max_restarts=0, **options)
    other = RayWorkers(store, **options)  # another node's CPU: the doomed node has none left
    run = submit("tests.openprogram.runs.jobs:job", "n", 6, id="n", store=store)
    pause = fifos / "n-3"
    os.mkfifo(pause)  # (tests.openprogram.runs.workers.at_pause, with a start between)
    try:
        doomed.start()
        with open(pause, "w"):  # steps 0-2 are done and recorded, on the doomed node
            pause.unlink()
            (lost,) = doomed.where()
            node = next(n for n in cluster.worker_nodes if n.node_id == lost["node"])
            (survivor,) = other.start().where()
            assert survivor["node"] != lost["node"]
            # the node is lost: its replica's process dies with it (Ray's remove_node ends
            # the raylet, whose orphaned workers live on a while), then the node's own
            os.kill(lost["pid"], signal.SIGKILL)
            cluster.remove_node(node, allow_graceful=False)
        assert run.result(timeout=180) == sum(i * i for i in range(6))
    finally:
        other.stop()
        doomed.stop()
    assert ran(log) == [f"step n {i}" for i in range(6)]  # each once
    assert set(pids(log, "step n 2")) == {lost["pid"]}
    assert set(pids(log, "step n 3")) == {survivor["pid"]}
    info = run.info()
    assert (info.state, info.takeovers) == ("completed", 1)
    run.close()


def test_replicas_work_the_queue_until_idle_and_report_what_they_did(
    cluster: Cluster, tmp_path: Path
) -> None:
    log = tmp_path / "ran.log"
    log.touch()
    store = str(tmp_path / "runs.db")
    runs = [
        submit("tests.openprogram.runs.jobs:step", f"r{i}", i, id=f"r{i}", store=store)
        for i in range(4)
    ]
    workers = RayWorkers(
        store, replicas=2, address=cluster.address,
        runtime_env={"env_vars": {jobs.LOG: str(log), "PYTHONPATH": str(ROOT)}},
    )  # fmt: skip
    try:
        done = workers.start(until_idle=True).wait(timeout=180)
    finally:
        workers.stop()
    assert sum(replica["finished"] for replica in done) == 4
    assert sorted(ran(log)) == [f"step r{i} {i}" for i in range(4)]
    assert [r.result(timeout=10) for r in runs] == [i * i for i in range(4)]
    for r in runs:
        r.close()


def test_bad_arguments_are_refused_before_ray_starts(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="records every run in a store"):
        RayWorkers("memory")
    with pytest.raises(ConfigError, match="cannot share an SQLite file"):
        RayWorkers(tmp_path / "s.db", address="10.0.0.5:6379")
    with pytest.raises(UsageError, match="replicas=0"):
        RayWorkers(tmp_path / "s.db", replicas=0)
    with pytest.raises(UsageError, match="must be a list naming"):
        RayWorkers(tmp_path / "s.db", queues="default")
    assert not ray.is_initialized()


def test_the_worker_command_runs_the_queue_on_a_private_ray_until_idle(
    cluster: Cluster, tmp_path: Path
) -> None:
    # a private Ray even with another running here, the module's cluster (the old code
    # joined it, whose workers have another environment: the runs ran there, with no
    # log to write to)
    log = tmp_path / "ran.log"
    log.touch()
    store = str(tmp_path / "runs.db")
    runs = [
        submit("tests.openprogram.runs.jobs:step", f"c{i}", i, id=f"c{i}", store=store)
        for i in range(2)
    ]
    command = [sys.executable, "-m", "openprogram", "worker", store, "--ray", "local",
               "--replicas", "2", "--until-idle"]  # fmt: skip
    environment = {**os.environ, jobs.LOG: str(log), "RAY_USAGE_STATS_ENABLED": "0"}
    environment.pop("PYTHONPATH", None)  # the worker names run functions as from its folder
    done = subprocess.run(
        command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 Ray workers ready" in done.stderr and "Ray workers idle: 2 runs" in done.stderr
    assert sorted(ran(log)) == ["step c0 0", "step c1 1"]
    assert [r.result(timeout=10) for r in runs] == [0, 1]
    for r in runs:
        r.close()


def test_ray_options_without_ray_are_refused(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "openprogram", "worker", str(tmp_path / "s.db"), "--replicas", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    assert "--replicas, --num-cpus, --num-gpus and --resource go with --ray" in done.stderr
