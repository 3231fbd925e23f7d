"""Group commit: what waits in a batch, what commits it, and what a failing batch costs.

Run against real SQLite and PostgreSQL stores (the ones with write_batch); a reader is a
second store object, so it sees only what was committed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from PIL import Image

from openprogram import Runtime, ScriptedModel, Session, StoreError, agentic_function, llm
from openprogram.agentic.threads import start_thread
from openprogram.store import NodeRow, open_store
from openprogram.store import recorder as recorder_module
from tests.openprogram.store import programs


def committed(store: Any, session_id: str) -> list[tuple[str, str, Any]]:
    """(name, status, output) of every node a new reader of the store sees."""
    reader = Session.open(store, session_id)
    found = [(n.name, n.status, n.output) for n in reader.dag.nodes]
    reader.close()
    return found


@pytest.fixture
def no_timer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only the rules under test commit: the flusher thread waits an hour, and no call
    counts as slow (on a busy machine a call of microseconds can span a millisecond)."""
    monkeypatch.setattr(recorder_module, "BATCH_AGE_S", 3600.0)
    monkeypatch.setattr(recorder_module, "SLOW_CALL_S", 3600.0)


def test_fast_calls_wait_and_a_full_batch_commits_itself(durable_store: Any, no_timer: None):
    rows = recorder_module.BATCH_ROWS
    with Session(durable_store, id="full") as session:
        for i in range(rows - 1):
            programs.count(i)
        assert committed(durable_store, "full") == []  # created and completed: one row each
        programs.count(rows - 1)
        assert len(committed(durable_store, "full")) == rows
        programs.count(rows)
        assert len(committed(durable_store, "full")) == rows
    assert [n[2] for n in committed(durable_store, "full")] == list(range(rows + 1))
    assert session.failed_writes == 0


def test_an_input_and_an_exchange_commit_everything_before_them(durable_store: Any, no_timer: None):
    with Session(durable_store, id="points") as session, Runtime(ScriptedModel(["ok"])):
        programs.count(1)
        session.submit("hello")
        assert committed(durable_store, "points") == [
            ("count", "completed", 1),
            ("user", "completed", None),
        ]
        programs.count(2)

        @agentic_function
        def ask() -> str:
            return llm("anything?")

        assert ask() == "ok"
        assert committed(durable_store, "points")[2:] == [
            ("count", "completed", 2),
            ("ask", "running", None),  # the caller of the exchange, still running
            ("ask", "completed", "ok"),  # the exchange, before llm() returned
        ]


def test_images_of_waiting_calls_are_committed_with_them(durable_store: Any, no_timer: None):
    picture = Image.new("RGB", (32, 16), (200, 40, 40))

    @agentic_function
    def snap(i: int) -> dict[str, Any]:
        return {"i": i, "image": picture}

    with Session(durable_store, id="images") as session:
        snap(1)
        snap(2)  # the same picture: one blob
        session.flush()
    reopened = Session.open(durable_store, "images")
    first, second = (n.output["image"] for n in reopened.dag.nodes)
    assert first.sha256 == second.sha256
    assert reopened.dag.blobs.get(first.sha256).pil.tobytes() == picture.tobytes()
    reopened.close()


def test_a_flush_with_nothing_waiting_leaves_the_next_one_its_work(
    durable_store: Any, no_timer: None
):
    with Session(durable_store, id="again") as session:
        assert session.flush() is True  # nothing waits
        programs.count(1)
        assert committed(durable_store, "again") == []
        assert session.flush() is True
        assert committed(durable_store, "again") == [("count", "completed", 1)]


class _OneBadRow:
    """A real store that refuses one call's record, and every batch holding it."""

    def __init__(self, store: Any, bad: int) -> None:
        self._store = store
        self._bad = bad
        self.url = store.url

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def write_batch(self, session: str, rows: Sequence[NodeRow], blobs: Any) -> None:
        if any(row.output == str(self._bad) for row in rows):
            raise StoreError("the batch is refused")
        self._store.write_batch(session, rows, blobs)

    def write(self, session: str, row: NodeRow, blobs: Mapping[str, bytes]) -> None:
        if row.output == str(self._bad):
            raise StoreError(f"the record of count({row.output}) is refused")
        self._store.write(session, row, blobs)


def test_a_failing_batch_is_tried_record_by_record_and_loses_only_the_bad_one(
    durable_store: Any, no_timer: None, caplog: pytest.LogCaptureFixture
):
    resolved, owned = open_store(durable_store)
    store = _OneBadRow(resolved, bad=3)
    with caplog.at_level(logging.ERROR), Session(store, id="bad") as session:
        for i in range(6):
            programs.count(i)
    assert session.failed_writes == 1
    assert "count(3) is refused" in caplog.text and "the batch is refused" not in caplog.text
    assert [n[2] for n in committed(durable_store, "bad")] == [0, 1, 2, 4, 5]
    if owned:
        resolved.close()


def test_flush_reports_whether_everything_was_stored(durable_store: Any, no_timer: None):
    resolved, owned = open_store(durable_store)
    with Session(_OneBadRow(resolved, bad=1), id="flushed") as session:
        programs.count(0)
        assert session.flush() is True
        programs.count(1)
        assert session.flush() is False
        assert session.flush() is True  # nothing waits any more
    assert session.failed_writes == 1
    if owned:
        resolved.close()


def _row(seq: int, status: str = "completed", id: str | None = None) -> NodeRow:
    return NodeRow(
        seq, id or f"node-{seq}", "code", "count", None, status, 1.0 + seq,
        None if status == "running" else 2.0 + seq, None if status == "running" else seq,
        f'{{"i":{seq}}}', None if status == "running" else str(seq), None,
    )  # fmt: skip


def test_a_large_batch_is_stored_whole_and_a_conflict_anywhere_refuses_all_of_it(
    durable_store: Any,
):
    """A batch longer than one multi-row statement (SQLite writes 64 and 8 rows at a
    time, then row by row): new rows and updates of running ones are all stored; a row
    whose seq is another node's, wherever it is, refuses the whole batch."""
    store, owned = open_store(durable_store)
    assert store is not None
    session = Session(store, id="large")
    store.acquire("large", "me")
    store.write_batch("large", [_row(seq, "running") for seq in range(1, 11)], {})
    store.write_batch("large", [_row(seq) for seq in range(1, 76)], {})  # 10 updates, 65 new
    stored = {row.seq: row for row in store.rows("large")}
    assert sorted(stored) == list(range(1, 76))
    assert all(stored[seq] == _row(seq) for seq in range(1, 76))
    for bad in (76, 140, 149):  # in the 64-row statement, in the 8-row one, in the rest
        batch = [_row(seq) for seq in range(76, 150)]
        batch[bad - 76] = _row(1, id="another")  # seq 1 belongs to node-1
        with pytest.raises(StoreError, match="belongs to another node"):
            store.write_batch("large", batch, {})
        assert len(store.rows("large")) == 75
    store.release("large", "me")
    session.close()
    if owned:
        store.close()


def test_a_batch_with_images_or_a_repeated_seq_is_stored_whole_or_refused_whole(
    durable_store: Any,
):
    """The other ways a batch is written (PostgreSQL writes one without images as one
    statement): with an image, all of it and the image or, on a conflict, none of them;
    a seq twice in one batch (a journal folded in) leaves its later record."""
    store, owned = open_store(durable_store)
    assert store is not None
    session = Session(store, id="mixed")
    store.acquire("mixed", "me")
    store.write_batch("mixed", [_row(1, "running"), _row(2), _row(1)], {})
    assert store.rows("mixed") == [_row(1), _row(2)]
    image = {"f" * 64: b"\x89PNG-not-really"}
    refused = [_row(3), _row(2, id="another"), _row(4)]  # seq 2 belongs to node-2
    with pytest.raises(StoreError, match="belongs to another node"):
        store.write_batch("mixed", refused, image)
    assert store.rows("mixed") == [_row(1), _row(2)] and store.blob("f" * 64) is None
    store.write_batch("mixed", [_row(3), _row(4)], image)
    assert [row.seq for row in store.rows("mixed")] == [1, 2, 3, 4]
    assert store.blob("f" * 64) == image["f" * 64]
    store.release("mixed", "me")
    session.close()
    if owned:
        store.close()


class _HeldCommit:
    """A real store whose next write_batch waits, once `hold` is set, until `go` is."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.url = store.url
        self.hold = False
        self.holding, self.go = threading.Event(), threading.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def write_batch(self, session: str, rows: Sequence[NodeRow], blobs: Any) -> None:
        if self.hold:
            self.hold = False
            self.holding.set()
            assert self.go.wait(60), "the held commit was never let go"
        self._store.write_batch(session, rows, blobs)


@pytest.mark.postgres
def test_without_a_journal_calls_record_while_a_commit_is_in_flight_and_share_the_next(
    postgres_url: str, no_timer: None
):
    """PostgreSQL (no journal): a batch is written outside the Recorder's lock, so
    another thread's calls go on recording meanwhile, and each exchange still returns
    only once a commit holding it is done."""
    resolved, owned = open_store(postgres_url)
    store = _HeldCommit(resolved)

    @agentic_function
    def ask(i: int) -> str:
        return llm(f"question {i}")

    def counted(first: int) -> None:
        for i in range(first, first + 5):
            programs.count(i)

    with Session(store, id="shared") as session, Runtime(ScriptedModel(lambda _: "ok")):
        store.hold = True
        asking = start_thread(ask, 1)
        assert store.holding.wait(60)  # the exchange's first commit is in flight
        counting = start_thread(counted, 10)
        counting.join(60)
        assert not counting.is_alive()  # recorded while the commit was held
        assert asking.is_alive()  # llm() has not returned: its exchange is not stored
        store.go.set()
        asking.join(60)
        stored = committed(postgres_url, "shared")
        assert ("ask", "completed", "ok") in stored  # the exchange, before llm() returned
        assert ("count", "completed", 14) in stored  # recorded before it: with it
        session.flush()
    assert sorted(n[2] for n in committed(postgres_url, "shared") if n[0] == "count") == list(
        range(10, 15)
    )
    assert session.failed_writes == 0
    if owned:
        resolved.close()


def test_a_batch_with_a_broken_row_is_refused_whole_and_said_so_not_as_a_conflict(
    durable_store: Any,
):
    """A row the store cannot hold (here a node without a name) refuses its batch and
    the error says what failed: it is no seq conflict and no lost lease."""
    store, owned = open_store(durable_store)
    assert store is not None
    session = Session(store, id="broken")
    store.acquire("broken", "me")
    huge = json.dumps({"i": "x" * 1_000_000})  # PostgreSQL quotes the refused row whole
    batch = [_row(1), _row(2)._replace(name=None, input=huge), _row(3)]  # type: ignore[arg-type]
    with pytest.raises(StoreError) as refused:
        store.write_batch("broken", batch, {})
    assert len(str(refused.value)) < 5_000  # the message stays bounded
    assert "belongs to another node" not in str(refused.value)
    assert "lease" not in str(refused.value)
    assert store.rows("broken") == []
    store.release("broken", "me")
    session.close()
    if owned:
        store.close()
