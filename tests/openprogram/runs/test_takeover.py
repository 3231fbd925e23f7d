"""Worker processes that die, stop and drain, on SQLite and PostgreSQL: another worker
resumes a dead worker's run from its record (nothing completed runs again, a `once` call
waits to be settled, an `idempotent` one re-runs with its key); a stopped worker whose
lease was taken over records nothing more; SIGTERM hands a run back at once.

Each test holds a run at a pause point (jobs.pause, a FIFO), acts on the worker there
(SIGKILL, SIGSTOP, SIGTERM) and lets it, or another worker, go on.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from openprogram import Session
from openprogram.runs import Run, RunQueue, submit
from tests.openprogram.runs import jobs
from tests.openprogram.runs.workers import WorkerProcess, at_pause, pids, ran

pytestmark = pytest.mark.slow


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    fifos = tmp_path / "fifos"
    fifos.mkdir()
    (tmp_path / "ran.log").touch()
    return {jobs.LOG: str(tmp_path / "ran.log"), jobs.FIFOS: str(fifos)}


def holder(run: Run) -> int:
    """The pid of the worker that claimed `run`."""
    worker = run.info().worker
    assert worker is not None
    return int(worker.split(":")[1])


def test_a_killed_workers_run_is_resumed_by_another_without_repeating_a_call(
    durable_store: str, env: dict[str, str]
) -> None:
    log, fifos = Path(env[jobs.LOG]), Path(env[jobs.FIFOS])
    workers = [WorkerProcess(durable_store, env=env) for _ in range(2)]
    try:
        run = submit("tests.openprogram.runs.jobs:job", "k", 6, id="k", store=durable_store)
        with at_pause(fifos, "k-3"):  # steps 0-2 are done and recorded
            first = next(w for w in workers if w.pid == holder(run))
            first.kill()
        assert run.result(timeout=120) == sum(i * i for i in range(6))
        other = next(w for w in workers if w is not first)
        assert ran(log) == [f"step k {i}" for i in range(6)]  # each once
        assert set(pids(log, "step k 2")) == {first.pid}
        assert set(pids(log, "step k 3")) == {other.pid}
        info = run.info()
        assert (info.attempts, info.takeovers) == (2, 1)
        session = Session.open(durable_store, "k")
        steps = [n for n in session.dag.nodes if n.name == "step"]
        assert [(n.input, n.status) for n in steps] == [
            ({"run": "k", "i": i}, "completed") for i in range(6)
        ]
        session.close()
        run.close()
    finally:
        for worker in workers:
            worker.kill()


def test_a_once_call_cut_by_a_kill_waits_to_be_settled_and_never_runs_twice(
    durable_store: str, env: dict[str, str]
) -> None:
    log, fifos = Path(env[jobs.LOG]), Path(env[jobs.FIFOS])
    first = WorkerProcess(durable_store, env=env)
    try:
        run = submit("tests.openprogram.runs.jobs:paying", "p", 2, id="p", store=durable_store)
        with at_pause(fifos, "charge-p"):  # inside the once body
            first.kill()
        second = WorkerProcess(durable_store, env=env)
        second.wait_for("run p waiting")  # EffectUnknown: a person must settle it
        assert run.status() == "waiting"
        assert "EffectUnknown" in (run.info().error or "")
        session = Session.open(durable_store, "p")
        [charge] = [n for n in session.dag.nodes if n.name == "charge"]
        assert charge.status == "unknown"
        session.settle(charge.id, "charged p (looked up)")
        session.close()
        assert run.requeue()
        receipt = run.result(timeout=120)
        assert receipt == "charged p (looked up) " + str(sum(i * i for i in range(4)))
        assert ran(log).count("charge p") == 1
        assert [e for e in ran(log) if e.startswith("step")] == [f"step p {i}" for i in range(4)]
        second.stop()
        run.close()
    finally:
        first.kill()


def test_an_idempotent_call_cut_by_a_kill_runs_again_with_its_key(
    durable_store: str, env: dict[str, str]
) -> None:
    log, fifos = Path(env[jobs.LOG]), Path(env[jobs.FIFOS])
    first = WorkerProcess(durable_store, env=env)
    try:
        run = submit("tests.openprogram.runs.jobs:sending", "i", id="i", store=durable_store)
        with at_pause(fifos, "send-i"):
            first.kill()
        second = WorkerProcess(durable_store, env=env)
        key = run.result(timeout=120)
        assert [e for e in ran(log) if e.startswith("send")] == [f"send i {key}"] * 2
        assert ran(log).count("step i 0") == 1
        second.stop()
        run.close()
    finally:
        first.kill()


def test_a_stopped_worker_whose_lease_was_taken_over_records_nothing_more(
    durable_store: str, env: dict[str, str]
) -> None:
    """SIGSTOP stands for a long pause on another machine: the test makes the stopped
    worker's lease look like such a machine's, silent for longer than its time-to-live
    (on this machine a stopped process is alive, and keeps its lease)."""
    fifos = Path(env[jobs.FIFOS])
    first = WorkerProcess(durable_store, env=env)
    second = None
    try:
        run = submit("tests.openprogram.runs.jobs:job", "s", 6, id="s", store=durable_store)
        with at_pause(fifos, "s-2"):
            first.signal(signal.SIGSTOP)
            _elsewhere_and_silent(durable_store, "s")
            second = WorkerProcess(durable_store, env=env)
            assert run.result(timeout=120) == sum(i * i for i in range(6))
            session = Session.open(durable_store, "s")
            before = session.store.rows("s")  # type: ignore[union-attr]
            session.close()
            first.signal(signal.SIGCONT)
        first.wait_for("writer lease was taken over")  # its records were refused
        session = Session.open(durable_store, "s")
        assert session.store.rows("s") == before  # type: ignore[union-attr]
        session.close()
        info = run.info()
        assert (info.state, info.result, info.takeovers) == ("completed", "55", 1)
        assert first.stop() == 0
        run.close()
    finally:
        first.signal(signal.SIGCONT)
        first.kill()
        if second is not None:
            second.kill()


def test_sigterm_drains_a_worker_and_hands_its_run_back_at_once(
    durable_store: str, env: dict[str, str]
) -> None:
    log, fifos = Path(env[jobs.LOG]), Path(env[jobs.FIFOS])
    first = WorkerProcess(durable_store, env=env)
    run = submit("tests.openprogram.runs.jobs:job", "d", 5, id="d", store=durable_store)
    with at_pause(fifos, "d-2"):
        first.signal(signal.SIGTERM)
        first.wait_for("draining")
    assert first.wait() == 0  # it stopped at step 2's boundary and ended
    assert "handed back" in first.said()
    info = run.info()
    assert (info.state, info.worker) == ("queued", None)
    second = WorkerProcess(durable_store, env=env)
    try:
        assert run.result(timeout=120) == sum(i * i for i in range(5))
        assert ran(log) == [f"step d {i}" for i in range(5)]
        assert run.info().takeovers == 0  # handed back, not taken over
    finally:
        second.stop()
        run.close()


def _elsewhere_and_silent(store: str, session: str) -> None:
    """Make `session`'s lease read as held by a process on another machine whose last
    heartbeat is an hour old."""
    with RunQueue(store) as queue:
        p = queue.dialect.p
        with queue._lock:
            connection = queue._connect()
            connection.execute(
                "UPDATE openprogram_leases SET process = 'another-machine|1|1', "
                "heartbeat_at = heartbeat_at - 3600 WHERE session = (SELECT key FROM "
                f"openprogram_sessions WHERE id = {p})",
                (session,),
            )


def test_a_worker_killed_holding_a_batch_of_runs_loses_nothing_and_repeats_nothing(
    durable_store: str, env: dict[str, str]
) -> None:
    """One claim takes as many runs as the worker has free slots, with their sessions'
    writer leases, in one statement; the worker dies holding the batch mid-way."""
    log, fifos = Path(env[jobs.LOG]), Path(env[jobs.FIFOS])
    runs = [
        submit("tests.openprogram.runs.jobs:job", id, 4, id=id, store=durable_store)
        for id in ("a", "b", "c")
    ]
    for label in ("a-2", "b-2"):  # both wait there before step 2 (0 and 1 recorded)
        os.mkfifo(fifos / label)
    first = WorkerProcess(durable_store, "--concurrency", "2", env=env)
    second = None
    try:
        with open(fifos / "a-2", "w"), open(fifos / "b-2", "w"):
            (fifos / "a-2").unlink()
            (fifos / "b-2").unlink()
            a, b, c = (run.info() for run in runs)
            assert a.worker == b.worker  # claimed together, by one slot's claim
            assert (a.state, b.state, c.state) == ("running", "running", "queued")
            first.kill()
        second = WorkerProcess(durable_store, "--concurrency", "2", env=env)
        for run in runs:
            assert run.result(timeout=120) == sum(i * i for i in range(4))
        for id in ("a", "b", "c"):
            assert [e for e in ran(log) if e.startswith(f"step {id} ")] == [
                f"step {id} {i}" for i in range(4)
            ]  # each step once
        for id in ("a", "b"):
            assert set(pids(log, f"step {id} 1")) == {first.pid}
            assert set(pids(log, f"step {id} 2")) == {second.pid}
        assert [(r.info().attempts, r.info().takeovers) for r in runs] == [(2, 1), (2, 1), (1, 0)]
        for id in ("a", "b"):
            session = Session.open(durable_store, id)
            steps = [n for n in session.dag.nodes if n.name == "step"]
            assert [(n.input["i"], n.status) for n in steps] == [(i, "completed") for i in range(4)]
            session.close()
        second.stop()
    finally:
        first.kill()
        if second is not None:
            second.kill()
        for run in runs:
            run.close()
