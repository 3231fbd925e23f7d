"""Every HTML report renders through pages' one autoescaping environment: a `<script>` in
a node's name, input, output or a label shows as text in each of them, never as markup."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm, render_context
from openprogram.callbacks._trajectory_report import render_report
from openprogram.core.dag import ContextDAG
from openprogram.display import call_html, context_html, dag_html, node_html, report_html
from openprogram.display.calls import CallView
from openprogram.evals import Case, Dataset, equals
from openprogram.live.page import error_page, listing, session_page
from openprogram.pages import STYLE, render, trusted

EVIL = "<script>alert(1)</script>"
SHOWN = "&lt;script&gt;alert(1)&lt;/script&gt;"


@agentic_function
def write(brief: str) -> str:
    return llm(f"Write about {brief}")


def _recorded() -> Session:
    with Session() as session, Runtime(ScriptedModel([EVIL, EVIL])):
        write(EVIL)
    return session


def _escaped(page: str, *, shown: bool = True) -> None:
    assert EVIL not in page and "<script>alert" not in page
    if shown:
        assert SHOWN in page


def test_the_notebook_views_and_the_session_report_escape_names_inputs_and_replies():
    session = _recorded()
    dag = session.dag
    exchange = dag.find(kind="llm")[0]
    hostile = ContextDAG()
    lone = hostile.add("code", EVIL, input={"text": EVIL})

    _escaped(node_html(lone, hostile))  # a node's name and input
    _escaped(dag_html(hostile, title=EVIL, facts={EVIL: EVIL}))  # the static tree, facts
    _escaped(dag_html(dag), shown=False)  # values ride in the JSON payload, "<" as \u003c
    _escaped(call_html(CallView(dag, exchange)))  # what the call saw, and its reply
    _escaped(context_html(render_context(dag, exchange.parent, content=[EVIL])))
    _escaped(report_html(session, title=EVIL, facts={"label": EVIL}))


def test_the_trajectory_report_escapes_the_run_its_steps_and_exchanges(tmp_path: Path):
    (tmp_path / "request.json").write_text(
        json.dumps({"messages": [{"role": EVIL, "content": [{"type": "text", "text": EVIL}]}]})
    )
    (tmp_path / "reply.json").write_text(json.dumps({"reply": EVIL}))
    meta = {
        "name": EVIL, "status": "completed", "usage": {}, "run_id": EVIL, "session": EVIL,
        "started_at": EVIL, "duration_s": 1.0, "stop_reason": EVIL, "error": EVIL,
        "input": {"task": EVIL}, "output": EVIL, "callback_errors": [EVIL],
    }  # fmt: skip
    steps = {1: {"step": 1, "screenshots": [], "actions": [
        {"index": 0, "action": {"type": EVIL}, "ok": False, "error": EVIL}]}}  # fmt: skip
    exchanges = [{"index": 1, "frame": EVIL, "request": "request.json", "reply": "reply.json"}]

    _escaped(render_report(meta, steps, exchanges, tmp_path))


def test_the_live_pages_escape_session_ids_functions_and_messages():
    info = SimpleNamespace(id=EVIL, created_at=0.0, nodes=3)
    run = SimpleNamespace(state=EVIL, function=EVIL, started_at=1.0, ended_at=None)

    _escaped(listing(f"sqlite:///{EVIL}", [info], {EVIL: {}}, {EVIL: run}, "token"))
    _escaped(session_page(EVIL, dag_html(ContextDAG()), 0, "token"))
    _escaped(error_page(500, EVIL))


def test_the_eval_report_escapes_inputs_outputs_and_names(tmp_path: Path):
    dataset = Dataset(name=EVIL, cases=[Case(inputs={"brief": EVIL}, expected=EVIL, name=EVIL)])
    report = dataset.evaluate(write, [equals], model=ScriptedModel([EVIL]))

    _escaped(report.to_html())
    _escaped(report.write_html(tmp_path / "r.html").read_text(encoding="utf-8"))


def test_only_what_the_caller_marks_trusted_is_placed_as_markup():
    page = render("page.html.j2", title=EVIL, kind="op-page", body=EVIL)
    _escaped(page)
    assert page.count("<style>") == 1 and STYLE in page  # the one stylesheet, in the head
    assert "<b>kept</b>" in render("page.html.j2", title="t", kind="", body=trusted("<b>kept</b>"))
