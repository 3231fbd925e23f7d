"""Store benchmarks: the cost and the size of durable sessions.

(a) one recorded call on SQLite vs the same call in a memory session (target: the whole
    recorded call <= 40 us of CPU), beside a commit per record (the store without group
    commit, as before it); and one llm step (a fast call, then an exchange with a
    scripted model) in memory, on SQLite and committed per record;
(b) bytes per node on SQLite beyond the node's payload (target: <= 400);
(c) identical screenshots are stored once;
(d) storage over a 500-step GUI-shaped run (gui_agent > gui_step > observe with a
    screenshot, verify_step and plan_next_action with an llm exchange each, dispatch):
    it should grow linearly, and the session should reopen and resume quickly;
(e) with --concurrency: recording under concurrency (_concurrent_load.py): one session
    with 64 asyncio tasks and 16 threads writing, 500 calls each, every 10th an llm
    exchange; and 64 sessions in one store, as threads, asyncio tasks and 8 processes
    (target: >= 5 000 nodes/s on SQLite, >= 3 000 on PostgreSQL with --postgres). Nodes
    per second of wall clock and of CPU time (on a loaded machine only the latter means
    much).

A plain script, not a test: `python benchmarks/bench_store.py [--quick]`. Results go into
docs/performance.md by hand, with the machine and the date.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import machine  # benchmarks/ is on sys.path when a script runs
from PIL import Image, ImageDraw

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.store import open_store

CALL_TARGET_US = 40.0
CONCURRENT_TARGET = 5000
POSTGRES_TARGET = 3000
BYTES_TARGET = 400


def _file_size(path: Path) -> int:
    """Bytes of the database once its WAL is folded in."""
    with closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


# -- (a) the cost of a recorded call ---------------------------------------------------------


@agentic_function
def step(x: int) -> int:
    return x


def per_call_us(store: Any, calls: int) -> tuple[float, float]:
    """(wall, CPU of this thread) microseconds per recorded call. The CPU time counts the
    SQLite work and its system calls, not the background checkpoint thread, and is not
    inflated when other jobs share the machine."""
    with Session(store):
        for i in range(200):  # warm up caches and the prepared statement
            step(i)
        gc.collect()
        wall, cpu = time.perf_counter(), time.thread_time()
        for i in range(calls):
            step(i)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    return wall / calls * 1e6, cpu / calls * 1e6


class _Hiding:
    """A store with one of its methods hidden (`hidden`), so the Recorder goes without.
    `store`: a SQLite file path or a postgresql:// URL."""

    hidden = ""

    def __init__(self, store: str | Path) -> None:
        self._store = open_store(store)[0]

    def __getattr__(self, name: str) -> Any:
        if name == self.hidden:
            raise AttributeError(name)
        return getattr(self._store, name)


class PerRecord(_Hiding):
    """A store without write_batch: the Recorder commits every record on its own, as it
    did before group commit."""

    hidden = "write_batch"


class NoJournal(_Hiding):
    """A SQLite store without its journal: the records waiting for their batch's commit
    live in memory only (what a kill loses), to show what the journal costs."""

    hidden = "journal"


@agentic_function
def look(i: int) -> dict[str, int]:
    return {"components": i}


@agentic_function(render_range={"callers": 0})
def decide(i: int) -> str:
    return llm(f"plan step {i}")


def per_step_us(store: Any, steps: int) -> tuple[float, float]:
    """(wall, CPU) microseconds per llm step: look() (a fast call), then decide() (an
    exchange with a scripted model, committed when sent and when answered)."""
    with Session(store), Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(50):
            look(i)
            decide(i)
        gc.collect()
        wall, cpu = time.perf_counter(), time.thread_time()
        for i in range(steps):
            look(i)
            decide(i)
        cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    return wall / steps * 1e6, cpu / steps * 1e6


def _medians(samples: list[tuple[float, float]], name: str) -> dict[str, Any]:
    return {
        f"{name}_us": statistics.median(s[0] for s in samples),
        f"{name}_cpu_us": statistics.median(s[1] for s in samples),
        f"{name}_cpu_range": (min(s[1] for s in samples), max(s[1] for s in samples)),
    }


def bench_calls(folder: Path, calls: int, runs: int) -> dict[str, Any]:
    found: dict[str, list[tuple[float, float]]] = {}
    for run in range(runs):  # the variants alternate, so a busy spell hits them alike
        variants: dict[str, tuple[Callable[[Any, int], tuple[float, float]], Any, int]] = {
            "memory": (per_call_us, None, calls),
            "sqlite": (per_call_us, folder / f"calls-{run}.db", calls),
            "per_record": (per_call_us, PerRecord(folder / f"per-{run}.db"), calls),
            "no_journal": (per_call_us, NoJournal(folder / f"nj-{run}.db"), calls),
            "full": (
                per_call_us,
                f"sqlite:///{folder}/full-{run}.db?synchronous=FULL",
                calls // 10,
            ),
            "step_memory": (per_step_us, None, calls // 10),
            "step_sqlite": (per_step_us, folder / f"steps-{run}.db", calls // 10),
            "step_per_record": (per_step_us, PerRecord(folder / f"sp-{run}.db"), calls // 10),
        }
        for name, (measure, store, count) in variants.items():
            found.setdefault(name, []).append(measure(store, count))
    result: dict[str, Any] = {}
    for name, samples in found.items():
        result.update(_medians(samples, name))
    return result


# -- (b) bytes per node ----------------------------------------------------------------------


def bench_bytes(folder: Path, nodes: int) -> dict[str, float]:
    path = folder / "bytes.db"
    Session(path, id="empty").close()
    empty = _file_size(path)
    payload = 0
    with Session(path, id="bytes"):
        for i in range(nodes):
            step(i)
            payload += len(json.dumps({"x": i}, separators=(",", ":"))) + len(str(i))
    size = _file_size(path) - empty
    return {"nodes": nodes, "bytes_per_node": size / nodes, "payload_per_node": payload / nodes}


# -- (c), (d) a GUI-shaped run ---------------------------------------------------------------


def screen(variant: int, size: tuple[int, int] = (1280, 800)) -> Image.Image:
    """A desktop-like picture: a window with fields; `variant` changes the contents."""
    image = Image.new("RGB", size, (236, 236, 236))
    draw = ImageDraw.Draw(image)
    draw.rectangle((80, 60, 1200, 740), fill="white", outline=(120, 120, 120))
    for row in range(8):
        top = 120 + row * 70
        draw.rectangle((140, top, 700, top + 36), outline=(90, 90, 90))
        draw.text((150, top + 10), f"field {row}: value {variant * (row + 1)}", fill="black")
    draw.rectangle((900, 640, 1100, 690), fill=(40, 110, 200))
    draw.text((960, 655), f"Save {variant}", fill="white")
    return image


SCREENS = [screen(v) for v in range(10)]


@agentic_function(render_range={"callers": 0})
def observe(step: int) -> dict[str, Any]:
    return {"step": step, "components": 12, "screenshot": SCREENS[step % len(SCREENS)]}


@agentic_function(render_range={"callers": 0})
def verify_step(task: str, step: int) -> dict[str, Any]:
    return json.loads(llm(f"did step {step - 1} of {task!r} work?"))


@agentic_function
def plan_next_action(task: str, step: int) -> dict[str, Any]:
    return json.loads(llm(f"plan step {step} of {task!r}"))


@agentic_function
def dispatch_action(action: dict[str, Any], step: int) -> dict[str, Any]:
    return {"executed": True, "action": action}


@agentic_function
def gui_step(task: str, step: int) -> dict[str, Any]:
    observe(step)
    if step > 1:
        verify_step(task, step)
    plan = plan_next_action(task, step)
    dispatch_action(plan["action"], step)
    return {"step": step, "status": "acted", "goal": plan["goal"]}


@agentic_function
def gui_agent(task: str, max_steps: int, sizes: list[tuple[int, int]], path: str) -> int:
    for number in range(1, max_steps + 1):
        gui_step(task, number)
        if number % 50 == 0:
            sizes.append((number, _file_size(Path(path))))
    return max_steps


def reply(request: Any) -> str:
    if request.text.startswith("did"):
        return json.dumps({"success": True, "observation": "the field changed"})
    x = 100 + len(request.text) % 500
    return json.dumps(
        {"goal": "click the next field", "action": {"type": "click", "x": x, "y": 200}}
    )


def bench_gui(folder: Path, steps: int) -> dict[str, Any]:
    path = folder / "gui.db"
    Session(path, id="empty").close()
    empty = _file_size(path)
    sizes: list[tuple[int, int]] = []
    started = time.perf_counter()
    with Session(path, id="gui") as session, Runtime(ScriptedModel(reply), max_images=1):
        gui_agent("fill in the form", steps, sizes, str(path))
    elapsed = time.perf_counter() - started
    with closing(sqlite3.connect(path)) as connection:
        blobs, blob_bytes = connection.execute(
            "SELECT count(*), sum(length(data)) FROM openprogram_blobs"
        ).fetchone()
        payload = connection.execute(
            "SELECT sum(coalesce(length(input), 0) + coalesce(length(output), 0) "
            "+ coalesce(length(data), 0)) FROM openprogram_nodes"
        ).fetchone()[0]
    screenshots = sum(1 for n in session.dag.nodes if n.name == "observe" and n.kind == "code")
    growth = [
        (later - earlier) / (later_step - earlier_step)
        for (earlier_step, earlier), (later_step, later) in itertools.pairwise(sizes)
    ]
    started = time.perf_counter()
    reopened = Session.open(path, "gui")
    load_s = time.perf_counter() - started
    started = time.perf_counter()
    with Session.open(path, "gui", resume=True), Runtime(ScriptedModel([])):
        gui_agent("fill in the form", steps, [], str(path))
    resume_s = time.perf_counter() - started
    nodes = len(reopened.dag)
    reopened.close()
    return {
        "steps": steps,
        "nodes": nodes,
        "seconds": elapsed,
        "screenshots": screenshots,
        "blobs": blobs,
        "blob_bytes": blob_bytes,
        "size": sizes[-1][1] - empty if sizes else 0,
        "rows_payload": payload,
        "sizes": sizes,
        "growth_per_step": growth,
        "load_s": load_s,
        "resume_s": resume_s,
    }


def bench_concurrency(postgres: str | None) -> None:
    print(f"bench_store (e) on {machine()}, SQLite {sqlite3.sqlite_version}")
    stores = [("SQLite", None, CONCURRENT_TARGET)]
    if postgres:
        stores.append(("PostgreSQL", postgres, POSTGRES_TARGET))
    for label, url, target in stores:
        with tempfile.TemporaryDirectory() as temporary:
            for name, found in _concurrent_loads(url, Path(temporary)):
                verdict = "met" if found["per_s"] >= target else "MISSED"
                print(
                    f"(e) {label}, {name}: {found['nodes']} nodes in {found['wall_s']:.1f} s "
                    f"-> {found['per_s']:.0f} nodes/s [target >= {target}: {verdict}]; CPU "
                    f"{found['cpu_s']:.1f} s -> {found['per_cpu_s']:.0f} nodes per CPU-second; "
                    f"load {os.getloadavg()[0]:.1f}"
                )


def _concurrent_loads(url: str | None, folder: Path) -> Iterator[tuple[str, dict[str, float]]]:
    """Each load of (e) on PostgreSQL `url`, or on a new SQLite file in `folder`."""
    from _concurrent_load import many_sessions, one_session

    counter = itertools.count()

    def store() -> str:
        return url or str(folder / f"concurrent-{next(counter)}.db")

    yield "one session, 64 tasks + 16 threads", one_session(store())
    for shape in ("threads", "tasks", "processes"):
        yield f"64 sessions as {shape}", many_sessions(store, shape)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer calls and steps")
    parser.add_argument(
        "--postgres", metavar="URL", help="also time a recorded call on this PostgreSQL server"
    )
    parser.add_argument(
        "--concurrency", action="store_true", help="only (e): recording under concurrency"
    )
    options = parser.parse_args()
    if options.concurrency:
        bench_concurrency(options.postgres)
        return
    calls, runs, nodes, steps = (2000, 3, 2000, 100) if options.quick else (20000, 5, 20000, 500)
    print(f"bench_store on {machine()}, SQLite {sqlite3.sqlite_version}")
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        a = bench_calls(folder, calls, runs)
        whole = a["sqlite_cpu_us"]
        verdict = "met" if whole <= CALL_TARGET_US else "MISSED"
        low, high = a["sqlite_cpu_range"]
        print(
            f"(a) recorded call, CPU: memory {a['memory_cpu_us']:.1f} us, SQLite "
            f"{whole:.1f} us (runs {low:.1f}-{high:.1f}) [target <= {CALL_TARGET_US:.0f}: "
            f"{verdict}], a commit per record {a['per_record_cpu_us']:.1f} us "
            f"({a['per_record_cpu_us'] / whole:.1f}x), without the journal "
            f"{a['no_journal_cpu_us']:.1f} us; wall clock: memory "
            f"{a['memory_us']:.1f} us, SQLite {a['sqlite_us']:.1f} us, a commit per record "
            f"{a['per_record_us']:.1f} us, synchronous=FULL {a['full_us']:.0f} us; "
            f"median of {runs} runs x {calls} calls"
        )
        print(
            f"    llm step, CPU: memory {a['step_memory_cpu_us']:.0f} us, SQLite "
            f"{a['step_sqlite_cpu_us']:.0f} us, a commit per record "
            f"{a['step_per_record_cpu_us']:.0f} us; wall clock: memory "
            f"{a['step_memory_us']:.0f} us, SQLite {a['step_sqlite_us']:.0f} us, a commit "
            f"per record {a['step_per_record_us']:.0f} us; {runs} runs x {calls // 10} steps"
        )
        if options.postgres:
            url, found = options.postgres, {}
            for _ in range(runs):
                for name, measure, store, count in (
                    ("call", per_call_us, url, calls // 4),
                    ("call_per_record", per_call_us, PerRecord(url), calls // 4),
                    ("step", per_step_us, url, calls // 20),
                    ("step_per_record", per_step_us, PerRecord(url), calls // 20),
                ):
                    found.setdefault(name, []).append(measure(store, count))
            pg = {name: (statistics.median(t[0] for t in samples),
                         statistics.median(t[1] for t in samples))
                  for name, samples in found.items()}  # fmt: skip
            print(
                f"    PostgreSQL on {url.split('@')[-1]}, us wall/CPU: recorded call "
                f"{pg['call'][0]:.0f}/{pg['call'][1]:.0f}, a commit per record "
                f"{pg['call_per_record'][0]:.0f}/{pg['call_per_record'][1]:.0f}; llm step "
                f"{pg['step'][0]:.0f}/{pg['step'][1]:.0f}, a commit per record "
                f"{pg['step_per_record'][0]:.0f}/{pg['step_per_record'][1]:.0f}"
            )
        b = bench_bytes(folder, nodes)
        overhead = b["bytes_per_node"] - b["payload_per_node"]
        verdict = "met" if overhead <= BYTES_TARGET else "MISSED"
        print(
            f"(b) {b['bytes_per_node']:.0f} bytes per node on disk, {b['payload_per_node']:.0f} "
            f"of them payload: {overhead:.0f} bytes of overhead [target <= {BYTES_TARGET}: "
            f"{verdict}]; {nodes} nodes"
        )
        g = bench_gui(folder, steps)
        print(
            f"(c) {g['screenshots']} screenshots of {len(SCREENS)} distinct screens -> "
            f"{g['blobs']} blobs, {g['blob_bytes'] / 1e3:.0f} kB of PNG"
        )
        growth = g["growth_per_step"]
        spread = (max(growth) - min(growth)) / statistics.mean(growth) if growth else 0.0
        print(
            f"(d) {g['steps']} GUI steps, {g['nodes']} nodes in {g['seconds']:.1f} s: "
            f"{g['size'] / 1e6:.2f} MB, of which {g['blob_bytes'] / 1e6:.2f} MB images and "
            f"{g['rows_payload'] / 1e6:.2f} MB row payload; growth per step "
            f"{statistics.mean(growth) / 1e3 if growth else 0:.2f} kB "
            f"(min {min(growth, default=0) / 1e3:.2f}, max {max(growth, default=0) / 1e3:.2f}, "
            f"spread {spread:.0%}); reopen {g['load_s'] * 1e3:.0f} ms, resume (all replayed) "
            f"{g['resume_s'] * 1e3:.0f} ms"
        )
        print("    size by step: " + ", ".join(f"{s}: {b / 1e6:.2f} MB" for s, b in g["sizes"]))


if __name__ == "__main__":
    main()
