"""run_batch: many gui_agent episodes on a local process pool or on Ray, with one store.

Owns the batch's life: check the tasks, the store and the engine before any episode,
skip what the store shows finished, start attempts up to `workers` at once, retry a
dead worker's episode a bounded number of times, then report (summary.py).
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

from gui_harness.batch.engines import EngineName, make_engine
from gui_harness.batch.episode import ORACLE, Attempt, attempts, session_id
from gui_harness.batch.summary import BatchResult, write_index, write_summary
from gui_harness.batch.tasks import BatchTask, load_tasks, parse_task
from gui_harness.errors import InvalidTask
from gui_harness.result import GuiResult
from openprogram import Session
from openprogram.cli import provider_kwargs
from openprogram.core.values import NotRebuildable, rebuilt
from openprogram.echo import cut, echo, mask_url
from openprogram.errors import ConfigError, StoreError, UsageError
from openprogram.store.open import open_store

__all__ = ["run_batch"]


def _tasks(source: Any) -> tuple[list[BatchTask], list[str]]:
    if isinstance(source, (str, os.PathLike)):
        loaded, bad_lines = load_tasks(source)
        return loaded, [str(p.error) for p in bad_lines]
    tasks: list[BatchTask] = []
    problems: list[str] = []
    for number, item in enumerate(source, start=1):
        try:
            tasks.append(
                item if isinstance(item, BatchTask) else parse_task(item, where=f"task {number}")
            )
        except InvalidTask as exc:
            problems.append(str(exc))
    ids = [t.id for t in tasks]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise InvalidTask(f"task ids must be unique in a batch; repeated: {echo(repeated)}")
    return tasks, problems


def _on_this_machine(address: str | None) -> bool:
    if address in (None, "local"):
        return True
    host = urlsplit(address if "://" in address else f"ray://{address}").hostname or ""
    return host in ("localhost", "::1") or host.startswith("127.")


def _open_store(spec: str) -> Any:
    if not isinstance(spec, (str, os.PathLike)) or str(spec) == "memory":
        raise UsageError(
            f"store={echo(spec)}: a batch records into a store its workers can open; pass a "
            "file path, 'sqlite:///file.db' or 'postgresql://...'"
        )
    store: Any = None
    try:
        store, _ = open_store(os.fspath(spec))
        store.list_sessions()
    except StoreError as exc:
        if store is not None:
            store.close()
        raise ConfigError(
            f"cannot use the store {echo(spec)} ({cut(mask_url(str(exc)))}); check that it is "
            "reachable from here "
            "and from every worker. No episode was started"
        ) from exc
    return store


def run_batch(
    tasks: Iterable[BatchTask | dict[str, Any]] | str | os.PathLike[str],
    *,
    workers: int = 1,
    engine: EngineName = "local",
    store: str | os.PathLike[str] | None = None,
    model: str | None = None,
    address: str | None = None,
    name: str = "batch",
    out: str | os.PathLike[str] | None = None,
    max_attempts: int = 2,
    runtime_env: dict[str, Any] | None = None,
    progress: TextIO | None = None,
    api_base: str | None = None,
    api_key_env: str | None = None,
) -> BatchResult:
    """Run each task as one gui_agent episode on its own desktop; returns a BatchResult.

    tasks: BatchTask objects, task dicts, or the path of a JSON-lines tasks file (bad
        lines are reported in `.problems` and the rest run). workers: episodes at once.
    engine: "local" (a process per episode) or "ray" (Ray tasks; `address` joins a
        cluster, None starts a private local Ray). store: where sessions and results go
        (default: <out>/batch.db); PostgreSQL for a cluster. model: for tasks without
        their own ("oracle" for MiniWoB++ offline, "demo" for the demo form, or a
        litellm name). name: the batch's name in session ids; a rerun with the same
        name and store skips finished episodes. out: where summary.json, index.html and
        episodes/*.html go (default ./batch-<name>). max_attempts: tries per episode
        when its worker dies or it raises. progress: a terminal stream for a progress
        bar (default: stderr when it is a terminal).
    api_base: the model provider's URL (e.g. a local OpenAI-compatible server).
        api_key_env: the environment variable holding its API key. Only the variable's
        name travels to the workers; each reads the key from its own environment (the
        local engine's and a private local Ray's inherit this process's; a cluster's
        nodes need it set, docs/scale.md). The key is never written to the store, the
        reports or the process list.
    Raises UsageError/ConfigError before any episode starts for bad settings (a key
    variable that is not set), an unusable store or an unreachable Ray cluster.
    """
    if workers < 1:
        raise UsageError(f"workers={workers!r} must be at least 1")
    if max_attempts < 1:
        raise UsageError(f"max_attempts={max_attempts!r} must be at least 1")
    started = time.monotonic()
    provider_kwargs(api_base, api_key_env)  # UsageError unless the key's variable is set
    provider = {k: v for k, v in (("api_base", api_base), ("api_key_env", api_key_env)) if v}
    todo, problems = _tasks(tasks)
    missing = [t.id for t in todo if not (t.model or model)]
    if missing:
        raise UsageError(
            f"tasks {echo(missing[:5])} have no model: pass model='provider/name' (or 'oracle' "
            'for MiniWoB++ offline) or give each task a "model"'
        )
    unplannable = [
        t.id for t in todo if (t.model or model) == ORACLE and t.miniwob is None and not t.desktop
    ]
    if unplannable:
        raise UsageError(
            f"tasks {echo(unplannable[:5])} are neither MiniWoB++ nor desktop tasks, so model "
            "'oracle' cannot plan them (it reads the goal from the page or the task file); "
            "give them a real model"
        )
    directory = Path(out if out is not None else f"batch-{name}")
    directory.mkdir(parents=True, exist_ok=True)
    spec = os.fspath(store) if store is not None else str(directory / "batch.db")
    if engine == "ray" and not _on_this_machine(address) and not spec.startswith("postgres"):
        raise ConfigError(
            f"store={echo(spec)}: workers on other machines cannot share a SQLite file; pass "
            "--store postgresql://user@host/db that every node can reach"
        )
    opened = _open_store(spec)
    try:
        chosen = make_engine(
            engine, store=spec, address=address, workers=workers, runtime_env=runtime_env
        )
        try:
            return _drive(
                todo,
                problems,
                opened,
                chosen,
                spec,
                name,
                model,
                provider,
                workers,
                max_attempts,
                directory,
                progress,
                started,
            )
        finally:
            chosen.close()
    finally:
        opened.close()


def _drive(
    todo: list[BatchTask], problems: list[str], store: Any, engine: Any, spec: str,
    name: str, model: str | None, provider: dict[str, str], workers: int, max_attempts: int,
    directory: Path,
    progress: TextIO | None, started: float,
) -> BatchResult:  # fmt: skip
    sessions = {info.id for info in store.list_sessions()}
    results: dict[str, dict[str, Any]] = {}
    pending: deque[tuple[BatchTask, int]] = deque()
    crashes: dict[str, list[str]] = {}  # this run's attempts that left no record
    for task in todo:
        recorded = attempts(store, name, task.id, sessions)
        outcome = _outcome(task, recorded, max_attempts, [])
        if outcome is not None:
            results[task.id] = outcome
        else:
            pending.append((task, _next(recorded, 0)))
    skipped = len(results)
    if pending:  # a rerun with nothing left to run starts no Ray, no worker
        engine.open()
    bar = _Progress(progress, len(todo), skipped)
    running: dict[Hashable, tuple[BatchTask, int]] = {}
    ran = retries = 0
    while pending or running:
        while pending and len(running) < workers:
            task, attempt = pending.popleft()
            sid = session_id(name, task.id, attempt)
            handle = engine.start(task, sid, task.model or model, provider)
            running[handle] = (task, attempt)
            ran += 1
        for handle, crash in engine.wait(list(running)):
            task, attempt = running.pop(handle)
            sid = session_id(name, task.id, attempt)
            if store.session(sid) is not None:
                sessions.add(sid)
            else:
                crash = crash or "the worker ended without recording its episode"
                crashes.setdefault(task.id, []).append(crash)
            recorded = attempts(store, name, task.id, sessions)
            outcome = _outcome(task, recorded, max_attempts, crashes.get(task.id, []), crash)
            if outcome is None:
                retries += 1
                pending.append((task, _next(recorded, attempt)))
                continue
            results[task.id] = outcome
            bar.update(outcome)
    bar.close()
    episodes = [results[t.id] for t in todo]
    _write_reports(spec, episodes, directory)
    result = BatchResult(
        episodes,
        problems,
        ran=ran,
        skipped=skipped,
        retries=retries,
        seconds=time.monotonic() - started,
        name=name,
        store=spec,
        model=model,
    )
    result.summary_path = write_summary(result, directory)
    result.report_path = write_index(result, directory, f"batch {name}")
    return result


def _next(recorded: list[Attempt], tried: int) -> int:
    return max([tried, *(a.number for a in recorded)]) + 1


def _outcome(
    task: BatchTask,
    recorded: list[Attempt],
    max_attempts: int,
    unrecorded: list[str],
    crash: str | None = None,
) -> dict[str, Any] | None:
    """The task's final result, or None while it should be tried again. `unrecorded`:
    crashes of this run that died before their session was created."""
    for attempt in recorded:
        if attempt.result is not None:
            status = "success" if attempt.result.get("success") else "failure"
            return {
                **attempt.result,
                "status": status,
                "session": attempt.session,
                "attempts": len(recorded),
                "worker": attempt.worker,
            }
    tries = len(recorded) + len(unrecorded)
    if tries < max_attempts:
        return None
    last = recorded[-1] if recorded else None
    why = crash or (last.error if last else None) or "the worker died before the episode ended"
    return {
        "id": task.id, "name": task.name, "model": task.model, "success": False,
        "status": "failed", "reward": None, "steps": 0, "tokens": 0, "cost_usd": 0.0,
        "seconds": 0.0, "detail": f"{tries} attempts failed; last: {why}",
        "session": last.session if last else None, "attempts": tries,
        "worker": last.worker if last else None,
    }  # fmt: skip


def _write_reports(spec: str, episodes: list[dict[str, Any]], directory: Path) -> None:
    from openprogram.display.report import write_report

    folder = directory / "episodes"
    folder.mkdir(exist_ok=True)
    for episode in episodes:
        if not episode.get("session"):
            continue
        path = folder / f"{episode['session']}.html"
        if not path.exists():
            session = Session.open(spec, episode["session"])
            try:
                facts = {k: episode.get(k) for k in ("status", "reward", "steps", "detail")}
                write_report(
                    session,
                    path,
                    title=f"{episode['id']}: {episode['name']}"[:120],
                    facts=facts,
                    extra_html=_episode_head(session.dag),
                )
            finally:
                session.close()
        episode["report"] = f"episodes/{path.name}"


def _episode_head(dag: Any) -> str | None:
    """What an episode's report opens with, as a single run's does: the outcome, the
    final screen and the step table, from the episode's (last) gui_agent call."""
    runs = [n for n in dag.find(name="gui_agent", kind="code") if isinstance(n.output, dict)]
    if not runs:
        return None
    try:
        result = GuiResult.model_validate(rebuilt(runs[-1].output, fields=True))
    except (ValueError, TypeError, NotRebuildable):
        return None
    return result.report_html(dag, runs[-1].id)


class _Progress:
    """The batch's bar (openprogram.cli.Progress, click's): episodes done of all, and how
    many succeeded this run; drawn only on a terminal."""

    def __init__(self, stream: TextIO | None, total: int, done: int) -> None:
        from openprogram.cli import Progress

        self.good = 0
        self.bar = Progress(total, done=done, stream=stream, note=self._note)

    def _note(self, done: int, total: int) -> str:
        return f"{done}/{total} episodes, {self.good} succeeded this run"

    def update(self, episode: dict[str, Any]) -> None:
        self.good += bool(episode.get("success"))
        self.bar.advance()

    def close(self) -> None:
        self.bar.close()
