"""Benchmarks for gui_agent: MiniWoB++ pages in a real Chromium, and the oracle planner."""

from gui_harness.bench.miniwob import MiniWobPage, check_task, miniwob_tasks
from gui_harness.bench.oracle import ORACLE_TASKS, Oracle, pick_component

__all__ = ["ORACLE_TASKS", "MiniWobPage", "Oracle", "check_task", "miniwob_tasks", "pick_component"]
