"""Batch runs of gui_agent episodes on a process pool or Ray (DESIGN.md §8)."""

from gui_harness.batch.episode import ORACLE, batch_episode, session_id
from gui_harness.batch.run import run_batch
from gui_harness.batch.summary import BatchResult, summarise, summary_table
from gui_harness.batch.tasks import BatchTask, TaskProblem, load_tasks, parse_task

__all__ = [
    "ORACLE",
    "BatchResult",
    "BatchTask",
    "TaskProblem",
    "batch_episode",
    "load_tasks",
    "parse_task",
    "run_batch",
    "session_id",
    "summarise",
    "summary_table",
]
