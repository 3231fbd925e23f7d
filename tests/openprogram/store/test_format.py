"""The stored format: its version is checked on open, and a node's row is pinned."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from openprogram import Session, StoreError, UnsupportedFormatVersion
from openprogram.dag import ContextDAG
from openprogram.image import Image
from openprogram.store import FORMAT_VERSION, SQLiteStore
from openprogram.store.format import check_format_version, decode_node, encode_node


def test_the_current_version_is_accepted_and_others_are_named_with_ours():
    assert check_format_version(str(FORMAT_VERSION), "here") == FORMAT_VERSION
    with pytest.raises(UnsupportedFormatVersion, match=r"'99'.*format_version 1.*Upgrade"):
        check_format_version("99", "here")
    with pytest.raises(UnsupportedFormatVersion, match=r"'banana'.*format_version 1"):
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
    _set_sqlite_version(path, "2")
    with pytest.raises(UnsupportedFormatVersion, match=r"format_version '2'.*format_version 1"):
        Session.open(path, "old")
    with pytest.raises(UnsupportedFormatVersion, match="'2'"):
        Session(path)


@pytest.mark.postgres
def test_a_postgres_store_of_a_newer_version_is_refused_naming_both(postgres_url):
    import psycopg

    Session(postgres_url, id="old").close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("UPDATE openprogram_meta SET value = '7'")
    with pytest.raises(UnsupportedFormatVersion, match=r"format_version '7'.*format_version 1"):
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
