"""The managers: LocalOperations, ProcessOperations (a real child over a real unix
socket) and RayOperations (a local Ray cluster), through the same protocol."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from openprogram import UsageError
from openprogram.operations import (
    LocalOperations,
    Operation,
    OperationManager,
    ProcessOperations,
    builtins,  # noqa: F401 - registers bash
)
from openprogram.operations.operation import kind_of
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


class Reports:
    """A report callback that remembers what it was told and when an operation ended."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, Any]] = []
        self.ended: dict[str, threading.Event] = {}
        self.started = threading.Event()
        self.lock = threading.Lock()

    def __call__(self, id: str, what: str, value: Any) -> bool:
        with self.lock:
            self.seen.append((id, what, value))
            self.ended.setdefault(id, threading.Event())
        if what == "running":
            self.started.set()
        if what in ("done", "failed", "cancelled", "lost"):
            self.ended[id].set()
        return True

    def wait(self, id: str) -> tuple[str, Any]:
        with self.lock:
            event = self.ended.setdefault(id, threading.Event())
        assert event.wait(60)
        return next((w, v) for i, w, v in reversed(self.seen) if i == id and w != "heartbeat")

    def of(self, id: str) -> list[str]:
        return [w for i, w, _ in self.seen if i == id]


def _run(manager: Any, kind: str, args: dict[str, Any] | None = None) -> tuple[str, Any, Reports]:
    reports = Reports()
    operation = Operation(kind, args or {})
    manager.submit(operation, kind_of(kind, 1), reports)
    what, value = reports.wait(operation.id)
    return what, value, reports


@pytest.fixture
def process_manager():
    manager = ProcessOperations(sandbox="rlimits")
    yield manager
    manager.close()


def test_the_managers_are_operation_managers(process_manager):
    assert isinstance(LocalOperations(), OperationManager)
    assert isinstance(process_manager, OperationManager)


def test_local_operations_run_in_this_process():
    manager = LocalOperations()
    assert _run(manager, "test.pid")[:2] == ("done", os.getpid())
    assert _run(manager, "test.fail", {"why": "no"})[:2] == ("failed", "RuntimeError: no")
    manager.close()
    with pytest.raises(UsageError, match="max_workers=0"):
        LocalOperations(max_workers=0)


@pytest.mark.slow
def test_process_operations_run_in_a_child_over_a_socket(process_manager):
    what, pid, reports = _run(process_manager, "test.pid")
    assert what == "done" and pid == process_manager.pid != os.getpid()
    assert reports.of(reports.seen[0][0]) == ["running", "done"]
    assert _run(process_manager, "test.add", {"a": 2, "b": 40})[:2] == ("done", 42)
    failed = _run(process_manager, "test.fail", {"why": "broken"})[:2]
    assert failed == ("failed", "RuntimeError: broken")
    assert process_manager.sandbox == "rlimits"


@pytest.mark.slow
def test_a_long_operation_heartbeats_and_is_cancelled_in_the_child(process_manager):
    reports = Reports()
    operation = Operation("test.block", {})
    process_manager.submit(operation, kind_of("test.block", 1), reports)
    assert reports.started.wait(30)
    while "heartbeat" not in reports.of(operation.id):
        threading.Event().wait(0.01)
    assert process_manager.cancel(operation.id)
    assert reports.wait(operation.id) == ("cancelled", None)


@pytest.mark.slow
def test_a_sandbox_that_dies_loses_its_operations_and_the_next_starts_a_new_one(
    process_manager,
):
    reports = Reports()
    operation = Operation("test.block", {})
    process_manager.submit(operation, kind_of("test.block", 1), reports)
    while "heartbeat" not in reports.of(operation.id):
        threading.Event().wait(0.01)
    first = process_manager.pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    what, value = reports.wait(operation.id)
    assert what == "lost" and "sandbox process ended" in value
    what, pid, _ = _run(process_manager, "test.pid")
    assert what == "done" and pid != first


def test_an_unknown_sandbox_is_a_usage_error():
    with pytest.raises(UsageError, match="sandbox='docker'"):
        ProcessOperations(sandbox="docker")  # type: ignore[arg-type]


@pytest.mark.skipif(
    not (os.path.exists("/usr/bin/bwrap") or os.path.exists("/bin/bwrap")),
    reason="bubblewrap is not installed",
)
@pytest.mark.slow
def test_a_bwrap_sandbox_writes_only_its_workdir(tmp_path):
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = Path(__file__).parent / f".probe-{os.getpid()}"  # on the real, read-only root
    manager = ProcessOperations(sandbox="bwrap", workdir=workdir)
    command = f"touch {workdir}/inside && echo $$; touch {outside} 2>&1; true"
    try:
        what, result, _ = _run(manager, "bash", {"command": command})
        sandbox_pid = manager.pid
    finally:
        manager.close()
    assert what == "done" and manager.sandbox == "bwrap"
    pid, refused = result["output"].splitlines()
    assert (workdir / "inside").exists() and not outside.exists()
    assert "Read-only file system" in refused
    assert sandbox_pid is not None and int(pid) < sandbox_pid  # numbered in its own namespace
