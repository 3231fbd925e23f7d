"""Notebook views: self-contained HTML, the payload behind the tree, budgets and scale."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image as PILImage

from openprogram import (
    ContextDAG,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    llm,
    render_context,
)
from openprogram.core.usage import Usage
from openprogram.display import dag_html, node_html
from openprogram.errors import UsageError
from tests.openprogram.display.conftest import screen
from tests.openprogram.display.views import decoded_reads, payload

ROW_ID, ROW_KIND, ROW_NAME, ROW_PARENT, ROW_STATUS = 0, 1, 2, 3, 4
ROW_DURATION, ROW_USAGE, ROW_INPUT, ROW_OUTPUT, ROW_IMAGES, ROW_EXTRA = 8, 9, 11, 12, 13, 15


def test_dag_view_is_self_contained_with_inline_style_and_script(tagline_session):
    html = tagline_session.dag._repr_html_()

    assert "<style>" in html and "<script>" in html
    for remote in ("http://", "https://", "<link", 'src="//', "@import"):
        assert remote not in html


def test_every_node_is_a_row_with_status_duration_tokens_and_cost(tagline_session):
    dag = tagline_session.dag
    data = payload(dag_html(dag))

    assert [row[ROW_ID] for row in data["nodes"]] == [n.id for n in dag.nodes]
    for row, node in zip(data["nodes"], dag.nodes, strict=True):
        assert data["names"][row[ROW_NAME]] == node.name
        assert row[ROW_STATUS] == "c"
        assert row[ROW_DURATION] >= 0
        parent = row[ROW_PARENT]
        assert (data["nodes"][parent][ROW_ID] if parent >= 0 else None) == node.parent
        if node.kind == "llm":
            tokens_in, tokens_out, cost, known = row[ROW_USAGE]
            assert (tokens_in, tokens_out) == (node.usage.input_tokens, node.usage.output_tokens)
            assert cost == node.usage.cost_usd and known is True
    total = data["summary"]
    assert total["kinds"] == {"code": 6, "llm": 7, "user": 1}
    assert total["input_tokens"] == sum(n.usage.input_tokens for n in dag.find(kind="llm"))


def test_reads_decode_to_exactly_what_each_call_read(tagline_session):
    dag = tagline_session.dag
    data = payload(dag_html(dag))
    ids = [row[ROW_ID] for row in data["nodes"]]

    reads = decoded_reads(data)

    for index, node in enumerate(dag.nodes):
        if node.kind == "llm":
            assert [ids[r] for r in reads[index]] == node.reads


def test_reads_are_stored_as_changes_against_the_previous_call():
    @agentic_function
    def step(n: int) -> int:
        return n

    @agentic_function
    def plan(n: int) -> str:
        return llm(f"plan {n}")

    @agentic_function
    def loop() -> None:
        for n in range(40):
            step(n)
            plan(n)

    with Session() as session, Runtime(ScriptedModel(lambda r: "ok")):
        loop()
    data = payload(dag_html(session.dag))
    encoded = [row[14] for row in data["nodes"] if row[ROW_KIND] == "l"]

    assert encoded[0][0] == -1
    assert all(e[0] >= 0 and len(e[1]) + len(e[2]) <= 4 for e in encoded[1:])
    ids = [row[ROW_ID] for row in data["nodes"]]
    last = session.dag.find(kind="llm")[-1]
    assert [ids[r] for r in decoded_reads(data)[len(ids) - 1]] == last.reads


def test_each_image_is_embedded_once_as_a_thumbnail_and_at_full_size(tagline_session):
    data = payload(dag_html(tagline_session.dag, thumbnail_px=128))

    assert len(data["images"]) == 2  # red twice, blue once
    for sha12, width, height, url, full in data["images"]:
        (stored,) = [i for sha, i in tagline_session.dag.blobs.items() if sha.startswith(sha12)]
        assert full == stored.data_url()  # the lossless image itself, for the lightbox
        assert (width, height) == (800, 500)
        header, encoded = url.split(",", 1)
        assert header in ("data:image/jpeg;base64", "data:image/png;base64")
        thumbnail = PILImage.open(io.BytesIO(base64.b64decode(encoded)))
        assert max(thumbnail.size) <= 128
    look_rows = [r for r in data["nodes"] if data["names"][r[ROW_NAME]] == "look"]
    assert [r[ROW_IMAGES] for r in look_rows if r[ROW_KIND] == "c"] == [[0], [0], [1]]


def test_images_past_the_image_budget_are_placeholders(tagline_session):
    data = payload(dag_html(tagline_session.dag, image_budget=1))

    assert [url is not None for *_, url, _full in data["images"]] == [True, False]


def test_full_size_images_past_their_budget_are_left_to_the_thumbnail(tagline_session):
    data = payload(dag_html(tagline_session.dag, full_image_budget=0))

    assert [(url is not None, full) for *_, url, full in data["images"]] == [(True, None)] * 2


def test_a_thumbnail_size_below_16_pixels_is_refused_with_the_fix(tagline_session):
    with pytest.raises(UsageError, match="thumbnail_px=4 is too small; pass 16 or more"):
        dag_html(tagline_session.dag, thumbnail_px=4)


def test_long_values_are_cut_longest_first_to_fit_the_text_budget():
    @agentic_function
    def echo(text: str) -> str:
        return text

    with Session() as session:
        echo("short")
        echo("x" * 50_000)
    data = payload(dag_html(session.dag, text_budget=2_000))
    short, long = data["nodes"]

    assert short[ROW_INPUT] == '{"text": "short"}' and short[ROW_OUTPUT] == '"short"'
    assert long[ROW_OUTPUT].endswith(" chars]") and "… [+" in long[ROW_OUTPUT]
    assert sum(len(r[ROW_INPUT]) + len(r[ROW_OUTPUT]) for r in data["nodes"]) < 2_200
    assert data["cap"] is not None


def test_markup_in_values_cannot_break_out_of_the_view():
    attack = "</script><script>alert(1)</script><!--"

    @agentic_function
    def echo(text: str) -> str:
        return text

    with Session() as session:
        session.submit(attack)
        echo(attack)
    html = dag_html(session.dag, title=attack, facts={"note": attack})

    assert "<script>alert" not in html and "<!--" not in html
    data = payload(html)
    assert data["nodes"][0][ROW_INPUT] == attack
    assert data["title"] == attack


def test_errors_and_running_calls_show_their_state(tagline_session):
    @agentic_function
    def broken() -> None:
        raise RuntimeError("disk full")

    dag = ContextDAG()
    running = dag.add("code", "pending", input={})
    failed = dag.add("code", "broken", input={})
    dag.complete(failed, None, status="error", error="RuntimeError: disk full")
    data = payload(dag_html(dag))

    assert [row[ROW_STATUS] for row in data["nodes"]] == ["r", "e"]
    assert data["nodes"][1][ROW_EXTRA]["err"] == "RuntimeError: disk full"
    assert data["summary"]["statuses"]["error"] == 1
    assert "1</b> errors" in dag_html(dag) and "1</b> running" in dag_html(dag)
    del running


def test_focus_limits_the_tree_to_one_subtree(tagline_session):
    dag = tagline_session.dag
    frame = dag.find(name="write_tagline", kind="code")[0]

    data = payload(dag_html(dag, focus=frame.id, title="one run", facts={"success": True}))

    assert data["nodes"][data["focus"]][ROW_ID] == frame.id
    assert data["summary"]["nodes"] == 7  # the frame's subtree, not the whole session
    assert data["summary"]["kinds"] == {"code": 3, "llm": 4, "user": 0}
    assert data["facts"] == [["success", "true"]]
    assert data["title"] == "one run"


def test_an_llm_node_shows_what_it_saw_inside_and_after_its_session(tagline_session):
    node = tagline_session.dag.find(name="write_tagline", kind="llm")[1]

    html = node._repr_html_()

    assert "what write_tagline #2 (llm) saw" in html
    assert "✓ rebuilt messages match the recorded hash" in html
    assert "Shorter, please." in html and "Short one." in html


def test_a_frame_shows_its_subtree_and_a_lone_node_shows_itself(tagline_session):
    dag = tagline_session.dag
    frame = dag.find(name="write_tagline", kind="code")[0]

    assert payload(frame._repr_html_())["focus"] >= 0
    user = dag.find(kind="user")[0]
    assert "We need a tagline." in node_html(user)
    stranger = ContextDAG().add("code", "alone", input={"a": 1})
    assert (
        "alone" in stranger._repr_html_() and "{&#34;a&#34;: 1}" in stranger._repr_html_()
    )  # escaped


def test_a_rendered_context_shows_messages_each_image_once_and_what_was_left_out():
    @agentic_function
    def watch(shots) -> list[str]:
        return [llm(["look", shot]) for shot in shots]

    red = screen("red")
    with Session() as session, Runtime(ScriptedModel(lambda r: "seen"), max_images=1):
        watch([red, red, screen("blue")])
    dag = session.dag
    frame = dag.find(name="watch", kind="code")[0]

    html = render_context(dag, frame.id, max_images=None, content=["now?"])._repr_html_()
    assert html.count("<img ") == 2
    assert "same image as in message" in html
    html = render_context(dag, frame.id, max_images=2, content=["now?"])._repr_html_()

    assert "context of an llm() call in watch #1" in html
    assert html.count("<img ") == 2
    assert "omitted: image" in html
    assert "now?" in html


@pytest.mark.slow
def test_a_10000_node_dag_is_at_most_5_mb_of_html():
    dag = ContextDAG()
    top = dag.add("code", "gui_agent", input={"task": "fill the form", "max_steps": 2000})
    previous: list[str] = []
    while len(dag) < 10_000:
        step = dag.add("code", "gui_step", parent=top.id, input={"step": len(previous)})
        reads = [top.id, *previous[-200:], step.id]
        call = dag.add("llm", "plan_next_action", parent=step.id, input="plan " * 40, reads=reads)
        call.usage = Usage(input_tokens=1200, output_tokens=40, cost_usd=0.002, calls=1)
        dag.complete(call, '{"type": "click", "x": 10, "y": 20}' * 3)
        dag.complete(step, {"action": {"type": "click"}, "status": "acted", "note": "y" * 200})
        previous.append(step.id)
    html = dag_html(dag)

    assert len(html.encode("utf-8")) <= 5_000_000
    assert len(payload(html)["nodes"]) == len(dag)


def test_a_stopped_run_has_its_own_status_colour_and_count_apart_from_errors():
    from openprogram import RunStopped
    from openprogram.display.export import to_mermaid

    @agentic_function
    def job() -> None:
        raise RunStopped("the budget is spent")

    with Session() as session, pytest.raises(RunStopped):
        job()
    html = dag_html(session.dag)
    data = payload(html)
    (row,) = data["nodes"]
    assert row[ROW_STATUS] == "s"
    assert row[ROW_EXTRA]["stop"] == "the budget is spent"
    assert data["summary"]["statuses"]["stopped"] == 1
    assert data["summary"]["statuses"]["error"] == 0
    assert "<b>1</b> stopped" in html and "errors" not in html.split("<script>")[0]
    assert ".opv-s-s .opv-dot{background:var(--stop)}" in html
    assert "classDef stopped stroke:#bc4c00" in to_mermaid(session.dag)
    assert "■  job #1" in session.dag.tree()
