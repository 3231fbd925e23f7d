"""render_context: one test per rule of DESIGN.md §4, plus the worked example."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage

from openprogram import (
    ContextDAG,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    allm,
    llm,
    render_context,
)
from openprogram.errors import UsageError


def names(rendered) -> list[str]:
    return rendered.text().splitlines()


def recorder():
    """A ScriptedModel that answers "ok" and keeps, per function, what each call saw."""
    seen: dict[str, list[str]] = {}

    def reply(request):
        seen.setdefault(request.function or "main", []).append(request.history)
        return "ok"

    return ScriptedModel(reply), seen


# -- the worked example ----------------------------------------------------------------------


@agentic_function(render_range={"callers": 0})
def observe(step):
    return {"components": step}


@agentic_function(render_range={"callers": 0})
def verify_step(step):
    return {"ok": llm(f"did step {step - 1} work?")}


@agentic_function
def plan_next_action(step):
    return {"action": llm(f"plan step {step}")}


@agentic_function
def dispatch_action(action):
    return {"done": True}


@agentic_function
def gui_step(task, step):
    observe(step)
    if step > 1:
        verify_step(step)
    action = plan_next_action(step)
    dispatch_action(action)
    return {"step": step, "action": action}


@agentic_function
def gui_agent(task, max_steps=15):
    for step in range(1, 6):
        gui_step(task, step)
    return "finished"


def test_worked_example_plan_next_action_5_sees_prior_steps_io_and_its_own_round():
    model, seen = recorder()
    with Session() as session, Runtime(model):
        session.submit("fill the form")
        gui_agent("fill the form")
    plan_5 = seen["plan_next_action"][4]
    assert plan_5.splitlines() == [
        "user: fill the form",
        '[gui_agent #1] input={"task": "fill the form", "max_steps": 15}',
        '[gui_step #1] input={"task": "fill the form", "step": 1} '
        'output={"step": 1, "action": {"action": "ok"}}',
        '[gui_step #2] input={"task": "fill the form", "step": 2} '
        'output={"step": 2, "action": {"action": "ok"}}',
        '[gui_step #3] input={"task": "fill the form", "step": 3} '
        'output={"step": 3, "action": {"action": "ok"}}',
        '[gui_step #4] input={"task": "fill the form", "step": 4} '
        'output={"step": 4, "action": {"action": "ok"}}',
        '[gui_step #5] input={"task": "fill the form", "step": 5}',
        '[observe #5] input={"step": 5} output={"components": 5}',
        '[verify_step #4] input={"step": 5} output={"ok": "ok"}',
        '[plan_next_action #5] input={"step": 5}',
    ]


def test_worked_example_verify_step_sees_only_its_own_call_line():
    model, seen = recorder()
    with Session() as session, Runtime(model):
        session.submit("fill the form")
        gui_agent("fill the form")
    assert [h.splitlines() for h in seen["verify_step"]] == [
        [f'[verify_step #{k}] input={{"step": {k + 1}}}'] for k in range(1, 5)
    ]


def test_rebuilding_with_before_gives_exactly_what_each_llm_node_saw():
    model, _ = recorder()
    with Session() as session, Runtime(model):
        gui_agent("t")
    dag = session.dag
    for node in dag.find(kind="llm"):
        rebuilt = render_context(dag, node.parent, before=node.seq, content=node.input)
        assert rebuilt.reads == node.reads
        assert rebuilt.messages_hash == node.messages_hash


# -- rule 1: branch --------------------------------------------------------------------------


def test_forked_branch_never_sees_the_other_branches_nodes():
    dag = ContextDAG()
    a = dag.add("code", "first", input={}, status="completed")
    b = dag.add("code", "second", input={}, status="completed")
    fork = dag.new_branch(a, "alt")
    dag.branch = "alt"
    c = dag.add("code", "third", input={})
    rendered = render_context(dag, c.id)
    assert [n.id for n in rendered.nodes] == [a.id, c.id]
    assert b.id not in rendered.reads
    dag.branch = "main"
    assert [n.id for n in render_context(dag).nodes] == [a.id, b.id]
    assert fork == "alt" and c.predecessor == a.id


# -- rule 2: stack nodes ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expose", "shown"), [("io", True), ("full", True), ("llm", False), ("hidden", False)]
)
def test_stack_frames_show_as_call_lines_unless_llm_or_hidden(expose, shown):
    model, seen = recorder()

    @agentic_function
    def leaf():
        return llm("hi")

    @agentic_function(expose=expose)
    def outer(x):
        return leaf()

    with Session(), Runtime(model):
        outer(1)
    lines = seen["leaf"][0].splitlines()
    assert ('[outer #1] input={"x": 1}' in lines) is shown
    assert lines[-1] == "[leaf #1] input={}"


# -- rule 3: interior chain per expose mode --------------------------------------------------


def _finished_child(expose):
    model, seen = recorder()

    @agentic_function
    def grandchild():
        return "g"

    @agentic_function(expose=expose)
    def child():
        grandchild()
        return llm("inside child")

    @agentic_function
    def later():
        return llm("after")

    @agentic_function
    def parent():
        child()
        return later()

    with Session(), Runtime(model):
        parent()
    return seen["later"][0].splitlines()


def test_io_child_shows_its_call_and_result_never_its_insides():
    assert _finished_child("io") == [
        "[parent #1] input={}",
        '[child #1] input={} output="ok"',
        "[later #1] input={}",
    ]


def test_full_child_shows_everything_inside_it():
    assert _finished_child("full") == [
        "[parent #1] input={}",
        '[child #1] input={} output="ok"',
        '[grandchild #1] input={} output="g"',
        "assistant: ok",
        "[later #1] input={}",
    ]


def test_llm_child_shows_only_its_direct_llm_exchanges():
    assert _finished_child("llm") == [
        "[parent #1] input={}",
        "assistant: ok",
        "[later #1] input={}",
    ]


def test_hidden_child_shows_nothing():
    assert _finished_child("hidden") == ["[parent #1] input={}", "[later #1] input={}"]


def test_llm_exchange_of_revealed_child_is_sent_as_user_then_assistant():
    model, _ = recorder()

    @agentic_function(expose="llm")
    def thinker():
        return llm("think hard")

    @agentic_function
    def reader():
        return llm("what did you think?")

    with Session(), Runtime(model):
        thinker()
        reader()
    messages = model.requests[-1].messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == "ok"
    assert messages[0]["content"] == "think hard"


def test_full_frame_reveals_an_io_grandchilds_line_but_not_its_insides():
    dag = ContextDAG()
    full = dag.add("code", "full", expose="full")
    io = dag.add("code", "io", parent=full.id, expose="io")
    inner = dag.add("llm", "io", parent=io.id, status="completed")
    dag.complete(io, 1)
    dag.complete(full, 2)
    reader = dag.add("code", "reader")
    ids = render_context(dag, reader.id).reads
    assert ids == [full.id, io.id, reader.id]
    assert inner.id not in ids


# -- rule 4: time ----------------------------------------------------------------------------


def test_a_sibling_started_after_the_stack_child_is_invisible():
    dag = ContextDAG()
    root = dag.add("code", "root")
    first = dag.add("code", "first", parent=root.id)
    second = dag.add("code", "second", parent=root.id)
    dag.add("llm", "second", parent=second.id, status="completed")
    seen_by_first = render_context(dag, first.id).reads
    assert seen_by_first == [root.id, first.id]
    seen_by_second = render_context(dag, second.id).reads
    assert first.id in seen_by_second


def test_gathered_tasks_do_not_see_each_others_later_work():
    events: dict[str, asyncio.Event] = {}

    @agentic_function
    async def worker(name, after=None):
        if after is not None:
            await events[after].wait()
        reply = await allm(f"{name} asks")
        events[name].set()
        return reply

    @agentic_function
    async def boss():
        events.update(a=asyncio.Event(), b=asyncio.Event())
        return await asyncio.gather(worker("a", after="b"), worker("b"))

    model, _ = recorder()
    with Session() as session, Runtime(model):
        asyncio.run(boss())
    dag = session.dag
    worker_a, worker_b = dag.find(name="worker", kind="code")
    b_llm, a_llm = dag.find(name="worker", kind="llm")
    assert (b_llm.parent, a_llm.parent) == (worker_b.id, worker_a.id)
    assert worker_b.id not in a_llm.reads  # b started after a: invisible to a
    assert b_llm.id not in a_llm.reads
    assert worker_a.id in b_llm.reads  # a started before b: visible, as a running call


# -- rule 5: range ---------------------------------------------------------------------------


def _history(n_steps, render_range, inner_calls=0):
    model, seen = recorder()

    @agentic_function
    def step(i):
        return i

    @agentic_function
    def helper(j):
        return j

    @agentic_function(render_range=render_range)
    def asker():
        for j in range(inner_calls):
            helper(j)
        return llm("now")

    with Session() as session, Runtime(model):
        for i in range(n_steps):
            step(i)
        asker()
    return seen["asker"][0].splitlines(), session


def test_callers_n_keeps_the_last_n_visible_pre_frame_nodes():
    lines, _ = _history(6, {"callers": 2})
    assert lines == [
        '[step #5] input={"i": 4} output=4',
        '[step #6] input={"i": 5} output=5',
        "[asker #1] input={}",
    ]


def test_callers_zero_walls_off_everything_before_but_keeps_the_own_line():
    lines, _ = _history(6, {"callers": 0})
    assert lines == ["[asker #1] input={}"]


def test_callers_none_keeps_all_pre_frame_nodes():
    lines, _ = _history(4, None)
    assert len(lines) == 5


def test_subcalls_n_keeps_the_last_n_in_frame_nodes():
    lines, _ = _history(2, {"callers": 0, "subcalls": 2}, inner_calls=5)
    assert lines == [
        "[asker #1] input={}",
        '[helper #4] input={"j": 3} output=3',
        '[helper #5] input={"j": 4} output=4',
    ]


def test_subcalls_zero_keeps_no_in_frame_nodes():
    lines, _ = _history(2, {"callers": 0, "subcalls": 0}, inner_calls=3)
    assert lines == ["[asker #1] input={}"]


def test_counting_happens_after_visibility_filtering():
    model, seen = recorder()

    @agentic_function(expose="hidden")
    def noise():
        return 0

    @agentic_function
    def signal(i):
        return i

    @agentic_function(render_range={"callers": 2})
    def asker():
        return llm("now")

    with Session(), Runtime(model):
        signal(1)
        signal(2)
        for _ in range(5):
            noise()
        asker()
    assert seen["asker"][0].splitlines() == [
        '[signal #1] input={"i": 1} output=1',
        '[signal #2] input={"i": 2} output=2',
        "[asker #1] input={}",
    ]


def test_ancestor_call_lines_count_as_callers():
    dag = ContextDAG()
    dag.add("code", "old", status="completed")
    top = dag.add("code", "top")
    mid = dag.add("code", "mid", parent=top.id)
    assert render_context(dag, mid.id, {"callers": 1}).reads == [top.id, mid.id]


def test_a_running_frame_sees_its_own_earlier_exchanges():
    model, seen = recorder()

    @agentic_function(render_range={"callers": 0})
    def chat():
        llm("first question")
        return llm("second question")

    with Session(), Runtime(model):
        chat()
    assert seen["chat"][1].splitlines() == ["[chat #1] input={}", "assistant: ok"]
    assert [m["role"] for m in model.requests[1].messages] == ["user", "assistant", "user"]


# -- rule 6 and invariants -------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    shape=st.lists(
        st.tuples(
            st.integers(0, 30),
            st.sampled_from(["code", "llm"]),
            st.sampled_from(["io", "llm", "full", "hidden"]),
        ),
        min_size=1,
        max_size=40,
    ),
    frame_pick=st.integers(0, 100),
    callers=st.one_of(st.none(), st.integers(0, 5)),
    subcalls=st.integers(-1, 5),
)
@pytest.mark.slow
def test_render_invariants(shape, frame_pick, callers, subcalls):
    dag = ContextDAG()
    codes: list = []
    for parent_pick, kind, expose in shape:
        parent = codes[parent_pick % len(codes)].id if codes and parent_pick % 3 else None
        node = dag.add(
            kind,
            "f",
            parent=parent,
            expose=expose,
            status="completed" if kind == "llm" else "running",
        )
        if kind == "code":
            codes.append(node)
    if not codes:
        return
    frame = codes[frame_pick % len(codes)]
    rendered = render_context(dag, frame.id, {"callers": callers, "subcalls": subcalls})
    seqs = [n.seq for n in rendered.nodes]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    descendants = {n.id for n in dag.nodes if frame in dag.ancestors(n)}
    pre = [n for n in rendered.nodes if n.id not in descendants and n.id != frame.id]
    inside = [n for n in rendered.nodes if n.id in descendants]
    if callers is not None:
        assert len(pre) <= callers
    if subcalls >= 0:
        assert len(inside) <= subcalls
    assert (frame in rendered.nodes) == (frame.expose in ("io", "full"))
    full = render_context(dag, frame.id, {"callers": None, "subcalls": -1})
    assert set(rendered.reads) <= set(full.reads)
    if callers is not None:
        full_pre = [n for n in full.nodes if n.id not in descendants and n.id != frame.id]
        assert pre == full_pre[len(full_pre) - min(callers, len(full_pre)) :]


def test_unknown_frame_is_a_clear_error():
    with pytest.raises(UsageError, match="frame 'nope'"):
        render_context(ContextDAG(), "nope")


# -- line format, images, report -------------------------------------------------------------


def test_failed_calls_show_their_error_and_hidden_inputs_are_not_rendered():
    model, seen = recorder()

    @agentic_function(input={"secret": {"hidden": True}})
    def login(user, secret):
        raise PermissionError("denied")

    @agentic_function
    def after():
        return llm("?")

    with Session() as session, Runtime(model):
        with pytest.raises(PermissionError):
            login("ann", "hunter2")
        after()
    assert (
        seen["after"][0].splitlines()[0]
        == '[login #1] input={"user": "ann"} error=PermissionError: denied'
    )
    assert session.dag.find(name="login")[0].input["secret"] == "hunter2"


def _picture(colour):
    return PILImage.new("RGB", (8, 6), colour)


def test_images_are_stored_once_referenced_and_sent_as_data_urls():
    model, _ = recorder()

    @agentic_function
    def look(picture):
        return llm(["what is this?", {"type": "image", "image": picture}])

    with Session() as session, Runtime(model):
        look(_picture("red"))
        look(_picture("red"))
    dag = session.dag
    assert len(dag.blobs) == 1
    code = dag.find(name="look", kind="code")[0]
    sha = next(iter(dag.blobs))
    assert code.input["picture"].sha256 == sha
    line = render_context(dag).text().splitlines()[0]
    assert line == f'[look #1] input={{"picture": "<image sha256:{sha[:12]} 8x6>"}} output="ok"'
    stored = str(dag.to_dict()["nodes"])
    assert "base64" not in stored and "iVBOR" not in stored
    sent = model.requests[0].messages[-1]["content"]
    assert sent[0] == {
        "type": "text",
        "text": f'[look #1] input={{"picture": "<image sha256:{sha[:12]} 8x6>"}}',
    }
    assert sent[2]["type"] == "image_url"
    assert sent[2]["image_url"]["url"].startswith("data:image/png;base64,")


def test_only_the_newest_max_images_history_images_survive_with_omitted_entries():
    model, _ = recorder()

    @agentic_function(expose="full", render_range={"callers": 0})
    def looker():
        for colour in ["red", "green", "blue", "white"]:
            llm(["look", _picture(colour)])
        return llm(["and now", _picture("black")])

    with Session(), Runtime(model, max_images=2):
        looker()
    last = model.requests[-1]
    omitted = [e for e in last.rendered.report if e["kind"] == "omitted"]
    assert len(omitted) == 2
    assert len(last.rendered.images()) == 3  # two from history + the current one
    placeholders = [
        p
        for m in last.messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "text" and p["text"].startswith("[image omitted")
    ]
    assert len(placeholders) == 2


def test_long_lines_are_truncated_and_reported():
    dag = ContextDAG()
    dag.add("user", "user", input="x" * 50, status="completed")
    rendered = render_context(dag, max_line_chars=10)
    assert rendered.text().startswith("user: xxxx… [")
    assert rendered.report[0]["kind"] == "truncated"


def test_system_message_is_the_runtime_prompt_then_the_frames():
    model, _ = recorder()

    @agentic_function(system="Be brief.")
    def ask():
        return llm("hello")

    with Session(), Runtime(model, system="You are careful."):
        ask()
    assert model.requests[0].messages[0] == {
        "role": "system",
        "content": "You are careful.\n\nBe brief.",
    }


def test_seen_by_rebuilds_overrides_system_and_image_limits():
    from openprogram.render.render import seen_by

    model, _ = recorder()

    @agentic_function(system="frame rules")
    def ask():
        llm("one")
        return llm(["two", _picture("red")], render_range={"callers": 0, "subcalls": 1})

    with Session() as session, Runtime(model, system="runtime rules", max_images=1):
        session.submit("hello")
        ask()
    for node in session.dag.find(kind="llm"):
        assert seen_by(session.dag, node).messages_hash == node.messages_hash
    last = session.dag.find(kind="llm")[-1]
    assert seen_by(session.dag, last).text().splitlines() == ["[ask #1] input={}", "assistant: ok"]


def test_a_top_level_call_on_a_fresh_fork_sees_the_history_it_forked_from():
    dag = ContextDAG()
    a = dag.add("user", "user", input="hello", status="completed")
    dag.add("user", "user", input="not on the fork", status="completed")
    dag.branch = dag.new_branch(a)
    ask = dag.add("llm", "main", input="and now?")
    assert render_context(dag, before=ask.seq).reads == [a.id]
