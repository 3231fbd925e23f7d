"""What a batch runs: BatchTask, one episode's spec, and reading a tasks.jsonl file.

Owns the task format of DESIGN.md §8 ("Batch and scale") and its checks; a bad line is
reported with its number and never stops the good ones. Running belongs to episode.py.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from gui_harness.errors import InvalidTask
from openprogram.echo import cut, echo

__all__ = ["BatchTask", "TaskProblem", "load_tasks", "parse_task"]

_MINIWOB = "miniwob/"
_DESKTOP = "desktop/"
MAX_LINE = 1024 * 1024
"""Bytes of one line of a tasks file: a longer line is refused unread (memory stays small)."""


class BatchTask(BaseModel):
    """One gui_agent episode: a `task` on a fresh desktop running `app`, or a
    `benchmark` task: "miniwob/<name>" with a `seed`, or "desktop/<id>" (a task of the
    shipped desktop suite, or the desktop task file `task_file`). `model` defaults to
    the batch's."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$", max_length=120)
    task: str | None = None
    app: list[str] | None = None
    benchmark: str | None = None
    seed: int = 0
    max_steps: int = Field(default=15, ge=1, le=500)
    model: str | None = None
    context_tokens: int | None = Field(default=None, ge=1)  # gui_agent's plan prompt budget
    task_file: str | None = Field(default=None, max_length=4000)
    _desktop_app: str | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _one_kind(self) -> BatchTask:
        if (self.task is None) == (self.benchmark is None):
            raise ValueError('give either "task" (with optional "app") or "benchmark"')
        if self.benchmark is not None:
            if self.app is not None:
                raise ValueError('"app" goes with "task"; a benchmark opens its own page')
            if self.benchmark.startswith(_DESKTOP):
                self._desktop_app = self.desktop_task().app
                return self
            if not self.benchmark.startswith(_MINIWOB):
                raise ValueError(
                    f"benchmark {echo(self.benchmark)} is not known; write 'miniwob/<task>' "
                    "(e.g. 'miniwob/click-button') or 'desktop/<task id>'"
                )
            from gui_harness.bench.miniwob import check_task

            check_task(self.benchmark[len(_MINIWOB) :])
        if self.task_file is not None:
            raise ValueError('"task_file" goes with a "desktop/<id>" benchmark')
        return self

    def desktop_task(self) -> Any:
        """The DesktopTask of a "desktop/<id>" benchmark (read from `task_file`, or the
        shipped suite); InvalidTask when it cannot be read or its id differs."""
        from gui_harness.bench.desktop_spec import load_desktop_task, suite_dir

        assert self.benchmark is not None and self.benchmark.startswith(_DESKTOP)
        name = self.benchmark[len(_DESKTOP) :]
        path = self.task_file or str(suite_dir() / f"{name}.json")
        if self.task_file is None and not os.path.isfile(path):
            raise InvalidTask(f"no desktop task {echo(name)} in the shipped suite")
        task = load_desktop_task(path)
        if task.id != name:
            raise InvalidTask(f"{echo(path)} holds task {task.id!r}, not {echo(name)}")
        return task

    @property
    def desktop(self) -> bool:
        """Whether this is a desktop task ("desktop/<id>")."""
        return bool(self.benchmark and self.benchmark.startswith(_DESKTOP))

    @property
    def miniwob(self) -> str | None:
        """The MiniWoB++ task name for a benchmark task, else None."""
        if self.benchmark and self.benchmark.startswith(_MINIWOB):
            return self.benchmark[len(_MINIWOB) :]
        return None

    @property
    def name(self) -> str:
        """What the summary groups by: the benchmark task, a desktop task's app, or the
        task text."""
        return self._desktop_app or self.miniwob or str(self.task)


@dataclass(frozen=True)
class TaskProblem:
    """A line of a tasks file that could not be used, and why."""

    line: int
    error: InvalidTask


def parse_task(data: Any, *, where: str = "task") -> BatchTask:
    """Check one task object; raises InvalidTask saying what is wrong and where."""
    if not isinstance(data, dict):
        raise InvalidTask(f'{where}: {echo(data)} is not a JSON object like {{"id": "t1", ...}}')
    try:
        return BatchTask.model_validate(data)
    except ValidationError as exc:
        raise InvalidTask(f"{where}: {InvalidTask.problems(exc)} (in {echo(data)})") from None
    except ValueError as exc:  # check_task's UsageError from inside the validator
        raise InvalidTask(f"{where}: {cut(str(exc))}") from None


def load_tasks(path: str | os.PathLike[str]) -> tuple[list[BatchTask], list[TaskProblem]]:
    """Read a JSON-lines tasks file: the good tasks, and one problem per bad line.

    Blank lines and lines starting with '#' are skipped. A repeated id, a line that is
    not UTF-8 or longer than MAX_LINE bytes is a problem of that line. Raises InvalidTask
    only when the file cannot be read at all.
    """
    try:
        with open(path, "rb") as file:
            return _read(file, os.fspath(path))
    except OSError as exc:
        raise InvalidTask(f"cannot read tasks file {echo(os.fspath(path))}: {exc}") from exc


def _read(file: BinaryIO, name: str) -> tuple[list[BatchTask], list[TaskProblem]]:
    tasks: list[BatchTask] = []
    problems: list[TaskProblem] = []
    seen: dict[str, int] = {}
    for number, (raw, size) in enumerate(_lines(file), start=1):
        where = f"{name}:{number}"
        if raw is None:
            error = InvalidTask(
                f"{where}: the line is {size:,} bytes; a task line may have at most "
                f"{MAX_LINE:,}".replace(",", " ")
            )
            problems.append(TaskProblem(number, error))
            continue
        try:
            stripped = raw.decode("utf-8").strip()
        except UnicodeDecodeError as exc:
            problems.append(TaskProblem(number, InvalidTask(f"{where}: not UTF-8 text ({exc})")))
            continue
        if not stripped or stripped.startswith("#"):
            continue
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            error = InvalidTask(
                f"{where}: not valid JSON ({exc.msg} at column {exc.colno}): {echo(stripped, 80)}"
            )
            problems.append(TaskProblem(number, error))
            continue
        try:
            task = parse_task(data, where=where)
        except InvalidTask as exc:
            problems.append(TaskProblem(number, exc))
            continue
        if task.id in seen:
            error = InvalidTask(f"{where}: id {task.id!r} is used already on line {seen[task.id]}")
            problems.append(TaskProblem(number, error))
            continue
        seen[task.id] = number
        tasks.append(task)
    return tasks, problems


def _lines(file: BinaryIO) -> Iterator[tuple[bytes | None, int]]:
    """Each line of `file` and its length in bytes (without the line end); None for a
    line over MAX_LINE bytes, which is skipped a block at a time, never held whole."""
    while line := file.readline(MAX_LINE + 1):
        if len(line) <= MAX_LINE or line.endswith(b"\n"):
            yield line.rstrip(b"\n"), len(line.rstrip(b"\n"))
            continue
        size = len(line)
        while not line.endswith(b"\n") and (line := file.readline(MAX_LINE)):
            size += len(line)
        yield None, size - line.endswith(b"\n")
