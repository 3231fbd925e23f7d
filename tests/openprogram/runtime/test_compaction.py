"""Compaction (DESIGN.md §4): render_range={"tokens": N}, recorded summaries, images as text."""

from __future__ import annotations

import asyncio
import logging
import re

import pytest
from PIL import Image as PILImage

from openprogram import (
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    allm,
    count_tokens,
    current_session,
    llm,
    render_context,
    summarize_history,
)
from openprogram.errors import UsageError
from openprogram.render._tokens import counter, image_tokens
from openprogram.render.render import recorded_report, seen_by

BUDGET = 300


def history_tokens(rendered) -> int:
    """The history's size as the budget counts it (offline models: the estimate)."""
    return rendered.fitted.tokens


class Model:
    """Answers plans with "ok" and summaries with a numbered summary; remembers requests."""

    def __init__(self) -> None:
        self.summaries = 0
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        if request.function == "summarize_history":
            self.summaries += 1
            return f"SUMMARY {self.summaries}: steps done so far"
        return "ok"


@agentic_function
def work(step: int) -> str:
    return f"result of step {step}: " + "data " * 20


@agentic_function(render_range={"tokens": BUDGET, "keep": 3})
def plan(step: int) -> str:
    return llm(f"what next after step {step}?")


@agentic_function
def agent(steps: int) -> int:
    for step in range(steps):
        work(step)
        plan(step)
    return steps


def run(steps: int, store=None, **runtime):
    model = Model()
    with Session(store) as session, Runtime(ScriptedModel(model), **runtime):
        agent(steps)
    return session, model


def plan_nodes(session):
    return [n for n in session.dag.find(kind="llm") if n.name == "plan"]


@pytest.mark.slow
def test_every_plan_render_fits_its_token_budget():
    session, _ = run(40)
    for node in plan_nodes(session):
        rendered = seen_by(session.dag, node)
        assert history_tokens(rendered) <= BUDGET
        assert rendered.messages_hash == node.messages_hash


def test_without_a_budget_the_history_grows_with_the_run():
    @agentic_function
    def plain(step: int) -> str:
        return llm(f"what next after step {step}?")

    @agentic_function
    def loop(steps: int) -> None:
        for step in range(steps):
            work(step)
            plain(step)

    with Session() as session, Runtime(ScriptedModel(["ok"] * 40)):
        loop(40)
    last = [n for n in session.dag.find(kind="llm")][-1]
    assert len(last.reads) > 60


def test_summaries_are_recorded_code_nodes_covering_a_range_of_seqs():
    session, model = run(40)
    summaries = session.dag.find(name="summarize_history", kind="code")
    assert summaries and len(summaries) == model.summaries
    for summary in summaries:
        first, last = summary.meta["covers"]
        assert first <= last < summary.seq
        assert summary.status == "completed"
        assert summary.output.startswith("SUMMARY")


def test_a_summary_costs_one_model_call_per_compaction_not_per_step():
    _, model = run(60)
    plans = sum(1 for r in model.requests if r.function == "plan")
    assert plans == 60
    # a summary takes in all but the newest `keep` nodes, so the next ones have room
    assert 1 <= model.summaries <= plans // 2


def test_the_render_shows_the_newest_summary_in_place_of_what_it_covers():
    session, _ = run(30)
    node = plan_nodes(session)[-1]
    rendered = seen_by(session.dag, node)
    lines = rendered.text().splitlines()
    assert lines[0].startswith("[agent #1] input=")  # the stack's call line always shows
    assert lines[1].startswith("[summary of earlier history, seq ")
    assert "SUMMARY" in lines[1]
    summary = rendered.fitted.summary
    assert summary is not None and summary.id in rendered.reads
    compacted = [e for e in rendered.report if e["kind"] == "compacted"]
    assert compacted and all(e["into"] == summary.id for e in compacted)
    assert {e["node_id"] for e in compacted}.isdisjoint(rendered.reads)


def test_the_newest_keep_nodes_are_never_compacted():
    session, _ = run(30)
    node = plan_nodes(session)[-1]
    rendered = seen_by(session.dag, node)
    stack = {node.parent, session.dag.node(node.parent).parent}
    visible = [n for n in rendered.nodes if n.name != "summarize_history" and n.id not in stack]
    newest = visible[-3:]
    assert [n.name for n in newest] == ["work", "plan", "work"]
    assert newest[-1].input == {"step": 29}


def test_recorded_report_lists_every_compacted_node():
    session, _ = run(30)
    node = plan_nodes(session)[-1]
    assert node.meta["compacted"]["covered"] > 0
    entries = [e for e in recorded_report(session.dag, node) if e["kind"] == "compacted"]
    whole = render_context(session.dag, node.parent, {"callers": None}, before=node.seq)
    left_out = {n.id for n in whole.nodes} - set(seen_by(session.dag, node).reads)
    assert {e["node_id"] for e in entries} == left_out
    assert len(entries) == len(left_out) >= node.meta["compacted"]["covered"]


@pytest.mark.slow
def test_summaries_never_show_as_ordinary_history():
    session, _ = run(30)
    node = plan_nodes(session)[-1]
    full = render_context(session.dag, node.parent, {"callers": None}, before=node.seq)
    assert "summarize_history" not in full.text()


def test_a_failing_compactor_drops_history_and_says_so(caplog):
    @agentic_function
    def broken_summary(text: str) -> str:
        raise RuntimeError("summariser down")

    caplog.set_level(logging.WARNING, logger="openprogram")
    session, _ = run(30, compactor=broken_summary)
    assert "the compactor broken_summary failed" in caplog.text
    node = plan_nodes(session)[-1]
    rendered = seen_by(session.dag, node)
    assert history_tokens(rendered) <= BUDGET
    dropped = [e for e in rendered.report if e.get("into") == "dropped"]
    assert dropped and all("dropped" in e["reason"] for e in dropped)


def test_a_function_compactor_wins_over_the_runtimes():
    calls = []

    @agentic_function
    def short(text: str) -> str:
        calls.append(text)
        return "short summary"

    @agentic_function(render_range={"tokens": BUDGET, "keep": 2}, compactor=short)
    def plan2(step: int) -> str:
        return llm(f"next after {step}?")

    @agentic_function
    def agent2(steps: int) -> None:
        for step in range(steps):
            work(step)
            plan2(step)

    with Session() as session, Runtime(ScriptedModel(["ok"] * 30)):
        agent2(30)
    assert calls and "result of step 0" in calls[0]
    assert session.dag.find(name="short")[0].meta["covers"][0] >= 1


def test_compactor_must_be_an_agentic_function():
    with pytest.raises(UsageError, match="must be an @agentic_function"):
        Runtime(ScriptedModel(["ok"]), compactor=lambda text: text)
    with pytest.raises(ValueError, match="must be an @agentic_function"):
        agentic_function(compactor=len)


@pytest.mark.parametrize(
    "window",
    [{"tokens": 0}, {"tokens": "many"}, {"tokens": 10, "keep": -1}, {"tokens": True}],
)
def test_invalid_token_budgets_are_refused(window):
    with pytest.raises(ValueError, match="render_range"):
        agentic_function(render_range=window)


def test_render_range_with_tokens_reads_like_the_decorators_dict():
    assert plan.render_range == {"callers": None, "subcalls": -1, "tokens": BUDGET, "keep": 3}
    session, _ = run(1)
    frame = session.dag.find(name="plan", kind="code")[0]
    assert frame.render_range == {"tokens": BUDGET, "keep": 3}


def test_a_tool_call_and_its_result_are_never_split():
    @agentic_function
    def lookup(key: str) -> str:
        """Look a key up."""
        return f"value of {key} " + "v" * 200

    @agentic_function(expose="full", render_range={"tokens": 250, "keep": 1})
    def ask(step: int) -> str:
        return llm(f"step {step}", tools=[lookup])

    @agentic_function
    def outer(steps: int) -> None:
        for step in range(steps):
            ask(step)

    def reply(request):
        if request.function == "summarize_history":
            return "earlier: lookups"
        if request.messages[-1]["role"] == "tool":
            return "done"
        return {"tool_calls": [{"name": "lookup", "arguments": {"key": "k"}}]}

    with Session() as session, Runtime(ScriptedModel(reply)):
        outer(12)
    compacted = 0
    for node in session.dag.find(kind="llm"):
        if node.name != "ask":
            continue
        rendered = seen_by(session.dag, node)
        compacted += len(rendered.fitted.covered) + len(rendered.fitted.dropped)
        shown = set(rendered.reads)
        for tool in session.dag.find(name="lookup"):
            asker = tool.meta["asked_by"]
            if tool.seq < node.seq and asker != node.id and tool.id in shown:
                assert asker in shown
            if asker in shown and tool.seq < node.seq:
                assert tool.id in shown or tool.id in rendered.fitted.compactable
    assert compacted > 0


@pytest.mark.slow
def test_resume_reuses_recorded_summaries(tmp_path):
    store = tmp_path / "run.db"
    first_session, first = run(30, store=store)
    assert first.summaries > 0
    model = Model()
    with (
        Session.open(store, first_session.id, resume=True),
        Runtime(ScriptedModel(model)),
    ):
        agent(30)
    assert model.summaries == 0 and model.requests == []


def test_allm_compacts_without_blocking_the_loop():
    @agentic_function(render_range={"tokens": BUDGET, "keep": 2})
    async def aplan(step: int) -> str:
        return await allm(f"what next after {step}?")

    @agentic_function
    async def aagent(steps: int) -> None:
        for step in range(steps):
            work(step)
            await aplan(step)

    model = Model()
    with Session() as session, Runtime(ScriptedModel(model)):
        asyncio.run(aagent(30))  # filterwarnings=error: a blocked loop would fail this
    assert model.summaries > 0
    assert session.dag.find(name="summarize_history")[0].meta["covers"]


def test_summarize_history_is_an_llm_leaf_that_sees_only_its_text():
    model = Model()
    with Session() as session, Runtime(ScriptedModel(model)):
        summarize_history("step 1: clicked Save")
    (request,) = model.requests
    assert request.rendered.nodes[-1].name == "summarize_history"
    assert "clicked Save" in request.text
    assert len(session.dag.find(kind="llm")) == 1


def test_images_past_max_images_become_their_description():
    screen = PILImage.new("RGB", (64, 48), "white")

    @agentic_function(expose="full")
    def look(step: int) -> str:
        part = {"type": "image", "image": screen, "description": f"[1] button 'Save' {step}"}
        return llm([f"step {step}", part])

    @agentic_function
    def looker() -> None:
        for step in range(3):
            look(step)

    with Session() as session, Runtime(ScriptedModel(["ok"] * 3), max_images=1):
        looker()
    last = session.dag.find(kind="llm")[-1]
    texts = [
        part.get("text", "")
        for message in seen_by(session.dag, last).messages
        if isinstance(message["content"], list)
        for part in message["content"]
    ]
    assert any("it showed:\n[1] button 'Save' 0" in text for text in texts)


@pytest.mark.slow
def test_token_counts_use_litellm_for_its_models_and_an_estimate_offline():
    assert counter("scripted").text("a" * 400) == 100
    assert counter("openai/gpt-4o-mini").exact
    assert counter("openai/gpt-4o-mini").text("hello world") < 5
    assert image_tokens(1280, 800) == 85 + 170 * 6  # 1229x768: 3x2 tiles
    assert image_tokens(512, 512) == 85 + 170


def test_call_views_say_what_was_compacted_into_what():
    from openprogram.display import CallView

    session, _ = run(30)
    node = plan_nodes(session)[-1]
    groups = {group.rule: group for group in CallView(session.dag, node).hidden_groups()}
    compacted = [rule for rule in groups if rule.startswith("compacted into summarize_history")]
    assert compacted, list(groups)
    assert "tokens=300" in compacted[0]


def test_sessions_render_prints_one_line_per_summary_not_per_node(tmp_path):
    from click.testing import CliRunner

    from openprogram.cli import cli

    store = tmp_path / "run.db"
    session, _ = run(30, store=store)
    result = CliRunner().invoke(
        cli, ["sessions", "render", session.id, "llm:plan#30", "--store", str(store)]
    )
    assert result.exit_code == 0, result.output
    assert "[summary of earlier history, seq " in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("(compacted")]
    assert len(lines) == 1 and "nodes: replaced by summary" in lines[0]


def test_replay_answers_summaries_from_the_record():
    from openprogram import ReplayModel

    session, first = run(30)
    with Session(), Runtime(ReplayModel(session)):
        agent(30)  # a summary asked for again would be a ReplayMismatch
    assert first.summaries > 0


def test_count_tokens_counts_content_and_sent_messages_alike():
    screen = PILImage.new("RGB", (800, 600), "white")
    content = ["a" * 40, {"type": "image", "image": screen}]
    assert count_tokens(content) == 10 + image_tokens(800, 600)
    with Session(), Runtime(ScriptedModel(["ok"])):
        agentic_function(lambda: llm(content))()
        node = current_session().dag.find(kind="llm")[0]
        messages = seen_by(current_session().dag, node).messages
    (message,) = messages  # the call line, the text and the image, merged
    line = message["content"][0]["text"]
    assert count_tokens(messages) == 4 + count_tokens(line) + 10 + image_tokens(800, 600)


def test_a_huge_image_description_is_cut_in_its_placeholder():
    screen = PILImage.new("RGB", (32, 32), "white")
    huge = "component " * 1_000_000  # 10 MB

    @agentic_function(expose="full")
    def look(step: int) -> str:
        return llm([f"step {step}", {"type": "image", "image": screen, "description": huge}])

    @agentic_function
    def looker() -> None:
        for step in range(2):
            look(step)

    with Session() as session, Runtime(ScriptedModel(["ok"] * 2), max_images=0):
        looker()
    last = session.dag.find(kind="llm")[-1]
    sent = str(seen_by(session.dag, last).messages)
    assert "it showed:" in sent and "[cut " in sent
    assert len(sent) < 100_000


@agentic_function
async def private(owner: str, k: int) -> str:
    return f"PRIVATE-{owner}-{k} " + "x " * 30


async def steps(owner: str) -> str:
    for k in range(6):
        await private(owner, k)
        await allm(f"{owner} step {k}")
    return f"RESULT-{owner}"


@agentic_function(render_range={"tokens": 200, "keep": 2})
async def worker_a() -> str:
    return await steps("a")


@agentic_function(render_range={"tokens": 200, "keep": 2})
async def worker_b() -> str:
    return await steps("b")


@agentic_function(render_range={"tokens": 200, "keep": 2})
async def worker(owner: str) -> str:
    return await steps(owner)


def gathered(worker_a, worker_b):
    """A parent with a budget of its own, running two budgeted workers concurrently; the
    requests each frame sent, by function name."""
    sent: dict[str, list[str]] = {}

    def reply(request):
        text = " ".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part)
            for message in request.messages
            for part in (
                message["content"] if isinstance(message["content"], list) else [message["content"]]
            )
        )
        sent.setdefault(request.function, []).append(text)
        if request.function == "summarize_history":
            return "SUMMARY of " + " ".join(
                sorted(set(re.findall(r"(?:PRIVATE|RESULT)-\S+", text)))
            )
        return "ok"

    @agentic_function(render_range={"tokens": 120, "keep": 1})
    async def parent() -> str:
        for k in range(3):
            await private("p", k)
        await asyncio.gather(worker_a(), worker_b())
        return await allm("what did the workers find?")

    with Session() as session, Runtime(ScriptedModel(reply)):
        asyncio.run(parent())
    return session, sent


def test_summaries_stay_in_the_frame_they_were_made_for_under_gather():
    session, sent = gathered(worker_a, worker_b)
    parent_sees = sent["parent"][-1]
    assert "PRIVATE-a" not in parent_sees and "PRIVATE-b" not in parent_sees
    assert "RESULT-a" in parent_sees and "RESULT-b" in parent_sees
    assert not any("PRIVATE-b" in text for text in sent["worker_a"])
    assert not any("PRIVATE-a" in text for text in sent["worker_b"])
    for summary in session.dag.find(name="summarize_history", kind="code"):
        made_for = session.dag.get(summary.parent)
        owner = made_for.name.removeprefix("worker_")
        other = {"a": "b", "b": "a"}.get(owner, "?")
        assert f"PRIVATE-{other}" not in summary.output, (made_for.name, summary.output)


def test_calls_of_one_function_under_gather_share_only_what_came_before_them():
    _, sent = gathered(lambda: worker("a"), lambda: worker("b"))
    parent_sees = sent["parent"][-1]
    assert "PRIVATE-a" not in parent_sees and "PRIVATE-b" not in parent_sees
    assert "RESULT-a" in parent_sees and "RESULT-b" in parent_sees
    for text in sent["worker"]:
        assert not ("PRIVATE-a" in text and "PRIVATE-b" in text), text


def lookup(key: int) -> str:
    """Look a key up."""
    return f"value of {key}: " + "data " * 10


def tool_loop_model(turns: int, result_words: int = 10):
    """Asks for `lookup` `turns` times, then answers; summaries as "SUMMARY"."""
    asked = []

    def reply(request):
        if request.function == "summarize_history":
            return "SUMMARY: keys looked up so far"
        asked.append(request)
        if len(asked) <= turns:
            return {"tool_calls": [{"name": "lookup", "arguments": {"key": len(asked)}}]}
        return "done"

    return ScriptedModel(reply), asked


@agentic_function(render_range={"tokens": 1500})
def look_up_all() -> str:
    return llm("look up keys until told to stop", tools=[lookup], max_tool_turns=1000)


@pytest.mark.slow
def test_a_tool_loop_holds_its_token_budget_with_recorded_summaries():
    model, asked = tool_loop_model(200)
    with Session() as session, Runtime(model):
        assert look_up_all() == "done"
    assert len(asked) == 201
    turns = session.dag.find(kind="llm", name="look_up_all")
    history = [seen_by(session.dag, n).fitted.tokens for n in turns[-20:]]
    assert max(history) <= 1500
    assert max(count_tokens(r.messages, model="scripted") for r in asked) <= 1500 + 20
    summaries = session.dag.find(name="summarize_history", kind="code")
    assert summaries and all(s.meta["covers"] for s in summaries)
    frame = session.dag.find(name="look_up_all")[0]
    assert {s.parent for s in summaries} == {frame.id}
    last = session.dag.find(kind="llm", name="look_up_all")[-1]
    kinds = {entry["kind"] for entry in recorded_report(session.dag, last)}
    assert "compacted" in kinds and "over_budget" not in kinds
    assert "SUMMARY" in str(asked[-1].messages)


@pytest.mark.slow
def test_a_tool_loop_under_allm_holds_its_token_budget_too():
    model, asked = tool_loop_model(60)

    @agentic_function(render_range={"tokens": 600})
    async def alook_up_all() -> str:
        return await allm("look up keys", tools=[lookup], max_tool_turns=100)

    with Session() as session, Runtime(model):
        assert asyncio.run(alook_up_all()) == "done"
    assert max(count_tokens(r.messages, model="scripted") for r in asked) <= 600 + 20
    assert session.dag.find(name="summarize_history", kind="code")


def test_a_budget_a_tool_loop_cannot_hold_is_said_so_in_a_warning_and_the_report():
    def huge(key: int) -> str:
        """Return a lot."""
        return "word " * 400

    asked = []

    def reply(request):
        if request.function == "summarize_history":
            return "SUMMARY"
        asked.append(request)
        if len(asked) <= 3:
            return {"tool_calls": [{"name": "huge", "arguments": {"key": len(asked)}}]}
        return "done"

    @agentic_function(render_range={"tokens": 100, "keep": 0})
    def read_huge() -> str:
        return llm("read", tools=[huge])

    with (
        Session() as session,
        Runtime(ScriptedModel(reply)),
        pytest.warns(
            UserWarning, match=r"read_huge: the history needs \d+ tokens, over tokens=100"
        ),
    ):
        read_huge()
    last = session.dag.find(kind="llm", name="read_huge")[-1]
    entries = [e for e in recorded_report(session.dag, last) if e["kind"] == "over_budget"]
    assert len(entries) == 1 and "tokens=100" in entries[0]["reason"]


@pytest.mark.slow
def test_resume_and_replay_reuse_a_tool_loops_summaries(tmp_path):
    from openprogram import ReplayModel

    store = tmp_path / "run.db"
    model, _ = tool_loop_model(40)
    with Session(store) as first, Runtime(model):
        look_up_all()
    assert first.dag.find(name="summarize_history", kind="code")
    nothing = ScriptedModel([])
    with Session.open(store, first.id, resume=True), Runtime(nothing):
        assert look_up_all() == "done"
    assert nothing.requests == []
    with Session(), Runtime(ReplayModel(first)):
        assert look_up_all() == "done"


def test_a_streamed_tool_loop_holds_its_token_budget_too():
    model, asked = tool_loop_model(60)

    @agentic_function(render_range={"tokens": 600})
    def stream_look_up_all() -> str:
        return "".join(llm("look up keys", tools=[lookup], max_tool_turns=100, stream=True))

    with Session() as session, Runtime(model):
        assert stream_look_up_all() == "done"
    assert max(count_tokens(r.messages, model="scripted") for r in asked) <= 600 + 20
    assert session.dag.find(name="summarize_history", kind="code")
