"""Declared effects: idempotency keys, the committed start, unknown calls and settling
(docs/operations.md#effects-and-the-ledger)."""

from __future__ import annotations

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from openprogram import (
    EffectUnknown,
    Runtime,
    RunWaiting,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    idempotency_key,
)

ran: list[tuple[str, str]] = []
crash_in: list[str] = []  # the body the next checkout is interrupted in


@pytest.fixture(autouse=True)
def _clear() -> None:
    ran.clear()
    crash_in.clear()


@agentic_function(effect="once")
def pay(amount: int) -> str:
    ran.append(("pay", idempotency_key()))
    if "pay" in crash_in:
        raise KeyboardInterrupt  # the process dying inside the body, as far as it knows
    return f"paid {amount}"


@agentic_function(effect="idempotent")
def notify(text: str) -> str:
    ran.append(("notify", idempotency_key()))
    if "notify" in crash_in:
        raise KeyboardInterrupt
    return f"sent {text}"


@agentic_function
def checkout() -> list[str]:
    return [pay(5), notify("done")]


def interrupted(path: Path, crash: str) -> str:
    """Record session "s" whose checkout is interrupted inside `crash`'s body."""
    crash_in.append(crash)
    with pytest.raises(KeyboardInterrupt), Session(path, id="s"):
        checkout()
    crash_in.clear()
    return "s"


def test_an_effect_must_be_one_of_the_known_ones():
    with pytest.raises(UsageError, match="effect='twice' is not one of None, 'idempotent'"):
        agentic_function(effect="twice")  # type: ignore[call-overload]


def test_the_key_is_known_only_inside_an_effect_call_and_differs_per_call():
    @agentic_function
    def plain() -> str:
        return idempotency_key()

    @agentic_function(effect="idempotent")
    def outer() -> tuple[str, str]:
        return idempotency_key(), inner_plain()

    @agentic_function
    def inner_plain() -> str:
        return idempotency_key()  # inside an effect call's body: that call's key

    with Session(id="k"):
        with pytest.raises(UsageError, match="only known inside a call declared with an effect"):
            idempotency_key()
        with pytest.raises(UsageError, match="effect='once'"):
            plain()
        first, inner = outer()
        second, _ = outer()
    assert first == inner and first != second
    assert first.startswith("op-k-") and len(first) < 64


def test_the_start_is_committed_before_the_body_runs(tmp_path: Path):
    """Committed to the store, not only journaled: another connection reads it."""
    path = tmp_path / "runs.db"
    seen: list[Any] = []

    @agentic_function(effect="once")
    def transfer() -> None:
        with closing(sqlite3.connect(path)) as connection:
            seen.extend(connection.execute("SELECT name, status, data FROM openprogram_nodes"))

    @agentic_function
    def quick() -> int:
        return 1

    with Session(path):
        quick()  # journaled, waiting for its batch: the start's commit takes it along
        transfer()
    names = [(name, status) for name, status, _ in seen]
    assert names == [("quick", "completed"), ("transfer", "running")]
    assert '"effect":"once"' in seen[-1][2] and '"key":"op-' in seen[-1][2]


def test_starts_are_committed_after_the_store_reconnects(tmp_path: Path):
    """write_start keeps a cursor with its statement prepared: one of the connection
    the store has now, never the one it closed."""
    path = tmp_path / "runs.db"

    @agentic_function(effect="once")
    def transfer(n: int) -> int:
        with closing(sqlite3.connect(path)) as connection:
            (status,) = connection.execute(
                "SELECT status FROM openprogram_nodes WHERE name = 'transfer' ORDER BY seq DESC"
            ).fetchone()
        assert status == "running"  # its own start, committed
        return n

    with Session(path) as session:
        transfer(1)
        session.store.close()  # dropped: the next write connects anew
        transfer(2)
    assert [n.output for n in session.dag.find(name="transfer")] == [1, 2]


def test_an_interrupted_once_call_is_unknown_and_runs_only_when_settled(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "pay")
    key = ran[0][1]
    with pytest.raises(EffectUnknown) as caught, Session.open(path, "s", resume=True):
        checkout()
    assert (caught.value.call, caught.value.key) == ("pay", key)
    assert f"idempotency key {key}" in str(caught.value) and "sessions settle s" in str(
        caught.value
    )
    session = Session.open(path, "s")
    node = session.dag.node(caught.value.node_id)
    assert node.status == "unknown" and ran == [("pay", key)]  # never run again unasked
    with pytest.raises(EffectUnknown), Session.open(path, "s", resume=True):
        checkout()  # still unknown: nobody settled it
    session = Session.open(path, "s")
    session.settle(node.id, "paid 5 (by hand)")
    session.settle(node.id, "paid 5 (by hand)")  # the same again: a no-op
    with pytest.raises(UsageError, match="is completed, not waiting to be settled"):
        session.settle(node.id, "paid 6")
    with Session.open(path, "s", resume=True):
        assert checkout() == ["paid 5 (by hand)", "sent done"]
    assert [name for name, _ in ran] == ["pay", "notify"]


def test_a_call_settled_to_run_again_runs_with_the_same_key(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "pay")
    session = Session.open(path, "s")
    (node,) = session.dag.find("pay")
    session.settle(node.id, rerun=True)
    assert session.dag.node(node.id).meta["settled"] == "rerun"
    with Session.open(path, "s", resume=True) as resumed:
        assert checkout() == ["paid 5", "sent done"]
    assert ran[0] == ran[1] and ran[1][0] == "pay"
    assert resumed.dag.node(node.id).status == "completed"
    assert "settled" not in resumed.dag.node(node.id).meta  # a new interruption: unknown


def test_an_interrupted_idempotent_call_runs_again_with_the_same_key(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "notify")
    with Session.open(path, "s", resume=True):
        assert checkout() == ["paid 5", "sent done"]
    assert [name for name, _ in ran] == ["pay", "notify", "notify"]
    assert ran[1][1] == ran[2][1]


def test_a_person_settles_through_the_runtimes_asker(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "pay")
    asked: list[str] = []

    def person(question: Any) -> str:
        asked.append(str(question))
        return '"paid 5 (looked up)"'

    with Session.open(path, "s", resume=True) as session, Runtime(ScriptedModel([]), ask=person):
        assert checkout() == ["paid 5 (looked up)", "sent done"]
    assert "rerun" in asked[0] and ran[0][1] in asked[0]
    (node,) = session.dag.find("pay")
    assert node.meta["settled"] == "result"


def test_an_asker_answering_not_now_suspends_and_an_answer_settles(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "pay")
    with (
        pytest.raises(RunWaiting) as caught,
        Session.open(path, "s", resume=True),
        Runtime(ScriptedModel([]), ask=lambda question: None),
    ):
        checkout()
    Session.open(path, "s").answer(caught.value.question.id, "rerun")
    with Session.open(path, "s", resume=True), Runtime(ScriptedModel([]), ask=lambda q: None):
        assert checkout() == ["paid 5", "sent done"]
    assert [name for name, _ in ran] == ["pay", "pay", "notify"] and ran[0] == ran[1]


def test_settle_refuses_what_is_not_an_interrupted_once_call(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "notify")
    session = Session.open(path, "s")
    (notice,) = session.dag.find("notify")
    with pytest.raises(UsageError, match="was not declared effect='once'"):
        session.settle(notice.id, "x")
    with pytest.raises(UsageError, match="no call 'nope' in session s"):
        session.settle("nope", "x")


def test_a_once_call_interrupted_in_the_process_is_unknown_at_once(tmp_path: Path):
    path = tmp_path / "runs.db"
    interrupted(path, "pay")
    (node,) = Session.open(path, "s").dag.find("pay")
    assert node.status == "unknown" and "KeyboardInterrupt" in str(node.error)


@pytest.fixture
def another_store(durable_store: str, tmp_path: Path) -> Any:
    """A second store of durable_store's kind: another SQLite file, another schema."""
    if not durable_store.startswith("postgresql"):
        yield str(tmp_path / "other.db")
        return
    import psycopg

    from tests.support.postgres import postgres_server

    server, schema = postgres_server(), "test_other_" + os.urandom(6).hex()
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    yield f"{server}{'&' if '?' in server else '?'}options=-csearch_path%3D{schema}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA {schema} CASCADE")


def test_one_session_id_in_two_stores_derives_two_keys(durable_store: str, another_store: str):
    """Issue 40, item 11: the key was derived from the session id and the call's path
    only, so `order-42` in two stores (two deployments, two tenants' files) gave one key,
    and a provider deduplicating by it would take the second charge for the first. The
    key now includes the store's identity, kept in the store (the same by any path to
    it, or in a copy of it, and on every resume)."""
    keys = []
    for store in (durable_store, another_store):
        with Session(store, id="order-42"):
            pay(5)
        keys.append(ran.pop()[1])
    assert keys[0] != keys[1] and all(key.startswith("op-order-42-") for key in keys)
    with Session.open(durable_store, "order-42") as again:
        pay(5)  # a new call in the first store: another key, from the same identity
    assert again.dag.find("pay")[0].meta["key"] == keys[0]
    assert ran.pop()[1] not in keys


def test_a_stores_identity_is_the_same_by_any_path_and_in_a_copy(tmp_path: Path):
    from openprogram.store import open_store

    (tmp_path / "dir").mkdir()
    first, _ = open_store(str(tmp_path / "runs.db"))
    identity = first.identity
    assert len(identity) == 32
    assert open_store(str(tmp_path / "dir" / ".." / "runs.db"))[0].identity == identity
    first.close()
    shutil.copy(tmp_path / "runs.db", tmp_path / "copy.db")
    assert open_store(str(tmp_path / "copy.db"))[0].identity == identity
    assert open_store(str(tmp_path / "new.db"))[0].identity != identity


def test_a_fork_keeps_the_keys_of_the_calls_it_shares(tmp_path: Path):
    with Session(tmp_path / "runs.db", id="s") as session:
        checkout()
    fork = session.fork(at=session.dag.find("notify")[0].id)
    (shared,) = fork.dag.find("pay")
    assert shared.meta["key"] == session.dag.find("pay")[0].meta["key"]


PROGRAM = textwrap.dedent(
    """
    import sys
    from openprogram import Session, agentic_function, idempotency_key

    @agentic_function(effect="once")
    def pay() -> str:
        with open(sys.argv[2], "a") as log:
            log.write(idempotency_key() + "\\n")
        print("ready", flush=True)
        sys.stdin.readline()  # killed here, mid-payment
        return "paid"

    with Session(sys.argv[1], id="s"):
        pay()
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="uses SIGKILL")
@pytest.mark.slow
def test_a_once_call_killed_mid_body_is_unknown_on_resume(tmp_path: Path):
    path, log = tmp_path / "runs.db", tmp_path / "paid.log"
    child = subprocess.Popen(
        [sys.executable, "-c", PROGRAM, str(path), str(log)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None and child.stdout.readline() == "ready\n"
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    child.stdout.close()
    assert child.stdin is not None
    child.stdin.close()

    @agentic_function(effect="once")
    def pay() -> str:
        raise AssertionError("a once body never runs again unasked")

    with Session.open(path, "s", resume=True) as session:
        pass  # a resumed run that never calls it again: it is unknown all the same
    (node,) = session.dag.find("pay")
    assert node.status == "unknown" and "running" in str(node.error)
    with pytest.raises(EffectUnknown) as caught, Session.open(path, "s", resume=True):
        pay()
    assert caught.value.key == log.read_text().strip()


def test_the_cli_shows_unknown_calls_and_settles_them(tmp_path: Path, monkeypatch):
    from click.testing import CliRunner

    from openprogram.cli import cli

    def run(*arguments: str, code: int = 0) -> str:
        result = CliRunner().invoke(cli, list(arguments), prog_name="openprogram")
        assert result.exit_code == code, result.output
        return result.output

    path = tmp_path / "runs.db"
    monkeypatch.setenv("OPENPROGRAM_STORE", str(path))
    interrupted(path, "pay")
    (node,) = Session.open(path, "s").dag.find("pay")
    shown = run("sessions", "show", "s")
    assert " · 1 unknown" in shown.splitlines()[0] and "?  pay #1" in shown
    assert "give one of --result JSON or --rerun" in run("sessions", "settle", "s", node.id, code=2)
    assert f"settle: ['{node.id}']" in run("sessions", "settle", "s", "nope", "--rerun", code=1)
    said = run("sessions", "settle", "s", node.id, "--result", '"paid 5 (by hand)"')
    assert said == f'settled pay ({node.id}) with "paid 5 (by hand)" in session s\n'
    with Session.open(path, "s", resume=True):
        assert checkout() == ["paid 5 (by hand)", "sent done"]


def test_the_report_marks_unknown_calls(tmp_path: Path):
    from openprogram.display.report import report_html

    path = tmp_path / "runs.db"
    interrupted(path, "pay")
    session = Session.open(path, "s")
    page = report_html(session)
    assert "<b>1</b> unknown</span>" in page and "opv-s-u" in page
    assert f'"eff":"once","key":"{session.dag.find("pay")[0].meta["key"]}"' in page


def test_an_approved_tool_keeps_its_effect():
    from openprogram import needs_approval

    assert needs_approval(pay).effect == "once"  # type: ignore[attr-defined]


def test_an_async_once_call_cancelled_is_unknown_and_keeps_its_key(tmp_path: Path):
    import asyncio

    keys: list[str] = []
    started: list[asyncio.Event] = []

    @agentic_function(effect="once")
    async def transfer() -> str:
        keys.append(idempotency_key())
        started[0].set()
        await asyncio.Event().wait()  # cancelled here
        return "done"

    async def main() -> None:
        started.append(asyncio.Event())
        task = asyncio.create_task(transfer())
        await started[0].wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    path = tmp_path / "runs.db"
    with Session(path, id="s"):
        asyncio.run(main())
    (node,) = Session.open(path, "s").dag.find("transfer")
    assert (node.status, node.meta["key"]) == ("unknown", keys[0])
    assert "CancelledError" in str(node.error)


def test_a_once_call_whose_start_the_store_refuses_does_not_run(tmp_path: Path):
    from openprogram import StoreError

    def refuse(*args: Any) -> None:
        raise StoreError("the disk is full")

    with Session(tmp_path / "runs.db", id="s") as session:
        session._recorder._write_batch = refuse  # type: ignore[union-attr]
        session.store.write = refuse  # type: ignore[method-assign, union-attr]
        with pytest.raises(StoreError, match="start could not be committed"):
            checkout()
    assert ran == []  # pay's body never ran
    (node,) = session.dag.find("pay")
    assert node.status == "error" and "not run" in str(node.error)


@pytest.mark.slow
def test_on_postgres_the_start_is_committed_and_an_interruption_is_unknown(postgres_url):
    from openprogram.store import open_store

    seen: list[tuple[str, str]] = []

    @agentic_function(effect="once")
    def transfer() -> None:
        reader = open_store(postgres_url)[0]
        seen.extend((row.name, row.status) for row in reader.rows("pg-effects"))
        reader.close()
        raise KeyboardInterrupt  # the process dying mid-body

    with pytest.raises(KeyboardInterrupt), Session(postgres_url, id="pg-effects"):
        transfer()
    assert seen == [("transfer", "running")]
    with pytest.raises(EffectUnknown), Session.open(postgres_url, "pg-effects", resume=True):
        transfer()


def test_a_once_call_stopped_by_an_unknown_one_inside_it_is_unknown_too(tmp_path: Path):
    @agentic_function(effect="once")
    def pay_all() -> list[str]:
        ran.append(("pay_all", idempotency_key()))
        return [pay(5)]

    path = tmp_path / "runs.db"
    crash_in.append("pay")
    with pytest.raises(KeyboardInterrupt), Session(path, id="s") as session:
        pay_all()
    crash_in.clear()
    (outer,) = session.dag.find("pay_all")
    session = Session.open(path, "s")
    session.settle(outer.id, rerun=True)  # the person says: run the batch again
    with pytest.raises(EffectUnknown), Session.open(path, "s", resume=True) as session:
        pay_all()  # its body runs again, and meets the unknown payment inside it
    assert session.dag.node(outer.id).status == "unknown"  # not an error to run again
    assert [name for name, _ in ran] == ["pay_all", "pay", "pay_all"]
