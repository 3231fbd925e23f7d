"""Full-range renders reuse the last render's history: what they send must be exactly
what a render from scratch sends, over random DAGs and interleavings (DESIGN.md §4)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image as PILImage

from openprogram import ContextDAG, Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.core.dag import Node
from openprogram.render._history import _uncached
from openprogram.render.render import RenderedContext, render_context, seen_by

EXPOSES = ["io", "io", "full", "llm", "hidden"]
NAMES = ["step", "observe", "plan", "tool"]


def snapshot(rendered: RenderedContext) -> dict[str, Any]:
    """Everything a render hands on: what is sent, what is recorded, what is shown."""
    return {
        "messages": rendered.messages,
        "hash": rendered.messages_hash,
        "reads": rendered.reads,
        "text": rendered.text(),
        "report": rendered.report,
        "system": rendered.system,
        "images": [ref.sha256 for ref in rendered.images()],
    }


def assert_same_as_from_scratch(dag: ContextDAG, frame: str | None, **options: Any) -> None:
    incremental = render_context(dag, frame, **options)
    length = incremental.text_length()  # from the checkpoints, before text() is built
    assert length == len(incremental.text())
    narrow_range = {"callers": 3, "subcalls": 2}
    with _uncached(dag):  # every line, turn and hash written afresh
        scratch = render_context(dag, frame, **options)
        narrow_scratch = render_context(dag, frame, narrow_range, **options)
    assert snapshot(incremental) == snapshot(scratch)
    # a window wide enough to hold everything: built in one go from the kept pieces
    wide = render_context(dag, frame, {"callers": 10_000, "subcalls": 10_000}, **options)
    assert snapshot(wide) == snapshot(scratch)
    # a narrow window: kept pieces of nodes the earlier renders showed amid other nodes
    narrow = render_context(dag, frame, narrow_range, **options)
    assert snapshot(narrow) == snapshot(narrow_scratch)


class Program:
    """A DAG grown by random steps: calls that start and end in any order (threads),
    llm exchanges with images and tool calls, user input, forks and resumed nodes."""

    def __init__(self, data: Any) -> None:
        self.draw = data.draw
        self.dag = ContextDAG()
        self.images = [
            self.dag.add_image(PILImage.new("RGB", (4 + i, 4), (i * 40, 0, 0))) for i in range(4)
        ]
        self.branches = ["main"]
        self.pending: list[tuple[Node, dict[str, Any]]] = []  # tool calls awaiting results
        self.options = self.settings()

    def settings(self) -> dict[str, Any]:
        return {
            "system": self.draw(st.sampled_from([None, "be brief"])),
            "max_images": self.draw(st.sampled_from([3, 1, 0, None])),
            "max_line_chars": self.draw(st.sampled_from([20_000, 90])),
        }

    def running(self, kind: str = "code") -> list[Node]:
        return [n for n in self.dag.nodes if n.kind == kind and n.status == "running"]

    def pick(self, nodes: list[Node]) -> Node | None:
        if not nodes:
            return None
        return nodes[self.draw(st.integers(0, len(nodes) - 1))]

    def parent(self) -> str | None:
        frame = self.pick(self.running()) if self.draw(st.booleans()) else None
        return frame.id if frame is not None else None

    def step(self) -> None:
        action = self.draw(
            st.sampled_from(
                [
                    "call",
                    "call",
                    "finish",
                    "finish",
                    "llm",
                    "llm",
                    "user",
                    "tools",
                    "answer",
                    "fork",
                    "reopen",
                    "render",
                    "render",
                    "render",
                ]
            )
        )
        getattr(self, action)()

    def call(self) -> None:
        name = self.draw(st.sampled_from(NAMES))
        self.dag.add(
            "code",
            name,
            parent=self.parent(),
            input={"x": self.draw(st.integers(0, 3)), "secret": "s"},
            expose=self.draw(st.sampled_from(EXPOSES)),
            hidden_inputs=["secret"] if self.draw(st.booleans()) else [],
        )

    def finish(self) -> None:
        node = self.pick(self.running()) or self.pick(self.running("llm"))
        if node is None:
            return
        if node.kind == "llm":
            self.dag.complete(node, self.draw(st.sampled_from(["ok", "a much longer reply " * 6])))
            return
        if self.draw(st.booleans()):
            node.meta["render_output"] = {"count": 3}
        if self.draw(st.integers(0, 4)) == 0:
            self.dag.complete(node, None, status="error", error="boom")
        else:
            self.dag.complete(node, {"items": list(range(self.draw(st.integers(0, 30))))})

    def llm(self) -> None:
        parts: list[dict[str, Any]] = [{"type": "text", "text": "look"}]
        for _ in range(self.draw(st.integers(0, 2))):
            parts.append({"type": "image", "image": self.images[self.draw(st.integers(0, 3))]})
        content: Any = parts if len(parts) > 1 or self.draw(st.booleans()) else "plain"
        node = self.dag.add("llm", "plan", parent=self.parent(), input=content)
        if self.draw(st.booleans()):
            self.dag.complete(node, "done")

    def user(self) -> None:
        self.dag.add("user", "user", input=f"hello {len(self.dag)}", status="completed")

    def tools(self) -> None:
        """An llm node that asks for tools; their results come in later steps."""
        asker = self.dag.add("llm", "plan", parent=self.parent(), input="use tools")
        calls = [
            {"id": f"c{asker.seq}-{i}", "name": "tool", "arguments": {"a": i}}
            for i in range(self.draw(st.integers(1, 2)))
        ]
        asker.meta["tool_calls"] = calls
        self.dag.complete(asker, self.draw(st.sampled_from(["", "calling"])))
        self.pending.extend((asker, call) for call in calls)
        while self.pending and self.draw(st.booleans()):
            self.answer()

    def answer(self) -> None:
        """A tool result: a code node under the asking frame, finished now or later."""
        if not self.pending:
            return
        asker, call = self.pending.pop(self.draw(st.integers(0, len(self.pending) - 1)))
        answer = self.dag.add(
            "code",
            "tool",
            parent=asker.parent,
            input={"a": 1},
            meta={"asked_by": asker.id, "tool_call_id": call["id"]},
        )
        if self.draw(st.integers(0, 3)):
            self.dag.complete(answer, {"sum": 3})

    def fork(self) -> None:
        if self.draw(st.booleans()) and len(self.branches) > 1:
            self.dag.branch = self.draw(st.sampled_from(self.branches))
            return
        top = self.pick(self.dag.children(None))
        if top is not None:
            self.branches.append(self.dag.new_branch(top))
            self.dag.branch = self.branches[-1]

    def reopen(self) -> None:
        """What resuming a session does to a call that had not completed."""
        node = self.pick([n for n in self.dag.nodes if n.status in ("error", "cancelled")])
        if node is not None:
            node.status, node.output, node.error = "running", None, None
            node.ended_at = node.end_seq = None

    def render(self) -> None:
        frames = self.running()
        frame = None
        if frames and self.draw(st.integers(0, 4)):  # mostly the newest call, as in a program
            frame = frames[-1] if self.draw(st.integers(0, 2)) else self.pick(frames)
        if not self.draw(st.integers(0, 5)):
            self.options = self.settings()
        picked = [self.pick(self.dag.nodes) for _ in range(self.draw(st.integers(0, 3)) // 2)]
        options: dict[str, Any] = {
            **self.options,
            "include": [node.id for node in picked if node is not None],
        }
        if self.draw(st.integers(0, 3)):  # as llm() does: the new node, then its context
            node = self.dag.add("llm", "plan", parent=frame.id if frame else None, input="now")
            options.update(before=node.seq, content=node.input)
        assert_same_as_from_scratch(self.dag, frame.id if frame else None, **options)


_PROPERTY = settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _run(data: Any) -> None:
    program = Program(data)
    for _ in range(data.draw(st.integers(1, 60))):
        program.step()
    program.render()


@_PROPERTY
@given(data=st.data())
@pytest.mark.slow
@pytest.mark.timeout(900)  # 200 programs: on a busy machine pytest's 300 s is near
def test_incremental_render_equals_render_from_scratch(data):
    _run(data)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
@pytest.mark.slow
def test_renders_at_earlier_moments_match_too(data):
    """seen_by and renders with an older `before` between newer ones."""
    program = Program(data)
    for _ in range(data.draw(st.integers(1, 40))):
        program.step()
    dag = program.dag
    for node in [n for n in dag.nodes if n.kind == "llm" and n.parent is not None][-4:]:
        frame = dag.node(node.parent)
        if frame.kind == "code":
            assert_same_as_from_scratch(dag, frame.id, before=node.seq, content=node.input)


def test_a_long_run_records_the_hashes_a_cold_rebuild_gives():
    """Real llm() calls: every node's recorded hash is what seen_by rebuilds cold."""

    @agentic_function
    def observe(i: int) -> dict[str, int]:
        return {"components": i}

    @agentic_function
    def plan(i: int) -> str:
        return llm(f"plan {i}")

    @agentic_function
    def agent() -> None:
        for i in range(40):
            observe(i)
            plan(i)
            if i % 7 == 0:
                llm("how is it going?")

    with Session() as session, Runtime(ScriptedModel(lambda request: "ok")):
        agent()
    dag = session.dag
    exchanges = dag.find(kind="llm")
    assert len(exchanges) == 46
    with _uncached(dag):
        rebuilt = [seen_by(dag, node).messages_hash for node in exchanges]
    assert rebuilt == [node.messages_hash for node in exchanges]
    assert len({node.messages_hash for node in exchanges}) == 46


def test_the_cache_follows_completions_inside_the_reused_prefix():
    """A call that finishes after an earlier render shows its output in the next one,
    even though everything before and after it was reused."""
    dag = ContextDAG()
    agent = dag.add("code", "agent")
    slow = dag.add("code", "slow", parent=agent.id)  # a sibling still running (a thread)
    for i in range(5):
        dag.complete(dag.add("code", "step", parent=agent.id, input={"i": i}), i)
    first = render_context(dag, agent.id)
    assert "[slow #1] input=null\n" in first.text() + "\n"
    dag.complete(slow, "late")
    second = render_context(dag, agent.id)
    assert '[slow #1] input=null output="late"' in second.text()
    with _uncached(dag):
        assert render_context(dag, agent.id).messages_hash == second.messages_hash


def test_a_tool_result_that_arrives_later_turns_the_earlier_call_into_the_provider_shape():
    dag = ContextDAG()
    agent = dag.add("code", "agent")
    asker = dag.add("llm", "agent", parent=agent.id, input="add them")
    asker.meta["tool_calls"] = [{"id": "call_1", "name": "add", "arguments": {"a": 1}}]
    dag.complete(asker, "")
    now = dag.add("llm", "agent", parent=agent.id, input="again")
    before = render_context(dag, agent.id, before=now.seq, content="again")
    assert [m["role"] for m in before.messages] == ["user", "assistant", "user"]  # as text
    answer = dag.add(
        "code", "add", parent=agent.id, meta={"asked_by": asker.id, "tool_call_id": "call_1"}
    )
    dag.complete(answer, 2)
    later = dag.add("llm", "agent", parent=agent.id, input="and now")
    after = render_context(dag, agent.id, before=later.seq, content="and now")
    assert [m["role"] for m in after.messages] == ["user", "assistant", "tool", "user"]
    with _uncached(dag):
        scratch = render_context(dag, agent.id, before=later.seq, content="and now")
    assert snapshot(after) == snapshot(scratch)


def test_a_tool_result_hidden_by_a_later_frame_turns_the_call_back_into_a_line():
    """Rule 4: a sibling that started after the new frame is not visible, so the call
    that it answered, in the reused prefix, no longer carries it."""
    dag = ContextDAG()
    agent = dag.add("code", "agent")
    asker = dag.add("llm", "agent", parent=agent.id, input="add them")
    asker.meta["tool_calls"] = [{"id": "call_1", "name": "add", "arguments": {"a": 1}}]
    dag.complete(asker, "")
    worker = dag.add("code", "worker", parent=agent.id)  # runs concurrently from here
    answer = dag.add(
        "code", "add", parent=agent.id, meta={"asked_by": asker.id, "tool_call_id": "call_1"}
    )
    dag.complete(answer, 2)
    seen = render_context(dag, agent.id)
    assert [m["role"] for m in seen.messages] == ["user", "assistant", "tool", "user"]
    inside = render_context(dag, worker.id)
    with _uncached(dag):
        scratch = render_context(dag, worker.id)
    assert snapshot(inside) == snapshot(scratch)
    assert [m["role"] for m in inside.messages] == ["user", "assistant", "user"]


def test_a_tool_result_on_the_readers_stack_is_not_carried_by_the_reused_prefix():
    """Seen top-level, the errored result answers its call; read from a call inside it,
    the result is on the stack, so the call shows as text (found by the random test)."""
    dag = ContextDAG()
    asker = dag.add("llm", "plan", parent=None, input="use tools")
    asker.meta["tool_calls"] = [{"id": "c-0", "name": "tool", "arguments": {"a": 0}}]
    dag.complete(asker, "")
    answer = dag.add(
        "code",
        "tool",
        parent=None,
        input={"a": 1},
        meta={"asked_by": asker.id, "tool_call_id": "c-0"},
    )
    inner = dag.add("code", "step", parent=answer.id, input={"x": 0})
    dag.complete(answer, None, status="error", error="boom")
    assert_same_as_from_scratch(dag, None)
    assert_same_as_from_scratch(dag, inner.id)


class _Replayed:
    """The draws of a case the random tests found, replayed in order."""

    def __init__(self, draws: list[Any]) -> None:
        self.draws = iter(draws)

    def draw(self, strategy: Any) -> Any:
        return next(self.draws)


# a render whose reused prefix is followed by no node of its own (found by the random test)
_EMPTY_TAIL_DRAWS = [
    None, 3, 20000, 36, "tools", False, 2, "", True, 0, 0, False, "finish", 0, False, 1, 0,
    "llm", 2, 0, 0, False, False, "llm", 0, False, False, False, "llm", 0, False, False, False,
    "finish", 0, "ok", "llm", 0, False, False, False, "finish", 0, "ok", "tools", False, 1, "",
    False, "answer", 0, 1, "finish", 0, "ok", "call", "step", False, 0, "llm", False, "llm", 1,
    0, False, False, "finish", 0, False, 0, "render", 1, 0, 0, "llm", 2, 0, 0, False, False,
    "call", "step", False, 0, "io", False, "call", "step", False, 0, "io", False, "call",
    "step", False, 0, "io", False, "call", "step", False, 0, "io", False, "call", "step", False,
    0, "io", False, "finish", 0, False, 1, 0, "render", 0, 1, 0, 1, "finish", 0, False, 0,
    "call", "step", False, 0, "io", False, "user", "finish", 0, False, 0, "call", "step", False,
    0, "io", False, "answer", 0, 0, "fork", False, 0, "reopen", 0, "finish", 1, False, 0,
    "call", "step", False, 0, "io", False, "call", "step", False, 0, "io", False, "call",
    "step", False, 0, "io", False, "llm", 0, False, True, 0, False,
]  # fmt: skip


def test_a_reused_prefix_with_nothing_after_it_still_sends_the_images_it_had_dropped():
    """Read top-level, the later requests' images pushed an early one out; read from a call
    that started before them, nothing follows the reused prefix and the image is back."""
    data = _Replayed(_EMPTY_TAIL_DRAWS)
    program = Program(data)
    for _ in range(data.draw(None)):
        program.step()
    dag = program.dag
    node = [n for n in dag.nodes if n.kind == "llm" and n.parent is not None][-1]
    assert_same_as_from_scratch(dag, node.parent, before=node.seq, content=node.input)


def test_images_omitted_in_a_reused_prefix_come_back_when_later_ones_are_not_visible():
    dag = ContextDAG()
    refs = [dag.add_image(PILImage.new("RGB", (4, 4 + i))) for i in range(3)]
    agent = dag.add("code", "agent", expose="full")
    dag.complete(dag.add("llm", "agent", parent=agent.id, input=_picture(refs[0])), "a")
    inner = dag.add("code", "inner", parent=agent.id)
    dag.complete(dag.add("llm", "inner", parent=inner.id, input=_picture(refs[1])), "b")
    dag.complete(dag.add("llm", "inner", parent=inner.id, input=_picture(refs[2])), "c")
    deep = render_context(dag, inner.id, max_images=2)  # sees all three: the first omitted
    assert [r.sha256 for r in deep.images()] == [refs[1].sha256, refs[2].sha256]
    outer = render_context(dag, agent.id, max_images=2)  # inner's are hidden: send the first
    with _uncached(dag):
        scratch = render_context(dag, agent.id, max_images=2)
    assert snapshot(outer) == snapshot(scratch)
    assert [r.sha256 for r in outer.images()] == [refs[0].sha256]


def _picture(ref: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "look"}, {"type": "image", "image": ref}]


def test_a_render_at_an_earlier_moment_shows_calls_that_had_not_finished_then():
    dag = ContextDAG()
    agent = dag.add("code", "agent")
    step = dag.add("code", "step", parent=agent.id)
    first = dag.add("llm", "agent", parent=agent.id, input="first")
    dag.complete(step, "done")  # finished after `first` was asked
    second = dag.add("llm", "agent", parent=agent.id, input="second")
    assert 'output="done"' in render_context(dag, agent.id, before=second.seq).text()
    then = render_context(dag, agent.id, before=first.seq)
    assert "output" not in then.text()
    with _uncached(dag):
        assert snapshot(render_context(dag, agent.id, before=first.seq)) == snapshot(then)


@pytest.mark.slow
def test_concurrent_writers_each_continue_their_own_history():
    """One session, many writers: top-level calls running at once (some revealing their
    insides), each asking from a call of its own in turn. Every render, which extends
    that writer's earlier history with what was made since, equals one from scratch."""
    dag = ContextDAG()
    exposes = ["io", "full", "llm", "io", "full", "hidden"] * 6
    writers = [dag.add("code", "writer", input={"n": n}, expose=e) for n, e in enumerate(exposes)]
    for step in range(4):
        for writer in writers:
            call = dag.add("code", "call", parent=writer.id, input={"i": step})
            dag.complete(call, step)
            frame = dag.add("code", "ask", parent=writer.id, input={"i": step})
            assert_same_as_from_scratch(dag, frame.id)
            asked = dag.add("llm", "ask", parent=frame.id, input=f"question {step}")
            dag.complete(asked, "ok")
            dag.complete(frame, "ok")
        for writer in writers[step::4]:
            if writer.status == "running":
                dag.complete(writer, "done")
        assert_same_as_from_scratch(dag, writers[-1].id)
    assert_same_as_from_scratch(dag, None)
