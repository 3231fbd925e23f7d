"""Run queue benchmark: workers that die, on one PostgreSQL (issue 43).

`--workers` (4) `openprogram worker` processes on this machine take `--runs` (200)
queued runs of `--calls` (20) recorded calls each (benchmarks/_runs_jobs.py: steps and
one `effect="once"` call); every `--kill-every` (10) seconds a random worker that has
started up gets SIGKILL and a new one starts in its place. Measured:

* all runs complete (a run whose `once` call a kill cut waits to be settled: the bench
  settles it as done, requeues it, and counts it);
* no call recorded completed runs again, and no `once` body runs twice: every body logs
  its execution; a step that ran twice must have first run in a worker that was killed
  (it was in flight), never in one that lived on;
* time from a worker's death to the resumption of each run it held (the run running
  again under another worker, or ended): target <= 10 s;
* throughput: started runs per second and recorded nodes per second over the whole run,
  and with `--kill-every 0` without kills.

A plain script: `python benchmarks/bench_runs.py --postgres URL` (a fresh schema is made
and dropped), or `--sqlite` for one file. Figures go into docs/performance.md by hand.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _common import BenchStore, machine  # noqa: E402

from openprogram import Session  # noqa: E402
from openprogram.runs import RunQueue  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="URL", help="the PostgreSQL server")
    parser.add_argument("--sqlite", action="store_true", help="one SQLite file instead")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=4, help="runs at once per worker")
    parser.add_argument("--kill-every", type=float, default=10.0, help="seconds; 0: never")
    options = parser.parse_args()
    if not options.postgres and not options.sqlite:
        parser.error("give --postgres URL or --sqlite")
    with (
        tempfile.TemporaryDirectory() as folder,
        BenchStore(options.postgres, Path(folder), "runs") as store,
    ):
        bench(store, Path(folder), options)


WORKER = (sys.executable, "-m", "openprogram", "worker", "--queue", "bench")


class Workers:
    """The worker processes, started and killed; who was killed when."""

    def __init__(self, store: str, log: Path, options: argparse.Namespace, folder: Path) -> None:
        self.store, self.options, self.folder = store, options, folder
        self.env = {**os.environ, "PYTHONPATH": f"{HERE}:{ROOT}",
                    "OPENPROGRAM_BENCH_RUNS_LOG": str(log)}  # fmt: skip
        self.live: list[subprocess.Popen[bytes]] = []
        self.logs: dict[int, Path] = {}  # pid -> the worker's stderr
        self.killed: list[tuple[int, float]] = []  # (pid, time of the kill)
        self.skipped = 0  # kills skipped: no worker had started up yet
        self._count = 0

    def start(self) -> None:
        self._count += 1
        path = self.folder / f"worker-{self._count}.log"
        errors = open(path, "wb")  # noqa: SIM115
        self.live.append(
            subprocess.Popen(
                [*WORKER, self.store, "--concurrency", str(self.options.concurrency)],
                cwd=HERE,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=errors,
            )
        )
        self.logs[self.live[-1].pid] = path
        errors.close()

    def kill_one(self) -> int | None:
        """SIGKILL a random worker that has started up (said "ready": a process still
        importing holds no run, and on a loaded machine that can take longer than the
        kill interval) and start another; None when none has."""
        up = [w for w in self.live if b" ready" in self.logs[w.pid].read_bytes()]
        if not up:
            self.skipped += 1
            return None
        victim = random.choice(up)
        victim.send_signal(signal.SIGKILL)
        self.killed.append((victim.pid, time.time()))
        victim.wait()
        self.live.remove(victim)
        self.start()
        return victim.pid

    def stop(self) -> None:
        for worker in self.live:
            worker.send_signal(signal.SIGTERM)
        for worker in self.live:
            worker.wait(timeout=120)


def bench(store: str, folder: Path, options: argparse.Namespace) -> None:
    kind = "PostgreSQL" if options.postgres else "SQLite"
    print(f"bench_runs on {machine()}, {kind}")
    every = options.kill_every or "never"
    print(f"{options.workers} workers x {options.concurrency} slots, {options.runs} runs of "
          f"{options.calls} recorded calls, SIGKILL every {every} s")  # fmt: skip
    log = folder / "ran.log"
    log.touch()
    queue = RunQueue(store)
    for i in range(options.runs):
        queue.submit(f"run-{i:04d}", "_runs_jobs:bench_job", [f"run-{i:04d}", options.calls],
                     {}, queue="bench", priority=0, delay=0.0, at=None)  # fmt: skip
    workers = Workers(store, log, options, folder)
    resumed: dict[str, float] = {}  # run -> seconds from its worker's death to its resumption
    watcher = _Resumptions(queue, workers, resumed)
    start = time.time()
    for _ in range(options.workers):
        workers.start()
    watcher.start()
    settled = 0
    next_kill = start + options.kill_every if options.kill_every else float("inf")
    while True:  # (light looks: the observers share the machine with the workers)
        if queue.counts().get("completed", 0) == options.runs:
            break
        for r in queue.list_runs("waiting"):  # a kill cut its once call: settle it as done
            settled += _settle(store, r.id)
            queue.requeue(r.id)
        if time.time() >= next_kill:
            workers.kill_one()
            next_kill += options.kill_every
        time.sleep(0.05)
    wall = time.time() - start
    watcher.stop()
    latencies = _event_latencies(store, queue, options)
    workers.stop()
    runs = [r for r in queue.list_runs() if r.id.startswith("run-")]
    nodes = sum(info.nodes for r in runs if (info := queue.store.session(r.id)) is not None)
    _report(log, runs, workers, resumed, wall, settled, nodes, options)
    if latencies:
        latencies.sort()
        median = statistics.median(latencies)
        verdict = "met" if median <= 0.1 else "MISSED"
        print(f"events, a call's end -> a follower in this process ({len(latencies)} calls of "
              f"10 runs): median {median * 1000:.0f} ms, p90 "
              f"{latencies[int(len(latencies) * 0.9)] * 1000:.0f} ms "
              f"[target median <= 100 ms: {verdict}]")  # fmt: skip
    queue.close()


def _event_latencies(store: str, queue: RunQueue, options: argparse.Namespace) -> list[float]:
    """Seconds from a step's end in a worker to its event here (session.events()), over
    10 more runs the workers take while this process follows each."""
    ids = [f"events-{i}" for i in range(10)]
    for id in ids:
        queue.submit(id, "_runs_jobs:bench_job", [id, options.calls], {}, queue="bench",
                     priority=9, delay=2.0, at=None)  # fmt: skip
    found: list[float] = []
    lock = threading.Lock()

    def follow(id: str) -> None:
        session = Session.open(store, id)
        with session.events() as events:
            done = False
            while not done:
                for node in events.poll(30.0):
                    if node.name == "step" and node.status == "completed" and node.ended_at:
                        with lock:
                            found.append(time.time() - node.ended_at)
                    done = done or (node.name == "bench_job" and node.status == "completed")
        session.close()

    threads = [threading.Thread(target=follow, args=(id,)) for id in ids]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return found


def _settle(store: str, run: str) -> int:
    session = Session.open(store, run)
    try:
        for node in session.dag.nodes:
            if node.name == "charge" and node.status == "unknown":
                session.settle(node.id, f"charged {run}")
                return 1
        return 0
    finally:
        session.close()


class _Resumptions(threading.Thread):
    """Notes, for each run a killed worker held, when it runs again under another worker
    (or ends): the time from the kill."""

    def __init__(self, queue: RunQueue, workers: Workers, resumed: dict[str, float]) -> None:
        super().__init__(daemon=True)
        self.queue, self.workers, self.resumed = RunQueue(queue.spec), workers, resumed
        self._halt = threading.Event()
        self.held: dict[str, tuple[int, str]] = {}  # run -> (pid, slot) last seen running

    def stop(self) -> None:
        self._halt.set()
        self.join()
        self.queue.close()

    def run(self) -> None:
        orphans: dict[str, tuple[str, float]] = {}  # run -> (the dead slot, time of death)
        while not self._halt.wait(0.02):
            killed = dict(self.workers.killed)
            now = time.time()
            for id, (slot, died) in list(orphans.items()):
                found = self.queue.get(id)
                if (
                    found is not None
                    and found.worker != slot
                    and (found.state == "running" or found.finished)
                ):
                    self.resumed[id] = now - died
                    del orphans[id]
            for r in self.queue.list_runs("running"):
                if r.id not in orphans and r.worker:
                    pid = int(r.worker.split(":")[1])
                    if pid in killed:
                        orphans[r.id] = (r.worker, killed[pid])


def _report(
    log: Path,
    runs: list,  # type: ignore[type-arg]
    workers: Workers,
    resumed: dict[str, float],
    wall: float,
    settled: int,
    nodes: int,
    options: argparse.Namespace,
) -> None:
    executions: dict[tuple[str, str, str], list[int]] = collections.defaultdict(list)
    for line in log.read_text().splitlines():
        kind, run, i, pid = line.split()
        executions[(kind, run, i)].append(int(pid))
    killed = {pid for pid, _ in workers.killed}
    twice = {k: pids for k, pids in executions.items() if len(pids) > 1}
    by_live = {
        k: p for k, p in twice.items() if k[0] == "step" and any(x not in killed for x in p[:-1])
    }
    once_twice = {k: p for k, p in twice.items() if k[0] == "charge"}
    states = collections.Counter(r.state for r in runs)
    takeovers = sum(r.takeovers for r in runs)
    print(f"runs: {dict(states)}; takeovers {takeovers}; once calls settled by hand {settled}")
    steps_twice = sum(1 for k in twice if k[0] == "step")
    print(f"kills: {len(workers.killed)} (skipped, no worker up yet: {workers.skipped}); "
          f"steps run twice {steps_twice} (each first in a killed "
          f"worker: {not by_live}); once bodies twice: {len(once_twice)}")  # fmt: skip
    if resumed:
        times = sorted(resumed.values())
        verdict = "met" if times[-1] <= 10 else "MISSED"
        print(f"death -> resumption over {len(times)} runs: median "
              f"{statistics.median(times):.2f} s, max {times[-1]:.2f} s "
              f"[target <= 10 s: {verdict}]")  # fmt: skip
    print(f"wall {wall:.1f} s: {options.runs / wall:.1f} runs/s started and completed, "
          f"{nodes / wall:.0f} recorded nodes/s ({nodes} nodes); "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    began = min(r.started_at for r in runs if r.started_at is not None)
    ended = max(r.ended_at for r in runs if r.ended_at is not None)
    busy = ended - began  # by the database's clock: from the first start to the last end
    print(
        f"from the first run's start to the last run's end {busy:.1f} s (the workers' "
        f"start-up left out): {len(runs) / busy:.1f} runs/s, {nodes / busy:.0f} nodes/s"
    )


if __name__ == "__main__":
    main()
