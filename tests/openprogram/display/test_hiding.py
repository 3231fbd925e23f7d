"""What the DAG views say was hidden from each llm call, and why, is what
calls.hidden_nodes() says: the payload carries the rules' results, computed once."""

from __future__ import annotations

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.core.dag import ContextDAG
from openprogram.display import HiddenNode, dag_html, hidden_nodes
from openprogram.display.calls import label

from .views import decoded_hidden, payload

SESSIONS = ["every_rule_session", "resumed_session", "rules_session", "tagline_session"]


def expected(dag: ContextDAG) -> dict[int, dict[int, list[object]]]:
    """hidden_nodes() of every llm call, as rows and [code, reason, row of the call the
    reason names], with `{call}` where the reason names that call."""
    row = {node.id: i for i, node in enumerate(dag.nodes)}
    return {
        row[node.id]: {row[h.node.id]: _entry(dag, h, row) for h in hidden_nodes(dag, node)}
        for node in dag.find(kind="llm")
    }


def _entry(dag: ContextDAG, hidden: HiddenNode, row: dict[str, int]) -> list[object]:
    frame = hidden.frame
    if frame is None:
        return [hidden.code, hidden.reason, -1]
    assert label(dag, frame) in hidden.reason
    return [hidden.code, hidden.reason.replace(label(dag, frame), "{call}", 1), row[frame.id]]


@pytest.mark.parametrize("fixture", SESSIONS)
def test_the_payload_hides_what_hidden_nodes_hides_for_every_call(fixture, request):
    dag = request.getfixturevalue(fixture).dag
    data = payload(str(dag_html(dag)))

    assert decoded_hidden(data) == expected(dag)


def test_the_scenario_covers_every_rule_and_both_ways_of_computing(every_rule_session):
    dag = every_rule_session.dag

    codes = {h.code for node in dag.find(kind="llm") for h in hidden_nodes(dag, node)}
    removed = [row[16][1] for row in payload(str(dag_html(dag)))["nodes"] if row[1] == "l"]

    assert codes == {
        "branch", "call_line", "inside", "inside_llm", "own_line", "concurrent", "callers",
        "subcalls",
    }  # fmt: skip
    assert len({node.branch for node in dag.nodes}) == 2
    assert 0 in removed and any(r != 0 for r in removed)  # listed whole, and as changes


def test_hidden_nodes_give_a_code_and_a_reason_for_people(rules_session):
    dag = rules_session.dag
    decide = dag.find(name="decide", kind="llm")[0]

    reasons = {label(dag, h.node): (h.code, h.reason) for h in hidden_nodes(dag, decide)}

    assert reasons["lookup_secret #1"] == ("own_line", "expose='hidden': its own line is not shown")
    assert reasons["user #1"] == ("callers", "outside render_range (callers=2)")


def _loop_session(steps: int) -> Session:
    @agentic_function(render_range={"callers": 0})
    def observe(n: int) -> str:
        return llm(f"what is on screen at {n}?")

    @agentic_function(render_range={"callers": 3})
    def plan(n: int) -> str:
        return llm(f"plan {n}")

    @agentic_function
    def step(n: int) -> str:
        observe(n)
        return plan(n)

    @agentic_function
    def run() -> None:
        for n in range(steps):
            step(n)

    with Session() as session, Runtime(ScriptedModel(lambda r: "ok")):
        run()
    return session


def _hidden_size(steps: int) -> int:
    data = payload(str(dag_html(_loop_session(steps).dag)))
    return sum(len(row[16][1] or ()) + len(row[16][2]) for row in data["nodes"] if row[1] == "l")


@pytest.mark.slow
def test_what_was_hidden_grows_linearly_with_the_run_not_quadratically():
    small, large = _hidden_size(40), _hidden_size(160)

    # every call hides all earlier steps: listed per call, 4x the steps would be 16x
    assert large <= 4.5 * small


def test_a_call_on_a_fresh_fork_is_told_why_by_the_rules_of_its_history():
    @agentic_function
    def ask(question: str) -> str:
        return llm(question)

    with Session() as session, Runtime(ScriptedModel(lambda r: "ok")):
        session.submit("hello")
        ask("why?")
        session.submit("not on the fork")
        dag = session.dag
        dag.branch = dag.new_branch(dag.find(name="ask")[0])
        llm("and now?")  # the branch has no node of its own yet
    call = dag.find(kind="llm")[-1]

    reasons = {label(dag, h.node): h.reason for h in hidden_nodes(dag, call)}

    assert reasons == {
        "ask #1 (llm)": "inside ask #1 (expose='io')",
        "user #2": "on another branch",
    }
    assert call.reads == [dag.find(kind="user")[0].id, dag.find(name="ask")[0].id]
