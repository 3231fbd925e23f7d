"""ImageRetention: the renderer's max_images, with placeholders and report entries."""

from __future__ import annotations

import pytest
from PIL import Image as PILImage

from openprogram import (
    ImageRetention,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    llm,
)
from openprogram.render.render import recorded_report, seen_by
from openprogram.store import FORMAT_VERSION


def shot(color: str) -> PILImage.Image:
    return PILImage.new("RGB", (8, 8), color)


@agentic_function
def look_three_times() -> None:
    for color in ("red", "green", "blue"):
        llm(["what changed?", shot(color)])


def image_parts(messages: list[dict]) -> list[dict]:
    return [
        part
        for message in messages
        if isinstance(message["content"], list)
        for part in message["content"]
        if part["type"] == "image_url"
    ]


def text_of(messages: list[dict]) -> str:
    return str(messages)


def test_older_history_images_become_placeholders_with_omitted_report_entries():
    model = ScriptedModel(["a", "b", "c"])
    with Session() as session, Runtime(model, max_images=None, callbacks=[ImageRetention(1)]):
        look_three_times()
    third = model.requests[2].messages
    assert len(image_parts(third)) == 2  # the newest history image and the current one
    assert text_of(third).count("[image omitted: <image sha256:") == 1
    node = session.dag.find(kind="llm")[2]
    (entry,) = recorded_report(session.dag, node)
    assert entry["kind"] == "omitted"
    assert entry["node_id"] == session.dag.find(kind="llm")[0].id
    assert "only the 1 most recent history images" in entry["reason"]
    assert len(image_parts(model.requests[1].messages)) == 2  # nothing to drop yet


def test_zero_keeps_only_the_current_images_and_the_dag_keeps_every_image():
    model = ScriptedModel(["a", "b", "c"])
    with Session() as session, Runtime(model, callbacks=[ImageRetention(0)]):
        look_three_times()
    assert len(image_parts(model.requests[2].messages)) == 1
    assert len(recorded_report(session.dag, session.dag.find(kind="llm")[2])) == 2
    assert all(n.input[1]["type"] == "image" for n in session.dag.find(kind="llm"))
    assert len(session.dag.blobs) == 3


def test_the_tighter_of_runtime_and_callback_limits_applies():
    assert (
        Runtime(ScriptedModel([]), max_images=1, callbacks=[ImageRetention(5)])._max_images() == 1
    )
    assert (
        Runtime(ScriptedModel([]), max_images=5, callbacks=[ImageRetention(2)])._max_images() == 2
    )


def test_a_negative_limit_is_rejected():
    with pytest.raises(UsageError, match="n=-1"):
        ImageRetention(-1)


@agentic_function(expose="full")  # later steps see its exchange, images and all
def look(i: int) -> str:
    return llm([f"step {i}: what changed?", shot(("red", "green", "blue", "white")[i % 4])])


def test_a_long_run_with_images_stores_each_omitted_entry_once(tmp_path):
    path = tmp_path / "run.db"
    with Session(path) as session, Runtime(ScriptedModel(lambda request: "ok"), max_images=2):
        for i in range(40):
            look(i)
    calls = session.dag.find(kind="llm")
    for node in calls:
        assert recorded_report(session.dag, node) == seen_by(session.dag, node).report
    assert len(recorded_report(session.dag, calls[-1])) == 39 - 2  # all but the newest two
    # stored: the entries no earlier node holds, and where the rest are
    assert sum(len(node.meta.get("report", ())) for node in calls) == 39 - 2
    assert calls[-1].meta["report_base"] == [calls[-2].id, 38 - 2]
    with Session.open(path, session.id) as reopened:
        for node in reopened.dag.find(kind="llm"):
            assert recorded_report(reopened.dag, node) == seen_by(reopened.dag, node).report


def test_a_version_3_store_holding_whole_reports_reads_them_as_they_are(tmp_path):
    import json
    import sqlite3
    from contextlib import closing

    path = tmp_path / "old.db"
    with Session(path) as session, Runtime(ScriptedModel(lambda request: "ok"), max_images=1):
        for i in range(6):
            look(i)
    whole = {node.id: seen_by(session.dag, node).report for node in session.dag.find(kind="llm")}
    # rewrite it as format_version 3 stored it: every node its whole report, no base
    with closing(sqlite3.connect(path)) as connection, connection:
        for node_id, report in whole.items():
            (data,) = connection.execute(
                "SELECT data FROM openprogram_nodes WHERE id = ?", (node_id,)
            ).fetchone()
            fields = json.loads(data)
            fields["meta"].pop("report_base", None)
            fields["meta"]["report"] = report
            connection.execute(
                "UPDATE openprogram_nodes SET data = ? WHERE id = ?", (json.dumps(fields), node_id)
            )
        connection.execute("UPDATE openprogram_meta SET value = '3' WHERE key = 'format_version'")
    with Session.open(path, session.id) as reopened:
        assert reopened.store.format_version == FORMAT_VERSION  # migrated
        for node in reopened.dag.find(kind="llm"):
            assert recorded_report(reopened.dag, node) == whole[node.id]
