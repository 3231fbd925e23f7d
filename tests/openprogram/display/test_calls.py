"""What one llm call saw: rebuilt exactly, hidden nodes with their rule, diffs."""

from __future__ import annotations

import asyncio

import pytest

from openprogram import Runtime, ScriptedModel, Session, agentic_function, allm, llm
from openprogram.display import CallView, context_diff, hidden_nodes, previous_call, rebuild_context
from openprogram.display.calls import label, resolve_node
from openprogram.errors import UsageError


def names(dag, nodes) -> list[str]:
    return [label(dag, n) for n in nodes]


def test_rebuilt_context_matches_the_hash_recorded_when_the_call_was_made(tagline_session):
    dag = tagline_session.dag
    for node in dag.find(kind="llm"):
        rendered = rebuild_context(dag, node)
        assert rendered.messages_hash == node.messages_hash, label(dag, node)
        assert rendered.reads == node.reads


def test_rebuilt_context_keeps_runtime_and_frame_system_text_once(tagline_session):
    dag = tagline_session.dag
    first = dag.find(name="write_tagline", kind="llm")[0]

    messages = rebuild_context(dag, first).messages

    assert messages[0] == {"role": "system", "content": "Be brief.\n\nWrite short taglines."}


def test_rebuilt_context_finds_the_image_limit_the_runtime_used():
    @agentic_function
    def watch(shots):
        return [llm(["look", shot]) for shot in shots]

    from tests.openprogram.display.conftest import screen

    with Session() as session, Runtime(ScriptedModel(lambda r: "ok"), max_images=1):
        watch([screen(c) for c in ("red", "green", "blue")])
    dag = session.dag
    last = dag.find(kind="llm")[-1]

    view = CallView(dag, last)

    assert view.verified is True
    assert [e["kind"] for e in view.rendered.report] == ["omitted"]


def test_hidden_nodes_name_the_rule_that_hid_each_node(rules_session):
    dag = rules_session.dag
    decide_llm = dag.find(name="decide", kind="llm")[0]

    reasons = {label(dag, h.node): h.reason for h in hidden_nodes(dag, decide_llm)}

    assert reasons == {
        "user #1": "outside render_range (callers=2)",
        "agent #1": "outside render_range (callers=2)",
        "lookup_secret #1": "expose='hidden': its own line is not shown",
        "research #1": "outside render_range (callers=2)",
        "summarise #1 (llm)": "inside summarise #1 (expose='io')",
    }
    assert names(dag, [dag.node(r) for r in decide_llm.reads]) == [
        "research #1 (llm)",
        "summarise #1",
        "decide #1",
    ]


def test_hidden_nodes_group_by_rule_with_the_calls_that_hid_them(rules_session):
    dag = rules_session.dag
    view = CallView(dag, dag.find(name="decide", kind="llm")[0])

    groups = {g.rule: (names(dag, g.frames), names(dag, g.nodes)) for g in view.hidden_groups()}

    assert groups == {
        "outside render_range (callers=2)": ([], ["user #1", "agent #1", "research #1"]),
        "expose='hidden': its own line is not shown": ([], ["lookup_secret #1"]),
        "inside summarise (expose='io')": (["summarise #1"], ["summarise #1 (llm)"]),
    }


def test_hidden_nodes_and_reads_together_cover_every_earlier_node(tagline_session):
    dag = tagline_session.dag
    for node in dag.find(kind="llm"):
        hidden = {h.node.id for h in hidden_nodes(dag, node)}
        earlier = {n.id for n in dag.nodes if n.seq < node.seq}
        assert hidden | set(node.reads) == earlier
        assert not hidden & set(node.reads)


def test_a_walled_off_leaf_sees_nothing_of_its_callers(tagline_session):
    dag = tagline_session.dag
    second_review = dag.find(name="review", kind="llm")[1]

    view = CallView(dag, second_review)

    assert names(dag, [dag.node(r) for r in second_review.reads]) == ["review #2"]
    assert set(view.hidden_by_reason()) == {
        "outside render_range (callers=0)",
        "inside review #1 (expose='io')",
    }


def test_a_quiet_function_and_the_insides_of_a_finished_call_are_explained():
    @agentic_function(expose="llm")
    def quiet() -> str:
        return llm("quiet")

    @agentic_function
    def inner(n: int) -> str:
        return llm(f"inner {n}")

    @agentic_function
    def outer() -> str:
        quiet()
        inner(1)
        return inner(2)

    with Session() as session, Runtime(ScriptedModel(lambda r: "ok")):
        outer()
    dag = session.dag
    second = dag.find(name="inner", kind="llm")[1]

    reasons = {label(dag, h.node): h.reason for h in hidden_nodes(dag, second)}

    assert reasons == {
        "quiet #1": "expose='llm': its own line is not shown",
        "inner #1 (llm)": "inside inner #1 (expose='io')",
    }


def test_a_concurrent_sibling_that_started_later_is_explained():
    second_done = asyncio.Event()

    @agentic_function
    async def worker(n: int) -> str:
        if n == 1:  # starts first, asks last: after the later sibling has asked
            await second_done.wait()
            return await allm(f"work {n}")
        reply = await allm(f"work {n}")
        second_done.set()
        return reply

    @agentic_function
    async def outer() -> list[str]:
        return await asyncio.gather(worker(1), worker(2))

    async def run() -> None:
        with Runtime(ScriptedModel(lambda r: "ok")):
            await outer()

    with Session() as session:
        asyncio.run(run())
    dag = session.dag
    slow = dag.find(name="worker", kind="llm")
    slow_call = next(n for n in slow if dag.node(n.parent).input["n"] == 1)

    reasons = {label(dag, h.node): h.reason for h in hidden_nodes(dag, slow_call)}

    assert reasons["worker #2"] == "concurrent: started after worker #1"


def test_a_fork_never_sees_the_other_branch():
    with Session() as session, Runtime(ScriptedModel(lambda r: "ok")):
        first = session.submit("first")
        session.submit("second on main")
    fork = session.fork(at=first.id)
    with fork, Runtime(ScriptedModel(lambda r: "ok")):
        fork.submit("on the fork")
        llm("top-level question")
    dag = fork.dag
    question = dag.find(kind="llm")[0]

    visible = {dag.node(r).input for r in question.reads}
    hidden = {h.node.input: h.reason for h in hidden_nodes(dag, question)}

    assert visible == {"first", "on the fork"}
    assert hidden == {}  # the fork's DAG holds no nodes of main's later history


def test_diff_shows_what_changed_since_the_previous_call_of_the_same_function(tagline_session):
    dag = tagline_session.dag
    redraft = dag.find(name="write_tagline", kind="llm")[1]

    view = CallView(dag, redraft)

    assert view.previous is previous_call(dag, redraft)
    assert view.previous is dag.find(name="write_tagline", kind="llm")[0]
    added = [line.text for line in view.diff if line.op == "+"]
    removed = [line.text for line in view.diff if line.op == "-"]
    assert "  Shorter, please." in added
    assert "  Write a tagline for coffee." in removed
    assert any(text.startswith("[review #1]") for text in added)
    kept = [line.text for line in view.diff if line.op == " "]
    assert kept[0] == "user: We need a tagline."


def test_context_diff_of_a_render_with_itself_changes_nothing(tagline_session):
    dag = tagline_session.dag
    rendered = rebuild_context(dag, dag.find(kind="llm")[0])

    assert all(line.op == " " for line in context_diff(rendered, rendered))


def test_the_first_call_of_a_function_has_no_previous_call_and_no_diff(tagline_session):
    dag = tagline_session.dag
    view = CallView(dag, dag.find(name="look", kind="llm")[0])

    assert view.previous is None
    assert view.diff == []


def test_call_views_are_for_llm_nodes_only(tagline_session):
    dag = tagline_session.dag
    code = dag.find(name="write_tagline", kind="code")[0]

    with pytest.raises(UsageError, match="pass an llm node"):
        CallView(dag, code)


@pytest.mark.parametrize(
    ("reference", "expected"),
    [
        ("write_tagline#1", "write_tagline #1"),
        ("llm:write_tagline#2", "write_tagline #2 (llm)"),
        ("llm:review#1", "review #1 (llm)"),
        ("user#1", "user #1"),
    ],
)
def test_nodes_are_found_by_name_and_ordinal(tagline_session, reference, expected):
    dag = tagline_session.dag

    assert label(dag, resolve_node(dag, reference)) == expected


def test_nodes_are_found_by_id_and_unique_prefix(tagline_session):
    dag = tagline_session.dag
    node = dag.nodes[3]

    assert resolve_node(dag, node.id) is node
    prefix = next(
        node.id[:k]
        for k in range(4, 17)
        if sum(n.id.startswith(node.id[:k]) for n in dag.nodes) == 1
    )
    assert resolve_node(dag, prefix) is node


@pytest.mark.parametrize(
    ("reference", "message"),
    [("review#9", "use #1 to #2"), ("nothing-like-this", "give a node id")],
)
def test_unknown_node_references_say_how_to_name_a_node(tagline_session, reference, message):
    with pytest.raises(UsageError, match=message):
        resolve_node(tagline_session.dag, reference)


def test_the_call_view_shows_a_per_call_render_range_override():
    @agentic_function
    def asker() -> str:
        llm("first")
        return llm("second", render_range={"callers": 0, "subcalls": 0})

    with Session() as session, Runtime(ScriptedModel(["a", "b"])):
        session.submit("hello")
        asker()
    second = session.dag.find(kind="llm")[-1]
    view = CallView(session.dag, second)
    assert view.verified
    assert view.rendered.text().splitlines() == ["[asker #1] input={}"]


def test_a_diff_of_multi_line_prompts_shows_only_the_lines_that_changed():
    from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm

    @agentic_function(render_range={"callers": 0})
    def plan(components: list[str]) -> str:
        return llm("Components:\n" + "\n".join(components) + "\nWhich one?")

    with Session() as session, Runtime(ScriptedModel(lambda r: "1")):
        plan([f"{i}. button 'B{i}'" for i in range(1, 30)])
        plan([f"{i}. button 'B{i}'" if i != 7 else "7. checkbox 'Subscribe'" for i in range(1, 30)])
    second = session.dag.find(name="plan", kind="llm")[1]

    changed = [line for line in CallView(session.dag, second).diff if line.op != " "]

    prompt = [(line.op, line.text) for line in changed if not line.text.startswith("[plan #")]
    assert prompt == [("-", "  7. button 'B7'"), ("+", "  7. checkbox 'Subscribe'")]


def test_the_compacted_count_of_the_hidden_view_is_the_renders_and_old_summaries_are_apart():
    @agentic_function
    def step(i: int) -> str:
        return f"result {i} " + "x" * 40

    @agentic_function(render_range={"tokens": 400})
    def agent(n: int) -> str:
        out = ""
        for i in range(n):
            step(i)
            if i % 50 == 49:
                out = llm(f"progress at {i}?")
        return out

    def reply(request):
        return "summary so far" if request.function == "summarize_history" else "ok"

    with Session() as session, Runtime(ScriptedModel(reply)):
        agent(200)
    dag = session.dag
    last = [n for n in dag.find(kind="llm") if n.name == "agent"][-1]
    view = CallView(dag, last)
    reported = {e["node_id"] for e in view.rendered.report if e["kind"] == "compacted"}
    groups = {g.rule.split(" ")[0]: {n.id for n in g.nodes} for g in view.hidden_groups()}
    assert groups["compacted"] == reported  # the same nodes, so the same count
    older = groups["an"]  # "an older summary, superseded by summarize_history"
    assert older and all(dag.node(i).name == "summarize_history" for i in older)
