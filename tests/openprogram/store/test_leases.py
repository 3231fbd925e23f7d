"""One writer per session: the writer lease on memory, SQLite and PostgreSQL, in-process.

Two processes are in test_processes.py. Here: a second writer is refused naming the
first, forks and readers need no lease, an expired lease is taken over, a writer whose
lease was taken over has its records refused, and stores of format_version 1 migrate.
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import time
from contextlib import closing
from typing import Any

import pytest

from openprogram import Session, SessionLocked, StoreError
from openprogram.store import FORMAT_VERSION, MemoryStore, open_store
from openprogram.store.lease import Holder, this_process
from tests.openprogram.store import programs


def _sql(store: Any, statement: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run raw SQL on a SQLite path or PostgreSQL URL (placeholders written as ?)."""
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as connection:
            cursor = connection.execute(statement.replace("?", "%s"), args)
            return cursor.fetchall() if cursor.description else []
    with closing(sqlite3.connect(store)) as connection, connection:
        return connection.execute(statement, args).fetchall()


def test_a_second_writer_of_a_session_is_refused_naming_the_first(store):
    with Session(store, id="run") as first:
        programs.count(1)
        second = Session.open(store, "run")
        with pytest.raises(
            SessionLocked, match=r"'run'.*being written by another Session in this process"
        ) as caught:
            second.__enter__()
        assert caught.value.holder == first._owner
        assert "fork" in str(caught.value)
        with pytest.raises(SessionLocked):
            second.submit("hello")
        second.close()
        programs.count(2)
    assert first.failed_writes == 0
    reopened = Session.open(store, "run")
    assert [n.output for n in reopened.dag.nodes] == [1, 2]
    with reopened:  # the first writer is done: the lease is free
        programs.count(3)
    assert [n.output for n in Session.open(store, "run").dag.nodes] == [1, 2, 3]


def test_readers_and_forks_need_no_lease(store):
    with Session(store, id="busy") as writer:
        programs.count(1)
        writer.flush()  # a fast call waits in a batch; readers see committed rows
        reader = Session.open(store, "busy")
        assert [n.output for n in reader.dag.nodes] == [1]
        fork = reader.fork(at=reader.dag.nodes[0].id, id="busy-fork")
        with fork:
            programs.count(2)
        reader.close()
        programs.count(3)
    assert writer.failed_writes == 0 and fork.failed_writes == 0
    assert [n.output for n in Session.open(store, "busy").dag.nodes] == [1, 3]
    assert [n.output for n in Session.open(store, "busy-fork").dag.nodes] == [1, 2]


def test_the_lease_is_released_on_close_and_a_stale_session_cannot_take_it_again(store):
    session = Session(store, id="again")
    with session:
        programs.count(0)
    with session:  # nobody else wrote: it may go on
        programs.count(1)
    with Session.open(store, "again"):  # free between the `with` blocks of the first
        programs.count(10)
    with pytest.raises(
        SessionLocked,
        match=r"recorded into by another writer after this Session loaded it "
        r"\(the store holds 3 .* knows 2\)",
    ):
        session.__enter__()
    with Session.open(store, "again"):  # what the message says to do
        programs.count(11)
    assert session.failed_writes == 0
    assert [n.output for n in Session.open(store, "again").dag.nodes] == [0, 1, 10, 11]


def test_a_store_refuses_records_from_a_writer_without_the_lease(store):
    resolved, owned = open_store(store)
    session = Session(resolved, id="unheld")
    session.dag.add("user", "user", input="not entered", status="completed")
    assert session.failed_writes == 1  # counted and logged, never interleaved
    assert resolved.rows("unheld") == []
    if owned:
        resolved.close()


@pytest.fixture
def sql_store(durable_store: Any) -> Any:
    return durable_store


def _foreign_holder(store: Any, session: str, heartbeat_age_s: float) -> None:
    """Give `session`'s lease to a writer on another machine, last seen that long ago."""
    (key,) = _sql(store, "SELECT key FROM openprogram_sessions WHERE id = ?", (session,))[0]
    beat = time.time() - heartbeat_age_s
    _sql(store, "DELETE FROM openprogram_leases WHERE session = ?", (key,))
    _sql(
        store,
        "INSERT INTO openprogram_leases VALUES (?, ?, ?, ?, ?, ?, ?)",
        (key, "elsewhere:4242:abcd0123", "elsewhere", 4242, "other-boot/ns|4242|99", beat, beat),
    )


def test_a_live_writer_on_another_machine_holds_the_lease(sql_store: Any):
    Session(sql_store, id="remote").close()
    _foreign_holder(sql_store, "remote", heartbeat_age_s=2)
    with (
        pytest.raises(
            SessionLocked, match=r"process 4242 on host 'elsewhere'.*heartbeat \d+ s ago"
        ),
        Session.open(sql_store, "remote"),
    ):
        pass


def test_an_expired_lease_is_taken_over(sql_store: Any, caplog):
    with Session(sql_store, id="stale"):
        programs.count(1)
    _foreign_holder(sql_store, "stale", heartbeat_age_s=3600)  # a writer elsewhere died
    with (
        caplog.at_level(logging.WARNING, logger="openprogram.store"),
        Session.open(sql_store, "stale") as new,
    ):
        programs.count(2)
    assert "took over the writer lease" in caplog.text and "elsewhere:4242" in caplog.text
    assert re.search(r"last heartbeat was 3\d\d\d s ago", caplog.text)
    assert new.failed_writes == 0
    assert [n.output for n in Session.open(sql_store, "stale").dag.nodes] == [1, 2]


def test_a_writer_whose_lease_was_taken_over_has_its_records_refused(sql_store: Any, caplog):
    with (
        caplog.at_level(logging.ERROR, logger="openprogram.store"),
        Session(sql_store, id="fenced") as session,
    ):
        programs.count(1)
        session.flush()
        _foreign_holder(sql_store, "fenced", heartbeat_age_s=0)  # taken over meanwhile
        programs.count(2)
        assert session.store.renew("fenced", session._owner) is False
    assert session.failed_writes == 1  # the call's record, refused when committed
    assert "lost the session's writer lease" in caplog.text
    assert [n.output for n in Session.open(sql_store, "fenced").dag.nodes] == [1]


def test_a_holder_on_this_machine_expires_when_its_process_ends():
    now = time.time()
    alive = Holder("h:1:x", "h", os.getpid(), this_process(), now, now - 3600)
    assert alive.expired(now) is None  # this process: alive, however old its heartbeat
    machine = this_process().split("|")[0]
    gone = Holder("h:1:x", "h", 2**22 + 7, f"{machine}|{2**22 + 7}|1", now, now)
    assert "has ended" in (gone.expired(now) or "")
    remote = Holder("h:1:x", "h", 1, "other|1|1", now, now - 31)
    assert "31 s ago" in (remote.expired(now) or "")
    assert Holder("h:1:x", "h", 1, "other|1|1", now, now - 5).expired(now) is None


def test_memory_store_leases_are_per_session():
    store = MemoryStore()
    with Session(store, id="a"), Session(store, id="b"):
        programs.count(1)
    with Session.open(store, "a"), pytest.raises(SessionLocked):
        Session.open(store, "a").__enter__()


# -- format_version 1 stores -----------------------------------------------------------------


def _make_version_1(store: Any) -> None:
    """Turn a store into what openprogram with format_version 1 wrote: no leases table."""
    _sql(store, "DROP TABLE openprogram_leases")
    _sql(store, "UPDATE openprogram_meta SET value = '1' WHERE key = 'format_version'")


def test_a_version_1_store_is_migrated_when_opened_and_keeps_its_sessions(sql_store: Any):
    with Session(sql_store, id="old"):
        programs.count(1)
    _make_version_1(sql_store)
    reopened = Session.open(sql_store, "old")
    assert reopened.store.format_version == FORMAT_VERSION == 9
    assert _sql(sql_store, "SELECT value FROM openprogram_meta") == [("9",)]
    with reopened:
        programs.count(2)
    assert [n.output for n in Session.open(sql_store, "old").dag.nodes] == [1, 2]


def test_store_errors_for_a_missing_session_name_it(sql_store: Any):
    resolved, _ = open_store(sql_store)
    with pytest.raises(StoreError, match="no session 'ghost'"):
        resolved.acquire("ghost", "h:1:x")
    resolved.close()


def test_the_heartbeat_renews_held_leases_and_lets_go_of_lost_ones(sql_store: Any, caplog):
    from openprogram.store.lease import heartbeat

    with Session(sql_store, id="beat") as session:
        _sql(sql_store, "UPDATE openprogram_leases SET heartbeat_at = 0")
        heartbeat().beat()
        ((beat,),) = _sql(sql_store, "SELECT heartbeat_at FROM openprogram_leases")
        assert abs(beat - time.time()) < 600  # renewed, by the store's clock
        _foreign_holder(sql_store, "beat", heartbeat_age_s=0)
        with caplog.at_level(logging.ERROR, logger="openprogram.store"):
            heartbeat().beat()
        assert "writer lease of session beat" in caplog.text and "taken over" in caplog.text
        assert (id(session.store), "beat") not in heartbeat()._leases
    ((owner,),) = _sql(sql_store, "SELECT owner FROM openprogram_leases")
    assert owner == "elsewhere:4242:abcd0123"  # closing did not release another's lease


def test_a_version_1_store_opened_read_only_is_read_as_it_is(tmp_path):
    from openprogram.store import SQLiteStore

    path = str(tmp_path / "old.db")
    with Session(path, id="old"):
        programs.count(1)
    _make_version_1(path)
    store = SQLiteStore(path, read_only=True)
    assert store.format_version == 1 and store.holder("old") is None
    assert [n.output for n in Session.open(store, "old").dag.nodes] == [1]
    with pytest.raises(StoreError, match="open read-only"), Session.open(store, "old"):
        pass
    store.close()
    assert _sql(path, "SELECT value FROM openprogram_meta") == [("1",)]
    assert ("openprogram_leases",) not in _sql(path, "SELECT name FROM sqlite_master")


def test_a_holder_without_a_start_time_is_judged_by_its_heartbeat():
    """A live pid says nothing when the lease does not say which process had it."""
    now = time.time()
    machine = this_process().split("|")[0]
    unknown = f"{machine}|{os.getpid()}|"  # this pid lives, but was it the writer?
    silent = Holder("h:1:x", "h", os.getpid(), unknown, now, now - 3600)
    assert "3600 s ago" in (silent.expired(now) or "")
    assert Holder("h:1:x", "h", os.getpid(), unknown, now, now - 5).expired(now) is None


@pytest.mark.parametrize("start", ["", "99"])
def test_a_heartbeat_in_the_future_counts_from_now(sql_store: Any, start: str):
    """A dead holder that wrote a heartbeat an hour ahead (a clock stepped back, or a
    forged row) holds the lease for LEASE_TTL_S from when it is seen, not for the hour."""
    Session(sql_store, id="ahead").close()
    (key,) = _sql(sql_store, "SELECT key FROM openprogram_sessions WHERE id = ?", ("ahead",))[0]
    machine = this_process().split("|")[0]
    pid = os.getpid() if not start else 4242
    process = f"{machine}|{pid}|" if not start else f"other-boot/ns|4242|{start}"
    ahead = time.time() + 3600
    _sql(
        sql_store,
        "INSERT INTO openprogram_leases VALUES (?, ?, ?, ?, ?, ?, ?)",
        (key, "gone:4242:abcd0123", "gone", pid, process, ahead, ahead),
    )
    with pytest.raises(SessionLocked), Session.open(sql_store, "ahead"):
        pass  # still fresh by its heartbeat: as if renewed just now
    lease = "FROM openprogram_leases WHERE session = ?"
    ((beat,),) = _sql(sql_store, f"SELECT heartbeat_at {lease}", (key,))
    assert beat <= time.time() + 1  # judged from now on: it expires LEASE_TTL_S from now
    _sql(
        sql_store,
        "UPDATE openprogram_leases SET heartbeat_at = ? WHERE session = ?",
        (beat - 31, key),
    )
    with Session.open(sql_store, "ahead") as taken:  # 31 s later, no sign of life: taken over
        programs.count(1)
    assert taken.failed_writes == 0


def test_a_session_closing_while_the_heartbeat_renews_it_is_not_reported_taken_over(
    tmp_path, caplog
):
    """The heartbeat renews the leases it held when its beat began; one released in
    between (its session closed) is gone, not taken over: nothing is logged."""
    from openprogram.store import SQLiteStore
    from openprogram.store.lease import heartbeat

    class ClosesFirst(SQLiteStore):
        """A real store whose session closes just as the heartbeat comes to renew it."""

        closing: Any = None

        def renew(self, session: str, owner: str) -> bool:
            if self.closing is not None:
                closing, self.closing = self.closing, None
                closing.__exit__(None, None, None)
            return super().renew(session, owner)

    store = ClosesFirst(tmp_path / "s.db")
    session = Session(store, id="closing").__enter__()
    programs.count(1)
    store.closing = session
    with caplog.at_level(logging.ERROR, logger="openprogram.store"):
        heartbeat().beat()
    assert store.closing is None and "taken over" not in caplog.text
    assert _sql(str(tmp_path / "s.db"), "SELECT * FROM openprogram_leases") == []
    store.close()
