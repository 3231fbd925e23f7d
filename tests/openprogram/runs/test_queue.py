"""The run queue in one process: submit, the same id, priorities, delays, queue limits,
results, failures, cancelling, waiting runs — on SQLite and PostgreSQL.

A Worker runs here with `until_idle` (its slots are threads); the tests with worker
processes killed and stopped are test_takeover.py.
"""

from __future__ import annotations

import random
import re
import string
import threading
from pathlib import Path

import pytest

from openprogram import Session
from openprogram.errors import RunFailed, StoreError, UsageError
from openprogram.runs import Run, RunQueue, Worker, limit, submit
from openprogram.runs.worker import resolve
from openprogram.store.format import MAX_ID_BYTES
from tests.openprogram.runs import jobs

JOB = "tests.openprogram.runs.jobs:job"


@pytest.fixture(autouse=True)
def _log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "ran.log"
    monkeypatch.setenv(jobs.LOG, str(path))
    path.touch()
    return path


def ran(log: Path) -> list[str]:
    return [line.rsplit(" ", 1)[0] for line in log.read_text().splitlines()]


def work(store: str, **options: object) -> Worker:
    worker = Worker(store, poll_s=0.01, **options)  # type: ignore[arg-type]
    worker.run(until_idle=True)
    return worker


def test_a_submitted_run_is_a_queued_session_that_a_worker_runs(
    durable_store: str, _log: Path
) -> None:
    run = submit(JOB, "r1", 3, id="r1", store=durable_store)
    assert run.status() == "queued"
    opened = Session.open(durable_store, "r1")
    assert opened.info.extra == {"run": JOB} and len(opened.dag) == 0
    opened.close()
    work(durable_store)
    assert run.status() == "completed"
    assert run.result(timeout=0) == 0 + 1 + 4
    assert ran(_log) == ["step r1 0", "step r1 1", "step r1 2"]
    recorded = Session.open(durable_store, "r1")
    assert [n.name for n in recorded.dag.nodes] == ["job", "step", "step", "step"]
    assert recorded.dag.nodes[0].status == "completed"
    recorded.close()
    info = run.info()
    assert (info.attempts, info.takeovers, info.worker) == (1, 0, None)
    run.close()


def test_the_same_id_twice_is_one_run(durable_store: str, _log: Path) -> None:
    first = submit(JOB, "same", 2, id="same", store=durable_store)
    again = submit(JOB, "same", 2, id="same", store=durable_store)
    assert again.id == first.id
    assert [r.id for r in RunQueue(durable_store).list_runs()] == ["same"]
    work(durable_store)
    submit(JOB, "same", 2, id="same", store=durable_store)  # after it ran: still the one
    work(durable_store)
    assert ran(_log) == ["step same 0", "step same 1"]
    with pytest.raises(UsageError, match="exists already with another call"):
        submit(JOB, "same", 3, id="same", store=durable_store)
    Session(durable_store, id="plain").close()
    with pytest.raises(UsageError, match="not a run"):
        submit(JOB, "x", 1, id="plain", store=durable_store)


def test_bad_submissions_say_what_to_do(durable_store: str) -> None:
    with pytest.raises(UsageError, match=r"package\.module:function"):
        submit("job", id="a", store=durable_store)
    with pytest.raises(UsageError, match="not JSON"):
        submit(JOB, object(), id="a", store=durable_store)
    with pytest.raises(UsageError, match="durable store"):
        submit(JOB, id="a", store="memory")
    with pytest.raises(UsageError, match="id"):
        submit(JOB, id="", store=durable_store)
    assert RunQueue(durable_store).list_runs() == []


def test_an_id_longer_than_any_store_indexes_is_refused_before_it_reaches_one(
    durable_store: str,
) -> None:
    """Random text (what a hash or a user's input is: nothing to compress) at the longest
    id is stored on SQLite and PostgreSQL alike; one byte more is a UsageError from
    Session(), fork(), Session.open() and submit(), which says what to do, and leaves the
    store as it was (PostgreSQL's driver once refused it mid-insert: "index row size
    exceeds btree maximum")."""
    rng = random.Random(41)
    longest = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(MAX_ID_BYTES))
    with Session(durable_store, id=longest) as made_longest:
        assert jobs.step(longest, 3) == 9
        (at,) = (node.id for node in made_longest.dag.children(None))
    with submit(JOB, 1, id="r" + longest[1:], store=durable_store) as run:
        assert run.status() == "queued"
    over = "é" + longest[2:] + "x"  # MAX_ID_BYTES + 1 bytes of UTF-8 in fewer characters
    refusals = []
    with pytest.raises(UsageError, match=rf"is {MAX_ID_BYTES + 1} bytes") as made:
        Session(durable_store, id=over)
    refusals.append(made)
    with pytest.raises(UsageError, match="at most") as opened:
        Session.open(durable_store, over)
    refusals.append(opened)
    with Session.open(durable_store, longest) as kept, pytest.raises(UsageError) as forked:
        kept.fork(at, id=over)
    refusals.append(forked)
    with pytest.raises(UsageError, match="at most") as submitted:
        submit(JOB, 1, id=over, store=durable_store)
    refusals.append(submitted)
    for refusal in refusals:
        assert "a hash of the long one" in str(refusal.value)
        assert len(str(refusal.value)) < 1_000
    with RunQueue(durable_store) as queue:
        assert {s.id for s in queue.store.list_sessions()} == {longest, "r" + longest[1:]}


def test_a_long_id_is_echoed_cut_short_by_run_and_the_queue(durable_store: str) -> None:
    """Run(store, id), its waits and the queue's own refusals quote an id (or a name) the
    way `runs submit` does: cut to a few hundred characters, saying how much was cut. (A
    megabyte where nothing is stored; a stored id at the longest any store takes.)"""
    huge, long = "x" * 1_000_000, "y" * MAX_ID_BYTES
    messages: list[str] = []
    with pytest.raises(UsageError, match="no run") as missing:
        Run(durable_store, huge)
    messages.append(str(missing.value))
    with submit(JOB, 1, id=long, store=durable_store) as run:
        with pytest.raises(TimeoutError, match="still queued") as waiting:
            run.result(timeout=0)
        messages.append(str(waiting.value))
        with pytest.raises(UsageError, match="exists already with another call") as other:
            submit(JOB, 2, id=long, store=durable_store)
        messages.append(str(other.value))
        run.cancel()
        with pytest.raises(RunFailed, match="cancelled") as cancelled:
            run.result(timeout=0)
        messages.append(str(cancelled.value))
    with RunQueue(durable_store) as queue:
        with pytest.raises(UsageError, match="no run") as unknown:
            queue.cancel(huge, "not wanted")
        messages.append(str(unknown.value))
        with pytest.raises(UsageError, match="must be a whole number") as limit_text:
            queue.set_limit("default", "9" * 1_000_000)  # type: ignore[arg-type]
        messages.append(str(limit_text.value))
    with pytest.raises(UsageError, match="names no function") as unnamed:
        resolve(huge)
    messages.append(str(unnamed.value))
    for message in messages:
        assert len(message) < 1_000, message[:400]
        assert re.search(r"'…\[cut [0-9 ]+ of [0-9 ]+ characters\]", message), message


def test_a_function_that_cannot_be_loaded_fails_its_run(durable_store: str) -> None:
    run = submit("tests.openprogram.runs.jobs:nothing", id="n", store=durable_store)
    work(durable_store)
    with pytest.raises(RunFailed, match="cannot load") as failed:
        run.result(timeout=0)
    assert failed.value.state == "failed"


def test_priority_then_due_time_orders_the_runs(durable_store: str, _log: Path) -> None:
    submit(JOB, "low", 1, id="low", store=durable_store, priority=-1)
    submit(JOB, "mid", 1, id="mid", store=durable_store)
    submit(JOB, "high", 1, id="high", store=durable_store, priority=5)
    submit(JOB, "later", 1, id="later", store=durable_store, priority=9, delay=3600)
    work(durable_store)
    assert ran(_log) == ["step high 0", "step mid 0", "step low 0"]
    assert Run(durable_store, "later").status() == "queued"  # not due for an hour


def test_a_queue_limit_holds_over_all_slots(durable_store: str, _log: Path) -> None:
    limit(durable_store, "narrow", 1)
    for i in range(6):
        submit(JOB, f"n{i}", 2, id=f"n{i}", store=durable_store, queue="narrow")
    most = [0]
    queue = RunQueue(durable_store)
    stop = threading.Event()

    def count() -> None:  # what runs at once, seen from outside while the worker works
        while not stop.wait(0.002):  # a pause between looks: the worker's threads get in
            most[0] = max(most[0], len(queue.list_runs("running")))

    watcher = threading.Thread(target=count)
    watcher.start()
    try:
        work(durable_store, queues=("narrow",), concurrency=3)
    finally:
        stop.set()
        watcher.join()
    assert [r.state for r in queue.list_runs()] == ["completed"] * 6
    assert most[0] == 1
    queue.close()


def test_a_queue_read_while_another_thread_closes_it_reconnects_and_reads_all(
    durable_store: str,
) -> None:
    # a worker's slots share one queue: a driver error in one closes its connection (the
    # next call reconnects). A read under way in another slot must not fail for that: on
    # a busy machine its rows were read after the close ("Cannot operate on a closed
    # database") and the slot died
    for i in range(12):
        submit(JOB, f"c{i}", 2, id=f"c{i}", store=durable_store)
    queue = RunQueue(durable_store)
    stop = threading.Event()
    closes = [0]

    def closer() -> None:
        while not stop.is_set():
            queue.close()
            closes[0] += 1

    thread = threading.Thread(target=closer)
    thread.start()
    try:
        for _ in range(200):
            assert len(queue.list_runs()) == 12
            assert queue.get(f"c{_ % 12}") is not None
    finally:
        stop.set()
        thread.join()
    assert closes[0] > 0
    queue.close()


def test_a_run_whose_end_the_store_refused_goes_back_and_ends_without_running_again(
    durable_store: str, _log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the store refuses the first end (a SQLite lock held past its timeout on a busy
    # machine): the run is not left `running` under a worker that no longer runs it
    submit(JOB, "s1", 2, id="s1", store=durable_store)
    finish = RunQueue.finish
    refused: list[str] = []

    def refuse_once(self: RunQueue, id: str, *args: object) -> bool:
        if not refused:
            refused.append(id)
            raise StoreError("the run queue could not end run 's1': database is locked")
        return finish(self, id, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(RunQueue, "finish", refuse_once)
    worker = work(durable_store)
    run = Run(durable_store, "s1")
    assert refused == ["s1"]
    assert run.status() == "completed" and run.result(timeout=0) == 0 + 1
    assert ran(_log) == ["step s1 0", "step s1 1"]  # the resume replayed, ran nothing
    assert worker.started == 2
    run.close()


def test_a_slot_that_cannot_read_its_queues_looks_again_instead_of_dying(
    durable_store: str, _log: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # deciding whether it is idle, a slot reads the queues; a store that refuses that read
    # (locked past its timeout) must not end the slot, and with it the worker's work
    listed = RunQueue.list_runs
    refused: list[int] = []

    def refuse_once(self: RunQueue, state: str | None = None) -> list[object]:
        if not refused:  # a run comes in while the store refuses the look
            refused.append(1)
            submit(JOB, "i1", 1, id="i1", store=durable_store).close()
            raise StoreError("the run queue could not list runs: database is locked")
        return listed(self, state)  # type: ignore[return-value]

    monkeypatch.setattr(RunQueue, "list_runs", refuse_once)
    work(durable_store, concurrency=1)  # nothing queued yet: its first look is refused
    assert refused == [1]
    assert Run(durable_store, "i1").status() == "completed"


def test_only_the_workers_queues_are_taken(durable_store: str, _log: Path) -> None:
    submit(JOB, "a", 1, id="a", store=durable_store, queue="a")
    submit(JOB, "b", 1, id="b", store=durable_store, queue="b")
    work(durable_store, queues=("b",))
    assert (Run(durable_store, "a").status(), Run(durable_store, "b").status()) == (
        "queued",
        "completed",
    )


def test_a_failing_run_fails_with_its_error(durable_store: str) -> None:
    run = submit("tests.openprogram.runs.jobs:failing", "f", id="f", store=durable_store)
    work(durable_store)
    with pytest.raises(RunFailed, match="ValueError: f cannot be done"):
        run.result(timeout=0)
    assert run.status() == "failed"


def test_plain_and_async_functions_run_too(durable_store: str) -> None:
    plain = submit("tests.openprogram.runs.jobs:plain", 2, b=5, id="p", store=durable_store)
    awaited = submit("tests.openprogram.runs.jobs:coroutine", "c", id="c", store=durable_store)
    work(durable_store, concurrency=2)
    assert plain.result(timeout=0) == {"sum": 7}
    assert awaited.result(timeout=0) == "c awaited 9"


def test_result_waits_with_a_timeout(durable_store: str) -> None:
    run = submit(JOB, "t", 1, id="t", store=durable_store)
    with pytest.raises(TimeoutError, match="still queued"):
        run.result(timeout=0.01)


def test_a_queued_run_cancelled_never_runs(durable_store: str, _log: Path) -> None:
    run = submit(JOB, "c", 2, id="c", store=durable_store)
    assert run.cancel() == "cancelled"
    work(durable_store)
    assert ran(_log) == []
    with pytest.raises(RunFailed, match="cancelled") as failed:
        run.result(timeout=0)
    assert failed.value.state == "cancelled"


def test_a_running_run_cancelled_stops_at_its_next_call(
    durable_store: str, _log: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fifos = tmp_path / "fifos"
    fifos.mkdir()
    monkeypatch.setenv(jobs.FIFOS, str(fifos))
    import os

    os.mkfifo(fifos / "k-2")
    run = submit(JOB, "k", 5, id="k", store=durable_store)
    worker = Worker(durable_store, poll_s=0.01, watch_s=0.01)
    thread = threading.Thread(target=worker.run, kwargs={"until_idle": True})
    thread.start()
    with open(fifos / "k-2", "w"):  # the run waits before its third step
        assert run.cancel() == "running"
        worker.watch_once()  # (its watch thread may have been first)
        assert _stopping(worker) == {"k"}
    thread.join()
    assert run.status() == "cancelled"
    assert ran(_log) == ["step k 0", "step k 1"]
    recorded = Session.open(durable_store, "k")
    assert recorded.dag.nodes[0].status == "stopped"
    recorded.close()


def _stopping(worker: Worker) -> set[str]:
    return {id for id, (_, s) in worker._active.items() if s._stop_reason is not None}


def test_a_run_waiting_for_a_person_goes_on_when_answered_and_requeued(
    durable_store: str, _log: Path
) -> None:
    run = submit("tests.openprogram.runs.jobs:asking", "q", id="q", store=durable_store)
    work(durable_store)
    assert run.status() == "waiting"
    with pytest.raises(RunFailed, match="requeue") as waiting:
        run.result(timeout=0)
    assert waiting.value.state == "waiting"
    session = Session.open(durable_store, "q")
    [question] = session.pending()
    session.answer(question.id, "yes")
    session.close()
    assert run.requeue()
    work(durable_store)
    assert run.result(timeout=0) == "q: yes"
    assert ran(_log) == ["asked q yes"]


def test_a_dead_workers_run_is_requeued_ahead_of_runs_queued_after_it(
    durable_store: str,
) -> None:
    import subprocess
    import sys

    from openprogram.store.lease import this_process

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    machine, _, rest = this_process().partition("|")
    gone = f"{machine}|{dead.pid}|{rest.partition('|')[2]}"
    queue = RunQueue(durable_store)
    for id in ("first", "second", "third"):
        submit(JOB, id, 1, id=id, store=durable_store).close()
    claimed = queue.claim(["default"], f"host:{dead.pid}:gone", gone)
    assert claimed is not None and claimed.id == "first"
    worker = Worker(durable_store)
    assert worker.watch_once() == 1  # its claimer's process has ended
    order = [queue.claim(["default"], f"host:{i}:x", this_process()) for i in range(3)]
    assert [r.id for r in order if r is not None] == ["first", "second", "third"]
    assert queue.get("first").takeovers == 1  # type: ignore[union-attr]
    worker.queue.close()
    queue.close()
