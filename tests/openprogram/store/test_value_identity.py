"""Values that resume true (issue 22, DESIGN §6 "Values and identity"), in every store:
a call is answered from its record only when the record stands for the very value it
was given and for the value it returned; otherwise it runs again, and values with no
stored form are reported when recorded."""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from openprogram import ResumeDivergence, Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.agentic._resume import forget_notes
from openprogram.render._history import _uncached
from openprogram.render.render import render_context
from openprogram.store import FORMAT_VERSION

runs: list[str] = []


class Doc:
    """A plain class: no dataclass, no pydantic, its state in __dict__."""

    def __init__(self, text: str) -> None:
        self.text = text


@dataclasses.dataclass
class Point:
    x: int
    y: int


@agentic_function
def summarise(doc: Doc) -> str:
    runs.append(f"summarise {doc.text}")
    return "summary of " + doc.text.upper()


@agentic_function
def guarded(lock: Any, n: int) -> int:
    runs.append("guarded")
    with lock:
        return n * 2


@agentic_function
def first_line(file: Any) -> str:
    runs.append("first_line")
    return str(file.readline()).strip()


@agentic_function
def make_point(x: int) -> Point:
    runs.append("make_point")
    return Point(x, x + 1)


@agentic_function
def make_doc(text: str):
    runs.append("make_doc")
    return Doc(text)


@agentic_function
def make_lock():
    runs.append("make_lock")
    return threading.Lock()


@agentic_function
def when(days: int):
    runs.append("when")
    return datetime.date(2026, 1, 1) + datetime.timedelta(days=days)


@agentic_function
def where(name: str):
    runs.append("where")
    return Path("/srv") / name


@agentic_function
def big(digits: int):
    runs.append("big")
    return 10 ** (digits - 1) + 7


@agentic_function
def keep(value: Any) -> int:
    runs.append("keep")
    return 1


@agentic_function
def weigh(value: Any) -> str:
    return llm("how big is it?")  # its own call line, with the value, is in the context


def echo(request: Any) -> str:
    return "seen: " + request.text[-30:]


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    runs.clear()
    forget_notes()
    yield
    forget_notes()


@pytest.mark.slow
def test_a_different_object_is_never_answered_with_the_old_result(store):
    with Session(store, id="docs"):
        assert summarise(Doc("hello")) == "summary of HELLO"
    with Session.open(store, "docs", resume=True), pytest.raises(ResumeDivergence) as caught:
        summarise(Doc("goodbye"))
    assert "goodbye" in str(caught.value) and "hello" in str(caught.value)
    runs.clear()
    with Session.open(store, "docs", resume=True):  # the same value is still answered
        assert summarise(Doc("hello")) == "summary of HELLO"
    assert runs == []


def test_a_call_taking_a_lock_runs_again_and_says_so_when_recorded(store, caplog):
    lock = threading.Lock()
    with caplog.at_level(logging.WARNING, "openprogram"), Session(store, id="lock"):
        assert guarded(lock, 2) == 4
        assert guarded(lock, 3) == 6
    said = [r.getMessage() for r in caplog.records if "_thread.lock" in r.getMessage()]
    assert len(said) == 1  # once per type, when recorded
    assert "guarded was given a _thread.lock" in said[0] and "calls guarded again" in said[0]
    (node, _) = Session.open(store, "lock").dag.nodes
    assert node.input == {"lock": {"$opaque": "_thread.lock"}, "n": 2}
    runs.clear()
    with Session.open(store, "lock", resume=True) as resumed:
        assert guarded(threading.Lock(), 2) == 4
    assert runs == ["guarded"]  # ran again: the record cannot stand for the lock
    assert resumed.dag.nodes[0].meta["rerun"]


@agentic_function
def numbered(lock: Any, n: int) -> int:
    runs.append("numbered")
    with lock:
        return n * 100 + len(runs)  # another result each time it runs


@pytest.mark.slow
def test_a_history_rendered_before_a_call_runs_again_shows_its_new_result(store):
    """A resumed session rendered before the program goes on (a notebook's look): the
    call that runs again then returns something else, and the next render shows that,
    not the result the earlier render kept (equal to a render from scratch)."""
    with Session(store, id="again"):
        numbered(threading.Lock(), 1)
    runs.clear()
    with Session.open(store, "again", resume=True) as resumed:
        assert "output=101" in render_context(resumed.dag).text()
        runs.append("another")  # so that running again answers 102
        assert numbered(threading.Lock(), 1) == 102  # ran again: the record said 101
        now = render_context(resumed.dag)
        assert "output=102" in now.text()
        with _uncached(resumed.dag):
            cold = render_context(resumed.dag)
        assert now.text() == cold.text() and now.messages_hash == cold.messages_hash


def test_a_call_taking_an_open_file_runs_again(store, tmp_path, caplog):
    path = tmp_path / "notes.txt"
    path.write_text("first\nsecond\n")
    with (
        caplog.at_level(logging.WARNING, "openprogram"),
        Session(store, id="file"),
        path.open() as file,
    ):
        assert first_line(file) == "first"
    assert any("first_line was given a _io.TextIOWrapper" in r.getMessage() for r in caplog.records)
    path.write_text("changed\n")
    runs.clear()
    with Session.open(store, "file", resume=True), path.open() as file:
        assert first_line(file) == "changed"  # not the recorded "first"
    assert runs == ["first_line"]


def test_non_json_results_come_back_rebuilt_or_the_call_runs_again(store, caplog):
    with caplog.at_level(logging.WARNING, "openprogram"), Session(store, id="results"):
        originals = (make_point(1), make_doc("hi"), make_lock(), when(3), big(5000), where("a"))
    said = [r.getMessage() for r in caplog.records]
    assert any("make_lock returned a _thread.lock" in m and "stand-in" in m for m in said)
    runs.clear()
    with Session.open(store, "results", resume=True):
        point, doc, lock, day, number, path = (
            make_point(1), make_doc("hi"), make_lock(), when(3), big(5000), where("a")
        )  # fmt: skip
    # a dataclass its annotation names, a date, an int, a path are rebuilt without running;
    # a plain object with no annotation and a lock run again: never a string stand-in
    assert runs == ["make_doc", "make_lock"]
    assert isinstance(point, Point) and point == originals[0]
    assert isinstance(doc, Doc) and doc.text == "hi"
    assert isinstance(lock, type(threading.Lock()))
    assert day == datetime.date(2026, 1, 4)
    assert number == originals[4] and number.bit_length() == originals[4].bit_length()
    assert path == Path("/srv/a") and type(path) is type(originals[5])


def test_a_5000_digit_int_is_recorded_and_later_llm_calls_work(store):
    number = 10**5000 + 1
    with Session(store, id="int") as session, Runtime(ScriptedModel(echo)):
        assert keep(number) == 1
        assert weigh(number).startswith("seen: ")
        assert big(5000) < number  # a result nearly as long
        assert weigh("after").startswith("seen: ")
    assert session.failed_writes == 0
    text = render_context(session.dag).text()
    assert '[keep #1] input={"value": "<int of about 5001 digits>"}' in text
    assert '[big #1] input={"digits": 5000} output="<int of about 5000 digits>"' in text
    nodes = Session.open(store, "int").dag.nodes
    assert [n.status for n in nodes] == ["completed"] * 6
    assert nodes[0].input["value"]["$type"] == "builtins.int"
    runs.clear()
    with Session.open(store, "int", resume=True), Runtime(ScriptedModel([])):
        assert keep(number) == 1  # answered from the record
        assert weigh(number).startswith("seen: ")
    assert runs == []
    with Session.open(store, "int", resume=True), pytest.raises(ResumeDivergence):
        keep(number + 1)  # a different int is a different input


def test_renders_show_objects_by_their_fields():
    with Session() as session:
        keep({"point": Point(1, 2), "path": Path("/tmp/x"), "tags": {"b", "a"}, "raw": b"hi"})
        make_point(4)
    text = render_context(session.dag).text()
    assert (
        '[keep #1] input={"value": {"point": {"x": 1, "y": 2}, "path": "/tmp/x", '
        '"tags": ["a", "b"], "raw": "b\'hi\'"}} output=1'
    ) in text
    assert '[make_point #1] input={"x": 4} output={"x": 4, "y": 5}' in text


def _sql(store: Any, statement: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Raw SQL on a SQLite path or PostgreSQL URL (placeholders written as ?)."""
    if store.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(store, autocommit=True) as connection:
            cursor = connection.execute(statement.replace("?", "%s"), args)
            return cursor.fetchall() if cursor.description else []
    with closing(sqlite3.connect(store)) as connection, connection:
        return connection.execute(statement, args).fetchall()


def test_a_version_5_store_resumes_what_it_can_and_reruns_the_rest(durable_store):
    store = str(durable_store)
    with Session(store, id="old"):
        summarise(Doc("hello"))
        make_point(1)
        make_doc("hi")
    with Session(store, id="empty"):
        pass
    # rewrite it as format_version 5 stored it: objects as their repr, dataclasses as
    # their fields, with no note of where the old values end
    update = "UPDATE openprogram_nodes SET {} = ? WHERE name = ?"
    stand_in = f"<{__name__}.Doc object at 0x7f2a3b4c5d60>"
    _sql(store, update.format("input"), (json.dumps({"doc": stand_in}), "summarise"))
    _sql(store, update.format("output"), (json.dumps({"x": 1, "y": 2}), "make_point"))
    _sql(store, update.format("output"), (json.dumps(stand_in), "make_doc"))
    _sql(store, "UPDATE openprogram_meta SET value = '5' WHERE key = 'format_version'")
    runs.clear()
    with Session.open(store, "old", resume=True) as resumed:
        # its repr could stand for any Doc: run again, never the old "summary of HELLO"
        assert summarise(Doc("goodbye")) == "summary of GOODBYE"
        point = make_point(1)  # a dataclass was stored by its fields: still answered
        doc = make_doc("hi")  # a repr stand-in is never handed back
    assert runs == ["summarise goodbye", "make_doc"]
    assert point == Point(1, 2) and isinstance(doc, Doc)
    assert resumed.store.format_version == FORMAT_VERSION  # migrated
    assert resumed.info.old_values_until == 3
    infos = dict(_sql(store, "SELECT id, info FROM openprogram_sessions"))
    assert json.loads(infos["old"]) == {"old_values_until": 3}
    assert json.loads(infos["empty"]) == {}  # nothing recorded the older way


PROGRAM = """
import sys
from openprogram import Session, agentic_function

class Doc:
    def __init__(self, text):
        self.text = text

@agentic_function
def tag(doc: Doc, labels: set) -> str:
    print("ran", flush=True)
    return doc.text + ":" + ",".join(sorted(labels))

store, mode, text = sys.argv[1:4]
session = Session(store, id="run") if mode == "record" else Session.open(store, "run", resume=True)
with session:
    print(tag(Doc(text), {"alpha", "beta", "gamma", "delta", "epsilon"}), flush=True)
"""


@pytest.mark.slow
def test_separate_processes_resume_the_same_values_and_refuse_others(durable_store, tmp_path):
    script = tmp_path / "program.py"
    script.write_text(PROGRAM)
    root = str(Path(__file__).resolve().parents[3])

    def run(mode: str, text: str, seed: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": root, "PYTHONHASHSEED": seed}
        argv = [sys.executable, str(script), str(durable_store), mode, text]
        return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)

    first = run("record", "hello", "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.split() == ["ran", "hello:alpha,beta,delta,epsilon,gamma"]
    again = run("resume", "hello", "2")  # another hash seed: the set iterates otherwise
    assert again.returncode == 0, again.stderr
    assert again.stdout.split() == ["hello:alpha,beta,delta,epsilon,gamma"]  # not run
    other = run("resume", "goodbye", "3")
    assert other.returncode != 0 and "ResumeDivergence" in other.stderr
    assert "hello:" not in other.stdout and "ran" not in other.stdout
