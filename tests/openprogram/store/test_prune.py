"""Store.prune and `openprogram sessions prune` on SQLite and PostgreSQL: finished
sessions and the images only they used go, and the store shrinks; a session with a call
waiting for a person or unknown, one with an operation not ended, one a writer holds,
one a fork or a noted reader reads and a queued run stay (a failed one too, with
keep_failed)."""

from __future__ import annotations

import random
import string
import threading
from typing import Any

import pytest
from click.testing import CliRunner
from PIL import Image as PILImage

from openprogram import (
    Image,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    ask_user,
    llm,
    operation_kind,
    operation_tools,
)
from openprogram.cli import cli
from openprogram.errors import UsageError
from openprogram.operations import Operation, operation_tool
from openprogram.runs import RunQueue, submit
from openprogram.store import open_store


@agentic_function
def note(i: int, text: str) -> str:
    return text


@agentic_function
def picture(colour: str) -> Image:
    return Image(PILImage.new("RGB", (64, 48), colour))


@agentic_function
def broken() -> None:
    raise ValueError("broken")


@agentic_function
def asking() -> str:
    return str(ask_user("go on?", choices=["yes", "no"]))


@agentic_function(effect="once")
def paying() -> None:
    raise KeyboardInterrupt  # cut mid-body: its effect is unknown


_GO = {"May": threading.Event(), "June": threading.Event()}


@operation_kind("tests.prune.build", effect="idempotent")
def _build(args: dict[str, Any], context: Any) -> str:
    while not _GO[args["month"]].wait(0.01):
        context.heartbeat()
        context.check()
    return "built"


@operation_tool(background=True)
def start_build(month: str) -> Operation:
    """Start building the month's report; returns a handle."""
    return Operation("tests.prune.build", {"month": month})


def build(store: str) -> None:
    letters = random.Random(0)  # text no store compresses: 600 kB whatever it does
    with Session(store, id="done") as session:
        for i in range(300):
            note(i, "".join(letters.choices(string.ascii_letters, k=2000)))
        picture("red")
    with Session(store, id="shared-image") as session:
        picture("blue")
    with Session(store, id="also-blue") as session:
        picture("blue")
    with Session(store, id="failed"), pytest.raises(ValueError):
        broken()
    with Session(store, id="waiting") as session, pytest.raises(Exception, match="answer"):
        asking()
    with Session(store, id="unknown"), pytest.raises(KeyboardInterrupt):
        paying()
    with Session(store, id="parent") as session:
        note(0, "parent")
        forked_at = session.dag.nodes[0].id
    with Session.open(store, "parent").fork(at=forked_at, id="child"):
        note(1, "child")
    submit("tests.openprogram.runs.jobs:job", "q", 1, id="queued", store=store).close()


def opened(store: str) -> Any:
    resolved, _ = open_store(store)
    return resolved


def ids(store: str) -> set[str]:
    found = opened(store)
    try:
        return {info.id for info in found.list_sessions()}
    finally:
        found.close()


def test_prune_removes_finished_sessions_and_their_images_and_shrinks(durable_store: str) -> None:
    build(durable_store)
    held = Session(durable_store, id="held")
    held.__enter__()  # a live writer holds it
    store = opened(durable_store)
    try:
        blobs_before = _count(store, "openprogram_blobs")
        dry = store.prune(older_than=0, dry_run=True)
        assert set(dry.removed) == {"done", "shared-image", "also-blue", "failed", "child"}
        assert ids(durable_store) >= set(dry.removed)  # nothing went
        assert store.prune(older_than=3600, dry_run=True).removed == []  # all newer than that
        report = store.prune(older_than=0, keep_failed=True)
        assert set(report.removed) == {"done", "shared-image", "also-blue", "child"}
        assert report.kept == {
            "failed": "it failed (--keep-failed)",
            "waiting": "it has calls running, waiting for a person or unknown",
            "unknown": "it has calls running, waiting for a person or unknown",
            "parent": "a fork reads its history",
            "queued": "its run is queued",
            "held": "a writer holds its lease",
        }
        assert report.nodes >= 300 and report.blobs == 2  # the red and the blue image
        assert _count(store, "openprogram_blobs") == blobs_before - 2
        assert report.bytes_after < 0.7 * report.bytes_before, report  # 600 kB of notes
        assert ids(durable_store) == {"failed", "waiting", "unknown", "parent", "queued", "held"}
        assert len(Session.open(durable_store, "parent").dag) == 1  # untouched
        with RunQueue(durable_store) as runs:
            assert [r.id for r in runs.list_runs()] == ["queued"]
        assert store.prune(older_than=0).removed == ["failed", "parent"]  # its fork went
    finally:
        store.close()
        held.__exit__(None, None, None)


def test_the_command_prunes_and_says_what_it_kept(durable_store: str) -> None:
    build(durable_store)
    runner = CliRunner()
    dry = runner.invoke(cli, ["sessions", "prune", "--older-than", "0s", "--dry-run",
                              "--store", durable_store])  # fmt: skip
    assert dry.exit_code == 0, dry.output
    assert "would remove 5 sessions" in dry.output and "kept 1: its run is queued" in dry.output
    done = runner.invoke(
        cli, ["sessions", "prune", "--older-than", "30d", "--store", durable_store]
    )
    assert done.exit_code == 0 and "removed 0 sessions" in done.output
    bad = runner.invoke(
        cli, ["sessions", "prune", "--older-than", "soon", "--store", durable_store]
    )
    assert bad.exit_code == 2 and "30d" in bad.output


def test_prune_keeps_the_sessions_a_dataset_was_made_from_until_it_lets_them_go(
    durable_store: str,
) -> None:
    from openprogram.evals import Dataset

    with Session(durable_store, id="tea"):
        note(0, "tea")
    with Session(durable_store, id="coffee"):
        note(1, "coffee")
    with Session(durable_store, id="other"):
        picture("red")
    dataset = Dataset.from_sessions(durable_store, "note", name="drinks")
    assert {c.metadata["session"] for c in dataset.cases} == {"tea", "coffee"}
    store = opened(durable_store)
    try:
        assert store.readers() == {"coffee": ["dataset:drinks"], "tea": ["dataset:drinks"]}
        report = store.prune(older_than=0)
        assert report.removed == ["other"]
        assert report.kept == {
            "tea": "dataset:drinks reads it",
            "coffee": "dataset:drinks reads it",
        }
        store.read_by(["tea"], "report:weekly")  # a second reader of one of them
        assert store.unread("dataset:drinks") == 2
        assert store.prune(older_than=0).removed == ["coffee"]
        assert store.readers("tea") == {"tea": ["report:weekly"]}
        assert store.unread("report:weekly", ["tea"]) == 1
        assert store.prune(older_than=0).removed == ["tea"]
        with pytest.raises(UsageError, match="reader="):
            store.read_by(["tea"], " ")
    finally:
        store.close()


def test_the_commands_say_which_reader_keeps_a_session_and_let_it_go(durable_store: str) -> None:
    from openprogram.evals import Dataset

    with Session(durable_store, id="tea"):
        note(0, "tea")
    with Session(durable_store, id="coffee"):
        note(1, "coffee")
    with Session(durable_store, id="new"):
        note(2, "new")
    drinks = Dataset.from_sessions(durable_store, "note", name="drinks", sessions=["tea", "coffee"])
    store = opened(durable_store)
    try:
        store.read_by(["tea"], "report:weekly")
    finally:
        store.close()
    runner = CliRunner()

    def run(*arguments: str) -> Any:
        return runner.invoke(cli, ["sessions", *arguments, "--store", durable_store])

    listed = run("readers")
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines() == [
        "dataset:drinks  2 sessions: coffee, tea",
        "report:weekly  1 session: tea",
    ]
    assert run("readers", "tea").output == "tea: dataset:drinks, report:weekly\n"
    assert run("readers", "new").output == "new: no reader noted\n"
    dry = run("prune", "--older-than", "0s", "--dry-run")
    assert dry.exit_code == 0, dry.output
    assert dry.output.splitlines() == [
        "would remove 1 session (1 nodes)",
        "kept 1: dataset:drinks reads it: coffee",
        "kept 1: dataset:drinks, report:weekly read it: tea",
    ]
    assert "kept 3: newer than 1h" in run("prune", "--older-than", "1h", "--dry-run").output
    unknown = run("unread", "report:daily")
    assert unknown.exit_code == 1
    assert "no reader 'report:daily'" in unknown.output and "dataset:drinks" in unknown.output
    one = run("unread", "report:weekly", "tea")
    assert one.exit_code == 0 and one.output == "report:weekly reads 1 session no more\n"
    assert drinks.release(durable_store) == 2
    done = run("prune", "--older-than", "0s")
    assert done.exit_code == 0 and "removed 3 sessions" in done.output
    assert run("readers").output == "no reader noted: prune keeps no session for a reader\n"


def test_unread_takes_a_session_by_a_unique_prefix_as_every_command_does(
    durable_store: str,
) -> None:
    for id in ("tea", "toast"):
        with Session(durable_store, id=id):
            note(0, id)
    store = opened(durable_store)
    try:
        store.read_by(["tea", "toast"], "report:weekly")
    finally:
        store.close()

    def run(*arguments: str) -> Any:
        return CliRunner().invoke(cli, ["sessions", *arguments, "--store", durable_store])

    ambiguous = run("unread", "report:weekly", "t")
    assert ambiguous.exit_code == 1 and "matches 2 sessions" in ambiguous.output
    one = run("unread", "report:weekly", "te")
    assert one.exit_code == 0 and one.output == "report:weekly reads 1 session no more\n"
    assert run("readers", "toast").output == "toast: report:weekly\n"


def test_prune_keeps_a_session_whose_operation_has_not_ended(durable_store: str) -> None:
    def started(month: str) -> Any:
        asks = {"tool_calls": [{"name": "start_build", "arguments": {"month": month}}]}
        with Runtime(ScriptedModel([asks, "Started."])):
            llm("build it", tools=[start_build, *operation_tools()])

    for go in _GO.values():
        go.clear()
    try:
        with Session(durable_store, id="building") as session:
            started("May")  # left running when the session closes
            assert [o.state for o in session.operations()] in (["pending"], ["running"])
        with Session(durable_store, id="built") as session:
            started("June")
            _GO["June"].set()
            (job,) = session.operations()
            waits = {"tool_calls": [{"name": "wait_operation", "arguments": {"operation": job.id}}]}
            with Runtime(ScriptedModel([waits, "Done."])):
                llm("ready?", tools=operation_tools())
            assert session.operations()[0].state == "done"
        store = opened(durable_store)
        try:
            report = store.prune(older_than=0)
        finally:
            store.close()
        assert report.removed == ["built"]
        assert report.kept == {"building": "an operation of it is pending, running or unknown"}
    finally:
        _GO["May"].set()


def test_a_negative_age_is_refused(durable_store: str) -> None:
    Session(durable_store, id="x").close()
    store = opened(durable_store)
    with pytest.raises(UsageError, match="older_than"):
        store.prune(older_than=-1)
    store.close()


def _count(store: Any, table: str) -> int:
    with store._lock:
        return int(store._connect().execute(f"SELECT count(*) FROM {table}").fetchone()[0])
