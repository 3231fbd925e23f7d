"""Tool calls in the views: the DAG payload, the text tree and what a call saw."""

from __future__ import annotations

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.display._payload import build_payload
from openprogram.display.calls import CallView


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _session():
    model = ScriptedModel(
        [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, "three"]
    )
    with Session() as session, Runtime(model):
        llm("1 + 2?", tools=[add])
    return session


def test_the_payload_shows_the_calls_an_llm_node_asked_for_and_tags_the_tool_node():
    session = _session()
    payload = build_payload(session.dag)
    asking, tool, answer = payload["nodes"]
    assert asking[12] == '[calls add({"a": 1, "b": 2})]'
    assert tool[15]["tc"] == "call_1"
    assert answer[12] == "three"


def test_what_a_call_saw_shows_the_tool_call_and_the_labelled_result():
    session = _session()
    view = CallView(session.dag, session.dag.find(kind="llm")[1])
    assert view.verified is True
    html = view._repr_html_()
    assert "→ add({&#34;a&#34;: 1, &#34;b&#34;: 2})  [call_1]" in html  # escaped
    assert "tool [call_1]" in html and "opv-msg-tool" in html
    from openprogram.display.export import to_mermaid

    assert "[calls add" in to_mermaid(session.dag, values=True)
