"""run_batch on the local engine: real worker processes, real MiniWoB++ pages in Chromium
on Xvfb, a real SQLite store; reruns skip, dead workers are retried, bad input is caught
before any episode starts."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from gui_harness.batch import run_batch, session_id
from gui_harness.demo.policy import TASK
from gui_harness.desktop._tether import group_gone, group_members
from openprogram.errors import ConfigError, UsageError
from openprogram.store.open import open_store
from tests.gui_harness.bench.conftest import needs_miniwob

pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')


def _sessions(store: str) -> set[str]:
    opened, _ = open_store(store)
    try:
        return {info.id for info in opened.list_sessions()}
    finally:
        opened.close()


@pytest.mark.parametrize("_marks", [pytest.param(None, marks=needs_miniwob())])
def test_four_episodes_run_on_two_workers_and_a_rerun_does_none_again(tmp_path, _marks):
    tasks = tmp_path / "tasks.jsonl"
    good = [{"id": f"cb{seed}", "benchmark": "miniwob/click-button", "seed": seed}
            for seed in range(3)]  # fmt: skip
    lines = [json.dumps(t) for t in good]
    lines.insert(1, '{"id": "broken", "benchmark": ')
    lines.append(json.dumps({"id": "tab", "benchmark": "miniwob/click-test", "max_steps": 4}))
    tasks.write_text("\n".join(lines), encoding="utf-8")
    store = str(tmp_path / "runs.db")
    out = tmp_path / "out"

    result = run_batch(tasks, workers=2, store=store, model="oracle", name="b", out=out)

    assert [e["id"] for e in result.episodes] == ["cb0", "cb1", "cb2", "tab"]
    assert result.problems and result.problems[0].startswith(f"{tasks}:2: not valid JSON")
    assert (result.ran, result.skipped, result.retries) == (4, 0, 0)
    for episode in result.episodes:
        assert episode["status"] == "success", episode
        assert episode["reward"] == 1.0 and episode["steps"] >= 2 and episode["tokens"] > 0
        report = (out / episode["report"]).read_text()
        assert "The final screen" in report and "<th>step</th>" in report
    assert _sessions(store) == {session_id("b", e["id"], 1) for e in result.episodes}
    written = json.loads(result.summary_path.read_text())
    assert written["summary"]["total"]["success_rate"] == 1.0
    assert [row["task"] for row in written["summary"]["tasks"]] == ["click-button", "click-test"]
    index = result.report_path.read_text()
    assert 'href="episodes/b-cb0-a1.html"' in index and "Tasks not run" in index

    again = run_batch(tasks, workers=2, store=store, model="oracle", name="b", out=out)

    assert (again.ran, again.skipped) == (0, 4)
    assert again.episodes == result.episodes
    assert _sessions(store) == {session_id("b", e["id"], 1) for e in result.episodes}


def _descendant_groups(pid: int) -> set[int]:
    """The process groups of `pid`'s descendants, other than its own."""
    parents: dict[int, tuple[int, int]] = {}  # pid -> (parent, group)
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            fields = (entry / "stat").read_text().rsplit(") ", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[int(entry.name)] = (int(fields[1]), int(fields[2]))
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, (parent, _) in parents.items() if parent in frontier}
        found |= frontier
    return {parents[child][1] for child in found} - {os.getpgid(pid)}


_APP = (
    'if [ -e "$0" ]; then exec "$1" -m gui_harness.demo.app --state "$2"; '
    'else touch "$0"; exec xprop -root -spy; fi'
)


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_worker_killed_mid_episode_is_retried_and_its_processes_stopped(tmp_path):
    marker = tmp_path / "first-attempt-started"
    # the first attempt's app never shows a window (so the episode is stuck starting
    # it); the retry starts the demo form, which the scripted demo policy fills in
    app = ["sh", "-c", _APP, str(marker), sys.executable, str(tmp_path / "state.json")]
    store = str(tmp_path / "runs.db")
    task = {"id": "form", "task": TASK, "app": app, "max_steps": 12}  # room to wait for OCR
    outcome: dict[str, object] = {}
    batch = threading.Thread(
        target=lambda: outcome.update(
            result=run_batch([task], store=store, model="demo", name="k", out=tmp_path / "o")
        )
    )
    batch.start()
    deadline = time.monotonic() + 60
    while not marker.exists():  # the first attempt is inside its episode
        assert time.monotonic() < deadline and batch.is_alive()
        time.sleep(0.05)
    opened, _ = open_store(store)
    root = next(r for r in opened.rows(session_id("k", "form", 1)) if r.parent is None)
    opened.close()
    pid = json.loads(root.input)["worker"]["pid"]
    groups = _descendant_groups(pid)  # Xvfb's, the bus's (dbus-daemon, AT-SPI), the app's
    assert len(groups) >= 3, groups
    os.kill(pid, signal.SIGKILL)
    batch.join(timeout=240)
    assert not batch.is_alive()

    result = outcome["result"]
    episode = result.episodes[0]  # type: ignore[attr-defined]
    assert episode["status"] == "success" and episode["attempts"] == 2
    assert episode["session"] == session_id("k", "form", 2)
    assert result.retries == 1  # type: ignore[attr-defined]
    with pytest.raises(ProcessLookupError):  # the rest of its group went too
        os.killpg(pid, 0)
    # and so did the groups its desktop started in their own sessions: no SIGKILL reaches
    # them, their watchers do
    assert all(group_gone(group, 20) for group in groups), {g: group_members(g) for g in groups}


def test_bad_settings_are_refused_before_any_episode(tmp_path):
    task = [{"id": "t", "benchmark": "miniwob/click-button"}]
    out = tmp_path / "o"
    with pytest.raises(UsageError, match="no model"):
        run_batch(task, store=str(tmp_path / "s.db"), out=out)
    with pytest.raises(UsageError, match="model 'oracle' cannot plan them"):
        run_batch([{"id": "app", "task": "x"}], store=str(tmp_path / "s.db"), model="oracle",
                  out=out)  # fmt: skip
    with pytest.raises(UsageError, match="workers=0"):
        run_batch(task, workers=0, model="oracle", out=out)
    with pytest.raises(UsageError, match="store='memory'"):
        run_batch(task, store="memory", model="oracle", out=out)
    with pytest.raises(ConfigError, match="engine='spark'"):
        run_batch(task, engine="spark", model="oracle", out=out)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"(?s)cannot use the store .postgresql://.*No episode"):
        run_batch(task, store="postgresql://u@127.0.0.1:1/db", model="oracle", out=out)
    with pytest.raises(ConfigError, match="cannot share a SQLite file"):
        run_batch(task, engine="ray", address="ray-head.invalid:6379", model="oracle", out=out)
    assert _sessions(str(out / "batch.db")) == set()


def test_an_episode_report_opens_with_the_outcome_the_final_screen_and_the_steps(tmp_path):
    from gui_harness import gui_agent
    from gui_harness.batch.run import _episode_head
    from gui_harness.demo.policy import demo_policy
    from gui_harness.desktop.fake import FakeDesktop
    from openprogram import Runtime, ScriptedModel, Session

    store = str(tmp_path / "runs.db")
    with Session(store, id="e"), Runtime(ScriptedModel(demo_policy)):
        result = gui_agent(TASK, desktop=FakeDesktop.demo_form(), max_steps=3, settle_timeout=0.2)
    reopened = Session.open(store, "e")
    try:
        head = _episode_head(reopened.dag)
    finally:
        reopened.close()
    assert head is not None
    assert "<h1>gui_agent did not succeed</h1>" in head and "The final screen" in head
    assert head.count("<tr><td>") == len(result.steps) == 3
