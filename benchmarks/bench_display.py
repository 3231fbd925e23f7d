"""Benchmark of the inspection views: a 10 000-node GUI-shaped DAG to HTML and a report.

Times dag_html (cold and warm), write_report, Chromium loading the report, one CallView.
Targets: 10 000 nodes to HTML in <= 2 s and <= 5 MB (exit 1 when missed). Run:
python benchmarks/bench_display.py [--full-history] [--quick]; copy the table into
docs/performance.md under "## Inspecting" with the machine and date.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import machine  # benchmarks/ is on sys.path when a script runs
from PIL import Image as PILImage
from PIL import ImageDraw

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.display import CallView, dag_html, write_report
from openprogram.display._payload import build_payload

NODES_PER_STEP = 7
TIME_TARGET_S = 2.0
SIZE_TARGET_BYTES = 5_000_000


def record(nodes: int, history: int | None) -> Session:
    """A recorded GUI-shaped run of about `nodes` nodes."""

    @agentic_function(render_range={"callers": 0})
    def observe(step: int) -> dict:
        shot = None
        if step % 10 == 0:
            shot = PILImage.new("RGB", (1280, 800), (236, 239, 243))
            draw = ImageDraw.Draw(shot)
            draw.rectangle((step % 900, 120, step % 900 + 320, 360), fill=(step * 7 % 255, 90, 160))
            draw.text((40, 40), f"step {step}", fill="black")
        return {"screenshot": shot, "components": [f"button {i}" for i in range(8)]}

    @agentic_function(render_range={"callers": 0})
    def verify_step(step: int) -> dict:
        return {"ok": llm(f"Did step {step - 1} work?")}

    @agentic_function(render_range={"callers": history})
    def plan_next_action(step: int) -> dict:
        return {"action": llm(f"Plan step {step}.")}

    @agentic_function
    def dispatch_action(action: dict) -> dict:
        return {"executed": True}

    @agentic_function
    def gui_step(step: int) -> dict:
        observe(step)
        verify_step(step)
        return dispatch_action(plan_next_action(step))

    @agentic_function
    def gui_agent(task: str, steps: int) -> str:
        for step in range(1, steps + 1):
            gui_step(step)
        return "done"

    reply = '{"type": "click", "element": 3, "reason": "the Save button"}'
    with Session() as session, Runtime(ScriptedModel(lambda request: reply)):
        gui_agent("fill in the form", nodes // NODES_PER_STEP)
    return session


def timed(work, repeat: int = 1) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def hidden_bytes(data: dict) -> int:
    """JSON bytes of the payload's what-was-hidden part: the reasons table and each llm
    row's hidden entry."""
    table = sum(len(json.dumps(data[key])) for key in ("reasons", "codes", "rules"))
    return table + sum(len(json.dumps(row[16])) for row in data["nodes"] if row[16])


def browser_load(report: Path) -> float | None:
    """Seconds for headless Chromium to load the report and run its script."""
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        return None
    with tempfile.TemporaryDirectory() as profile:
        command = [
            binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-quic", f"--user-data-dir={profile}", "--dump-dom",
        ]  # fmt: skip
        blank = report.with_name("blank.html")
        blank.write_text("<!doctype html><title>blank</title>")
        base, _ = timed(lambda: subprocess.run([*command, blank.as_uri()], capture_output=True))
        took, _ = timed(lambda: subprocess.run([*command, report.as_uri()], capture_output=True))
    return max(0.0, took - base)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--full-history", action="store_true", help="plan reads all history")
    parser.add_argument("--quick", action="store_true", help="2 000 nodes (a smoke run)")
    options = parser.parse_args()
    if options.quick:
        options.nodes = 2_000

    history = None if options.full_history else 40
    print(f"recording ~{options.nodes:,} nodes (plan reads {history or 'all'} callers)…")
    took, session = timed(lambda: record(options.nodes, history))
    dag = session.dag  # type: ignore[attr-defined]
    print(f"recorded {len(dag):,} nodes, {len(dag.blobs)} screenshots in {took:.1f} s")

    cold, html = timed(lambda: dag_html(dag))
    warm, _ = timed(lambda: dag_html(dag), repeat=5)
    size = len(str(html).encode("utf-8"))
    hidden_s, data = timed(lambda: build_payload(dag))
    hidden = hidden_bytes(data)  # type: ignore[arg-type]
    with tempfile.TemporaryDirectory() as folder:
        report_s, report = timed(lambda: write_report(session, Path(folder) / "run.html"))
        loaded = browser_load(report)  # type: ignore[arg-type]
    last_plan = dag.find(name="plan_next_action", kind="llm")[-1]
    call_s, _ = timed(lambda: CallView(dag, last_plan), repeat=3)

    rows = [
        ("nodes (llm)", f"{len(dag):,} ({len(dag.find(kind='llm')):,})"),
        ("dag_html, cold (thumbnails encoded)", f"{cold:.2f} s"),
        ("dag_html, warm (median of 5)", f"{warm:.2f} s"),
        ("HTML size", f"{size / 1e6:.2f} MB"),
        ("of which: what was hidden from each call, and why", f"{hidden / 1e3:.0f} kB"),
        ("build_payload (rows, hidden nodes and reasons; warm)", f"{hidden_s:.2f} s"),
        ("write_report", f"{report_s:.2f} s"),
        (
            "Chromium: load report and build the tree",
            "n/a" if loaded is None else f"{loaded:.2f} s",
        ),
        ("CallView of the last plan call", f"{call_s * 1000:.0f} ms"),
    ]
    print(f"\n{time.strftime('%Y-%m-%d')}, {machine()}")
    print(f"history: plan reads {history or 'all'} callers\n")
    print("| measure | result |\n|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    met = cold <= TIME_TARGET_S and size <= SIZE_TARGET_BYTES
    print(
        f"\ntarget: <= {TIME_TARGET_S:g} s and <= {SIZE_TARGET_BYTES / 1e6:g} MB (cold): "
        f"{'ok' if met else 'MISSED'}"
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
