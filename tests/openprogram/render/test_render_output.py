"""Outputs as later calls see them: render_output, and the default cut of long outputs."""

from __future__ import annotations

import pytest

from openprogram import Runtime, ScriptedModel, Session, UsageError, agentic_function, llm
from openprogram.render.render import render_context, seen_by


@agentic_function(render_output=lambda rows: {"count": len(rows), "first": rows[:2]})
def search(query: str) -> list[str]:
    return [f"{query} result {i}" for i in range(100)]


@agentic_function
def research(query: str) -> str:
    search(query)
    return llm("summarise")


def test_render_output_is_what_later_calls_see_and_the_output_stays_whole():
    model = ScriptedModel(["summary"])
    with Session() as session, Runtime(model):
        research("cats")
    (node,) = session.dag.find(name="search", kind="code")
    assert len(node.output) == 100  # stored whole
    assert node.meta["render_output"] == {"count": 100, "first": ["cats result 0", "cats result 1"]}
    line = (
        '[search #1] input={"query": "cats"} '
        'output={"count": 100, "first": ["cats result 0", "cats result 1"]}'
    )
    assert line in model.requests[0].history
    llm_node = session.dag.find(kind="llm")[0]
    assert line in seen_by(session.dag, llm_node).text()
    assert seen_by(session.dag, llm_node).messages_hash == llm_node.messages_hash


def test_render_output_is_the_tool_result_the_model_gets():
    model = ScriptedModel(
        [{"tool_calls": [{"name": "search", "arguments": {"query": "dogs"}}]}, "done"]
    )
    with Session(), Runtime(model):
        llm("find dogs", tools=[search])
    assert model.requests[1].messages[-1]["content"] == (
        '{"count": 100, "first": ["dogs result 0", "dogs result 1"]}'
    )


def test_a_failing_render_output_falls_back_to_the_whole_output(caplog):
    @agentic_function(render_output=lambda value: value["missing"])
    def broken() -> list[int]:
        return [1, 2]

    with Session() as session:
        assert broken() == [1, 2]
    (node,) = session.dag.find(name="broken")
    assert "render_output" not in node.meta
    assert render_context(session.dag).text() == "[broken #1] input={} output=[1, 2]"
    assert "render_output of broken failed" in caplog.text


def test_render_output_must_be_callable():
    with pytest.raises(UsageError, match="render_output="):
        agentic_function(render_output="short")  # type: ignore[arg-type]


def test_the_default_cut_keeps_whole_items_and_says_how_much_was_left_out():
    @agentic_function
    def listing() -> list[str]:
        return [f"item {i:04d}" for i in range(2000)]

    with Session() as session:
        listing()
    rendered = render_context(session.dag, max_line_chars=1000)
    line = rendered.text()
    assert len(line) < 1200
    assert line.startswith('[listing #1] input={} output=["item 0000", "item 0001",')
    assert ", …] [cut: output: showing " in line
    kept = line.count('"item ')
    assert f"showing {kept} of 2000 items" in line
    assert "characters left out; set render_output= on listing" in line
    (entry,) = rendered.report
    assert entry["kind"] == "truncated" and entry["reason"].startswith(
        f"output: showing {kept} of 2000"
    )


def test_each_line_limit_cuts_the_same_output_for_itself():
    @agentic_function
    def listing() -> list[str]:
        return [f"item {i:04d}" for i in range(2000)]

    with Session() as session:
        listing()
    short = render_context(session.dag, max_line_chars=1000).text()
    longer = render_context(session.dag, max_line_chars=4000).text()
    assert len(short) < 1200 < len(longer) < 4200
    assert render_context(session.dag, max_line_chars=1000).text() == short


def test_a_long_string_output_is_cut_by_characters_saying_how_many():
    @agentic_function
    def page() -> str:
        return "x" * 5000

    with Session() as session:
        page()
    line = render_context(session.dag, max_line_chars=1000).text()
    assert "characters left out; set render_output= on page" in line
    assert line.count("x") < 1000
