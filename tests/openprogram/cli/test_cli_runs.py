"""`openprogram worker`, `runs list | cancel | requeue` and `sessions watch`, through
click's runner (the worker in this process, until its queues are idle)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram.cli import cli
from openprogram.runs import Run, submit
from tests.support.children import finish, start

JOB = "tests.openprogram.runs.jobs:job"


def run(*arguments: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, list(arguments), prog_name="openprogram")
    assert result.exit_code == code, result.output
    return result.output


def test_a_worker_runs_the_queue_and_watch_shows_the_run(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    submit(JOB, "w", 2, id="w", store=store).close()
    submit(JOB, "later", 1, id="later", store=store, queue="other").close()
    run("worker", store, "--until-idle", "--import", "tests.openprogram.runs.jobs")
    listed = run("runs", "list", "--store", store)
    assert "w  completed default" in listed and "later  queued" in listed
    watched = run("sessions", "watch", "w", "--store", store)
    lines = watched.splitlines()  # as `sessions show` numbers them, in the order they ended
    assert len(lines) == 4 and "   2 completed code step #1  0" in lines[0]
    assert (
        "   3 completed code step #2  1" in lines[1] and "   1 completed code job #1  1" in lines[2]
    )
    assert lines[3] == "run w completed"  # why the watch ended
    assert run("sessions", "watch", "w", "--since", "2", "--store", store).splitlines() == [
        lines[1],  # the second step, still numbered as in the whole session
        lines[3],
    ]
    assert "cancelled" in run("runs", "cancel", "later", "--store", store)
    assert "not waiting" in run("runs", "requeue", "w", "--store", store, code=1)
    with Run(store, "later") as later:
        assert later.status() == "cancelled"


def test_runs_are_submitted_from_the_command_line_and_the_worker_reads_the_store_from_env(
    tmp_path: Path,
) -> None:
    store = str(tmp_path / "runs.db")
    assert run("runs", "submit", JOB, "cli", "3", "--id", "c", "--store", store) == "c  queued\n"
    assert run("runs", "submit", JOB, "cli", "3", "--id", "c", "--store", store) == "c  queued\n"
    other = run("runs", "submit", JOB, "text", "--id", "c", "--store", store, code=1)
    assert "exists already with another call" in other
    made = run("runs", "submit", JOB, '"9"', "--store", store, "--priority", "5").split()
    assert made[1] == "queued" and len(made[0]) == 12  # a new id, said
    result = CliRunner().invoke(
        cli, ["worker", "--until-idle", "--import", "tests.openprogram.runs.jobs"],
        env={"OPENPROGRAM_STORE": store},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    with Run(store, "c") as c, Run(store, made[0]) as nine:
        assert c.result() == 0 + 1 + 4  # job("cli", 3)
        assert nine.result() == sum(i * i for i in range(20))  # job("9"): 20 steps
    assert "package.module:function" in run("runs", "submit", "nocolon", "--store", store, code=1)
    # hostile input: an id of a megabyte is echoed cut short; JSON nested past what Python
    # reads is refused by its position, not with a traceback
    huge = run("runs", "submit", JOB, "--id", "x\n" * 500_000, "--store", store, code=1)
    assert "printable text" in huge and len(huge) < 2_000
    deep = run("runs", "submit", JOB, "[" * 100_000, "--store", store, code=2)
    assert "ARG 1 is JSON nested too deep" in deep and len(deep) < 2_000
    assert "stopped: 0 runs" in run("worker", "--store", store, "--until-idle")
    assert "give the store once" in run("worker", store, "--store", store, code=2)


def test_a_run_that_cannot_run_says_why_in_the_log_the_list_and_the_watch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    store = str(tmp_path / "runs.db")
    run("runs", "submit", "tests.openprogram.runs.nowhere:job", "--id", "lost", "--store", store)
    run("runs", "submit", JOB, "x", "1", "2", "--id", "extra", "--store", store)
    caplog.set_level(logging.INFO, "openprogram.runs")
    said = run("worker", store, "--until-idle")
    assert "stopped: 2 runs" in said  # both ended, the one that could not load too
    assert "run lost failed: cannot load 'tests.openprogram.runs.nowhere:job'" in caplog.text
    assert "run extra failed: TypeError: " in caplog.text
    listed = run("runs", "list", "--store", store).splitlines()
    assert listed[0].startswith("lost  failed") and "No module named" in listed[1]
    assert listed[2].startswith("extra  failed") and "TypeError" in listed[3]
    watched = run("sessions", "watch", "lost", "--store", store)
    assert watched.startswith("run lost failed: UsageError: cannot load")


def test_a_worker_of_a_store_that_cannot_hold_runs_says_why() -> None:
    assert "durable store" in run("worker", "memory", code=1)


def test_watch_says_a_queued_run_waits_for_a_worker_then_follows_it(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    submit(JOB, "q", 2, id="q", store=store).close()
    watch = start(["-m", "openprogram", "sessions", "watch", "q", "--store", store])
    try:
        assert watch.stdout is not None
        first = watch.stdout.readline()  # said before any worker runs
        assert (
            first
            == f"run q is queued: it starts when a worker takes it (openprogram worker {store})\n"
        )
        run("worker", store, "--until-idle", "--import", "tests.openprogram.runs.jobs")
        rest = finish(watch).splitlines()
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.communicate(timeout=60)
    assert "step #2" in "".join(rest) and rest[-1] == "run q completed"
