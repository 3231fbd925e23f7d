"""Retention benchmark: prune of many finished sessions, on SQLite and PostgreSQL (issue 43).

Records `--sessions` (10 000) finished sessions of `--calls` (5) recorded calls each
(every 50th with an image of its own), then the sessions prune must keep: 50 with a call
waiting for a person, 50 with a `once` call cut off (`unknown`), 50 a dataset reads
(`Store.read_by`), 10 forks' parents, 20 queued runs. Measured: the time of a dry run
and of the prune itself (removing, the images, compacting: VACUUM / VACUUM FULL), the
store's size before and after, and that every kept session is there after with the
nodes it had. Everything is recorded through the public API (Session, agentic
functions), as a program would.

A plain script: `python benchmarks/bench_prune.py --postgres URL` (a fresh schema is
made and dropped), or `--sqlite` for one file. Figures go into docs/performance.md by
hand.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

from _common import BenchStore, machine  # noqa: E402
from PIL import Image as PILImage  # noqa: E402

from openprogram import Image, Session, agentic_function, ask_user  # noqa: E402
from openprogram.runs import submit  # noqa: E402
from openprogram.store import open_store  # noqa: E402


@agentic_function
def note(i: int, text: str) -> str:
    return text


@agentic_function
def picture(seed: int) -> Image:
    return Image(PILImage.new("RGB", (64, 48), (seed % 256, seed // 256 % 256, 7)))


@agentic_function
def asking() -> str:
    return str(ask_user("go on?", choices=["yes", "no"]))


@agentic_function(effect="once")
def paying() -> None:
    raise KeyboardInterrupt  # cut mid-body: its effect is unknown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", metavar="URL", help="the PostgreSQL server")
    parser.add_argument("--sqlite", action="store_true", help="one SQLite file instead")
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=5)
    options = parser.parse_args()
    if not options.postgres and not options.sqlite:
        parser.error("give --postgres URL or --sqlite")
    with (
        tempfile.TemporaryDirectory() as folder,
        BenchStore(options.postgres, Path(folder), "prune") as store,
    ):
        bench(store, options)


def record(store: str, options: argparse.Namespace) -> set[str]:
    """The sessions; returns the ids prune must keep."""
    keep: set[str] = set()
    text = "x" * 400
    block = time.perf_counter()
    for i in range(options.sessions):
        with Session(store, id=f"done-{i:05d}"):
            for k in range(options.calls):
                note(k, text)
            if i % 50 == 0:
                picture(i)
        if (i + 1) % 1000 == 0:  # the creation rate as the store grows
            rate = 1000 / (time.perf_counter() - block)
            print(f"  recorded {i + 1} finished sessions: {rate:.1f} sessions/s over the "
                  f"last 1000, load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
            block = time.perf_counter()
    for i in range(50):
        with Session(store, id=f"waiting-{i}"), contextlib.suppress(Exception):
            asking()  # no one answers here: it waits
        with Session(store, id=f"unknown-{i}"), contextlib.suppress(KeyboardInterrupt):
            paying()
        keep.update((f"waiting-{i}", f"unknown-{i}"))
    for i in range(10):
        with Session(store, id=f"parent-{i}") as parent:
            note(0, "parent")
            at = parent.dag.nodes[0].id
        with Session.open(store, f"parent-{i}").fork(at=at, id=f"fork-{i}"):
            note(1, "fork")
        keep.add(f"parent-{i}")  # its fork goes in this prune; it in the next one
    for i in range(20):
        submit("bench_prune:note", i, "queued", id=f"queued-{i}", store=store).close()
        keep.add(f"queued-{i}")
    opened, _ = open_store(store)
    assert opened is not None
    try:
        step = max(1, options.sessions // 50)
        read = [f"done-{i:05d}" for i in range(0, options.sessions, step)][:50]  # spread out
        opened.read_by(read, "dataset:bench")
        keep.update(read)
    finally:
        opened.close()
    return keep


def nodes_of(opened: Any, ids: set[str]) -> dict[str, int]:
    return {id: len(opened.rows(id)) for id in sorted(ids)}


def bench(store: str, options: argparse.Namespace) -> None:
    kind = "PostgreSQL" if options.postgres else "SQLite"
    print(f"{kind}: {machine()}")
    started = time.perf_counter()
    keep = record(store, options)
    print(f"recorded in {time.perf_counter() - started:.1f} s")
    opened, _ = open_store(store)
    assert opened is not None
    try:
        before = nodes_of(opened, keep)
        total = len(opened.list_sessions())
        started = time.perf_counter()
        dry = opened.prune(older_than=0, dry_run=True)
        dry_s = time.perf_counter() - started
        started = time.perf_counter()
        done = opened.prune(older_than=0)
        prune_s = time.perf_counter() - started
        left = {info.id for info in opened.list_sessions()}
        after = nodes_of(opened, keep)
    finally:
        opened.close()
    assert set(dry.removed) == set(done.removed), "the dry run and the prune disagree"
    assert keep <= left, f"kept sessions went: {sorted(keep - left)[:5]}"
    assert after == before, "a kept session changed"
    assert left == keep, f"more stayed than expected: {sorted(left - keep)[:5]}"
    reasons: dict[str, int] = {}
    for why in done.kept.values():
        reasons[why] = reasons.get(why, 0) + 1
    print(f"sessions: {total}, removed {len(done.removed)} ({done.nodes} nodes, "
          f"{done.blobs} images), kept {len(left)}")  # fmt: skip
    for why, count in sorted(reasons.items()):
        print(f"  kept {count}: {why}")
    print(f"dry run: {dry_s:.2f} s; prune (removing, images, compacting): {prune_s:.2f} s, "
          f"{1000 * prune_s / max(1, len(done.removed)):.2f} ms a session")  # fmt: skip
    print(f"store: {done.bytes_before:,} -> {done.bytes_after:,} bytes "
          f"({100 * done.bytes_after / max(1, done.bytes_before):.1f} %)")  # fmt: skip
    print("every kept session is there with the nodes it had")


if __name__ == "__main__":
    main()
