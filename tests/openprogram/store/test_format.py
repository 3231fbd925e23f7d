"""The stored format: its version is checked on open, and a node's row is pinned."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from openprogram import RunStopped, Session, StoreError, UnsupportedFormatVersion, agentic_function
from openprogram.core.dag import ContextDAG
from openprogram.core.image import Image
from openprogram.store import FORMAT_VERSION, SQLiteStore
from openprogram.store.format import (
    NodeRow,
    check_format_version,
    decode_node,
    decode_rows,
    encode_node,
)


def test_the_current_version_is_accepted_and_others_are_named_with_ours():
    assert check_format_version(str(FORMAT_VERSION), "here") == FORMAT_VERSION
    with pytest.raises(UnsupportedFormatVersion, match=r"'99'.*format_version 1 to 9.*Upgrade"):
        check_format_version("99", "here")
    with pytest.raises(UnsupportedFormatVersion, match=r"'banana'.*format_version 1 to 9"):
        check_format_version("banana", "here")
    with pytest.raises(UnsupportedFormatVersion, match=r"None"):
        check_format_version(None, "here")


def _set_sqlite_version(path: Path, version: str) -> None:
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute(
            "UPDATE openprogram_meta SET value = ? WHERE key = 'format_version'", (version,)
        )


def test_a_sqlite_store_of_a_newer_version_is_refused_naming_both(tmp_path):
    path = tmp_path / "future.db"
    Session(path, id="old").close()
    _set_sqlite_version(path, "10")
    with pytest.raises(
        UnsupportedFormatVersion, match=r"format_version '10'.*format_version 1 to 9"
    ):
        Session.open(path, "old")
    with pytest.raises(UnsupportedFormatVersion, match="'10'"):
        Session(path)


@pytest.mark.postgres
def test_a_postgres_store_of_a_newer_version_is_refused_naming_both(postgres_url):
    import psycopg

    Session(postgres_url, id="old").close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE openprogram_meta SET value = '10'")
    with pytest.raises(
        UnsupportedFormatVersion, match=r"format_version '10'.*format_version 1 to 9"
    ):
        Session.open(postgres_url, "old")


def test_files_that_are_not_session_stores_are_refused_untouched(tmp_path):
    other = tmp_path / "other.db"
    with closing(sqlite3.connect(other)) as connection:
        connection.execute("CREATE TABLE notes (text TEXT)")
    before = other.read_bytes()
    with pytest.raises(StoreError, match="not an openprogram session store"):
        SQLiteStore(other)
    assert other.read_bytes() == before and not Path(f"{other}-wal").exists()
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="could not open"):
        SQLiteStore(garbage)
    assert garbage.read_bytes().startswith(b"this is not")


def test_a_store_in_a_missing_folder_is_a_clear_usage_error(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        Session(tmp_path / "no" / "such" / "folder.db")


def test_a_node_row_holds_its_fields_compactly_and_decodes_back():
    from PIL import Image as PILImage

    dag = ContextDAG()
    ref = dag.add_image(Image(PILImage.new("RGB", (2, 2), "red")))
    top = dag.add("code", "agent", input={"task": "t", "screen": ref}, expose="full")
    node = dag.add("llm", "agent", parent=top.id, input=[{"type": "text", "text": "hi"}])
    node.reads = [top.id]
    node.messages_hash = "ab" * 32
    dag.complete(node, "hello")
    refs: list[str] = []
    row = encode_node(top, refs)
    assert refs == [ref.sha256]
    image = f'{{"$image":"{ref.sha256}","width":2,"height":2}}'
    assert row.input == f'{{"task":"t","screen":{image}}}'
    assert row.data == '{"expose":"full"}' and row.output is None
    llm_row = encode_node(node, [])
    assert (llm_row.kind, llm_row.parent, llm_row.status) == ("llm", top.id, "completed")
    assert llm_row.data == f'{{"reads":["{top.id}"],"messages_hash":"{"ab" * 32}"}}'
    assert decode_node(row) == top and decode_node(llm_row) == node


@pytest.mark.postgres
def test_a_dropped_postgres_connection_is_reopened_without_losing_a_record(postgres_url):
    import psycopg

    from tests.openprogram.store import programs

    with Session(postgres_url, id="dropped") as session:
        programs.count(1)
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            pid = session.store._connection.info.backend_pid
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        programs.count(2)
    assert session.failed_writes == 0
    reopened = Session.open(postgres_url, "dropped")
    assert [n.output for n in reopened.dag.nodes] == [1, 2]
    reopened.close()


def test_reads_that_repeat_an_earlier_exchange_are_stored_as_a_slice_of_it(tmp_path):
    from openprogram import Runtime, ScriptedModel, agentic_function, llm

    @agentic_function
    def turn(i: int) -> str:
        return llm(f"turn {i}")

    path = tmp_path / "loop.db"
    with Session(path, id="loop") as session, Runtime(ScriptedModel(lambda r: "ok")):
        for i in range(30):
            turn(i)
    with closing(sqlite3.connect(path)) as connection:
        data = [
            json.loads(text)
            for (text,) in connection.execute(
                "SELECT data FROM openprogram_nodes WHERE kind = 'llm' ORDER BY seq"
            )
        ]
    assert "reads_base" not in data[0] and data[-1]["reads_base"][2] == 29
    assert len(data[-1]["reads"]) == 1  # only this turn's own call line is new
    reopened = Session.open(path, "loop")
    assert [n.reads for n in reopened.dag.nodes] == [n.reads for n in session.dag.nodes]
    reopened.close()


def test_rows_whose_reads_base_is_missing_keep_what_they_have_and_say_so():
    dag = ContextDAG()
    nodes = [dag.add("llm", "f", input=[]) for _ in range(3)]
    nodes[0].reads = ["a", "b", "c", "d", "e"]
    nodes[1].reads = ["b", "c", "d", "e", "x"]
    nodes[2].reads = ["b", "c", "d", "e", "x", "y"]
    rows = [
        encode_node(nodes[0], []),
        encode_node(nodes[1], [], reads_base=(nodes[0].id, 1, 4)),
        encode_node(nodes[2], [], reads_base=(nodes[1].id, 0, 5)),
    ]
    assert [n.reads for n in decode_rows(reversed(rows))][::-1] == [n.reads for n in nodes]
    broken = decode_rows(rows[1:])
    assert broken[0].meta["reads_incomplete"] and broken[0].reads == ["x"]
    assert broken[1].meta["reads_incomplete"]
    with pytest.raises(StoreError, match="relative to"):
        decode_node(rows[1])


def _old_row(error: str, meta: dict | None) -> NodeRow:
    data = {"error": error, **({"meta": meta} if meta is not None else {})}
    return NodeRow(1, "n1", "code", "job", None, "error", 1.0, 2.0, 1, None, None,
                   json.dumps(data))  # fmt: skip


def test_a_stop_stored_before_the_stopped_status_reads_as_stopped():
    stopped = decode_node(_old_row("BudgetExceeded: budget reached", {"stop_reason": "budget"}))
    assert (stopped.status, stopped.error) == ("stopped", "BudgetExceeded: budget reached")
    assert stopped.meta == {"stop_reason": "budget"}
    # an error whose frame a gate had stopped before, and a RunStopped without a reason
    # recorded, stay errors: only the old spelling of a stop is read as one
    assert decode_node(_old_row("ValueError: late", {"stop_reason": "budget"})).status == "error"
    assert decode_node(_old_row("RunStopped: enough", None)).status == "error"


def test_a_version_2_store_with_a_stop_is_migrated_and_reads_it_as_stopped(tmp_path):
    @agentic_function
    def job() -> None:
        raise RunStopped("enough for today")

    path = tmp_path / "old.db"
    with Session(path, id="old"), pytest.raises(RunStopped):
        job()
    with closing(sqlite3.connect(path)) as connection, connection:
        connection.execute("UPDATE openprogram_nodes SET status = 'error'")  # how it was stored
    _set_sqlite_version(path, "2")
    reopened = Session.open(path, "old")
    (node,) = reopened.dag.nodes
    assert (node.status, node.meta["stop_reason"]) == ("stopped", "enough for today")
    assert reopened.store.format_version == FORMAT_VERSION == 9
    reopened.close()
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("SELECT value FROM openprogram_meta").fetchall() == [("9",)]


def test_a_version_6_store_is_migrated_and_its_waiting_calls_resume(tmp_path):
    from openprogram import RunWaiting, ask_user

    @agentic_function
    def confirm() -> str:
        return ask_user("Go on?", choices=["yes", "no"])

    path = tmp_path / "v6.db"
    with Session(path, id="old") as session:
        session.submit("hello")
    _set_sqlite_version(path, "6")  # what a version-6 openprogram left: no waiting rows
    with pytest.raises(RunWaiting), Session.open(path, "old", resume=True) as reopened:
        confirm()
    assert reopened.store.format_version == FORMAT_VERSION == 9
    with closing(sqlite3.connect(path)) as connection:
        assert connection.execute("SELECT value FROM openprogram_meta").fetchall() == [("9",)]
        statuses = connection.execute("SELECT status FROM openprogram_nodes ORDER BY seq")
        assert [s for (s,) in statuses] == ["completed", "waiting", "waiting"]
