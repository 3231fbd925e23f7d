"""Benchmarks for gui_agent: MiniWoB++ pages in a real Chromium and their oracle planner;
the desktop suite (real apps, task files, evaluators) and its oracle."""

from gui_harness.bench.desktop import DesktopEpisode, run_desktop_task
from gui_harness.bench.desktop_oracle import DesktopOracle
from gui_harness.bench.desktop_spec import DesktopTask, load_desktop_task, load_desktop_tasks
from gui_harness.bench.miniwob import MiniWobPage, check_task, miniwob_tasks
from gui_harness.bench.oracle import ORACLE_TASKS, Oracle, pick_component

__all__ = [
    "ORACLE_TASKS",
    "DesktopEpisode",
    "DesktopOracle",
    "DesktopTask",
    "MiniWobPage",
    "Oracle",
    "check_task",
    "load_desktop_task",
    "load_desktop_tasks",
    "miniwob_tasks",
    "pick_component",
    "run_desktop_task",
]
