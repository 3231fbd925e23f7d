"""Runs that outlive their processes: a durable run queue and the workers that take it.

`submit("package.module:function", *args, id=..., store=URL)` records a run as a session
waiting to start; `openprogram worker STORE` processes (Worker) run queued runs inside
`Session.open(store, id, resume=True)`, each under its session's writer lease, and take
over the runs of a worker that died; RayWorkers runs such workers as Ray actors on a
cluster's nodes. docs/production.md; DESIGN.md §6 "Runs and workers".
"""

from openprogram.runs.handle import Run, limit, submit
from openprogram.runs.queue import RunInfo, RunQueue
from openprogram.runs.ray import RayWorkers
from openprogram.runs.worker import Worker, resolve

__all__ = ["RayWorkers", "Run", "RunInfo", "RunQueue", "Worker", "limit", "resolve", "submit"]
