"""@agentic_function: validation, spec, runtime injection, nesting, recording."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from typing import Literal

import pytest
from pydantic import BaseModel

from openprogram import Runtime, ScriptedModel, Session, agentic_function, current_session
from openprogram.errors import UsageError


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"expose": "everything"}, "'everything'"),
        ({"render_range": {"caller": 1}}, "'caller'"),
        ({"render_range": {"callers": -1}}, "-1"),
        ({"render_range": {"callers": True}}, "True"),
        ({"render_range": {"subcalls": -2}}, "-2"),
        ({"render_range": [1]}, r"\[1\]"),
        ({"input": {"nope": {"description": "x"}}}, "'nope'"),
        ({"input": {"x": {"colour": "red"}}}, "'colour'"),
        ({"system": 3}, "3"),
    ],
)
def test_bad_settings_raise_value_error_naming_the_bad_value(settings, named):
    with pytest.raises(ValueError, match=named):

        @agentic_function(**settings)
        def f(x):
            return x


def test_wrapper_keeps_metadata_and_exposes_settings():
    @agentic_function(expose="full", render_range={"callers": 3}, system="sys")
    def documented(x: int) -> int:
        """Double a number.

        More text that is not the description."""
        return 2 * x

    assert documented.__name__ == "documented"
    assert documented.__doc__.startswith("Double")
    assert documented.expose == "full"
    assert documented.render_range == {"callers": 3, "subcalls": -1}
    assert documented.system == "sys"
    assert documented(2) == 4


def test_a_code_node_carries_the_decorators_expose_and_render_range():
    @agentic_function(expose="llm", render_range={"callers": 2})
    def ranged() -> None:
        pass

    with Session() as session:
        ranged()
    (node,) = session.dag.nodes
    assert node.expose == "llm"
    assert node.render_range == {"callers": 2, "subcalls": -1} == ranged.render_range
    assert node.render_range != {"callers": 3, "subcalls": -1}
    assert (node.render_range["callers"], node.render_range["subcalls"]) == (2, -1)
    assert node.model_dump()["render_range"] == {"callers": 2, "subcalls": -1}


def test_spec_is_an_openai_tool_spec_built_from_the_signature():
    @agentic_function(
        input={
            "colour": {"description": "Which colour", "options": ["red", "blue"]},
            "token": {"hidden": True},
        }
    )
    def paint(colour: str, times: int = 1, token: str = "", runtime: Runtime = None) -> str:
        """Paint the wall."""
        return colour

    spec = paint.spec
    assert spec["name"] == "paint"
    assert spec["description"] == "Paint the wall."
    params = spec["parameters"]
    assert set(params["properties"]) == {"colour", "times"}
    assert params["properties"]["colour"] == {
        "description": "Which colour",
        "enum": ["red", "blue"],
        "type": "string",
    }
    assert params["properties"]["times"] == {"default": 1, "type": "integer"}
    assert params["required"] == ["colour"]


class Point(BaseModel):
    x: int
    y: int


def test_spec_handles_pydantic_and_literal_annotations():
    @agentic_function
    def go(to: Point, mode: Literal["walk", "run"] = "walk"):
        return to

    props = go.spec["parameters"]["properties"]
    assert props["mode"]["enum"] == ["walk", "run"]
    assert go.spec["parameters"]["$defs"]["Point"]["required"] == ["x", "y"]


def test_runtime_is_injected_and_left_out_of_the_recorded_input():
    seen = []

    @agentic_function
    def uses(x, runtime: Runtime = None):
        seen.append(runtime)
        return x

    ambient = Runtime(ScriptedModel([]))
    with Session() as session, ambient:
        uses(1)
        explicit = Runtime(ScriptedModel([]))
        uses(2, runtime=explicit)
    assert seen == [ambient, explicit]
    assert [n.input for n in session.dag.find(name="uses")] == [{"x": 1}, {"x": 2}]


def test_explicit_runtime_is_ambient_for_nested_calls():
    seen = []

    @agentic_function
    def inner(runtime=None):
        seen.append(runtime)

    @agentic_function
    def outer(runtime=None):
        inner()

    mine = Runtime(ScriptedModel([]))
    with Session():
        outer(runtime=mine)
    assert seen == [mine]


def test_return_values_and_exceptions_pass_through_unchanged():
    marker = object()

    class Boom(Exception):
        pass

    error = Boom("bang")

    @agentic_function
    def returns():
        return marker

    @agentic_function
    def raises():
        raise error

    with Session() as session:
        assert returns() is marker
        with pytest.raises(Boom) as caught:
            raises()
    assert caught.value is error
    failed = session.dag.find(name="raises")[0]
    assert (failed.status, failed.error) == ("error", "Boom: bang")


def test_one_code_node_per_call_completed_in_place():
    @agentic_function
    def add(a, b=10):
        return a + b

    with Session() as session:
        add(1)
    (node,) = session.dag.nodes
    assert (node.kind, node.name, node.status) == ("code", "add", "completed")
    assert node.input == {"a": 1, "b": 10}
    assert node.output == 11
    assert node.ended_at >= node.started_at


def test_methods_are_recorded_without_self():
    class Agent:
        @agentic_function
        def act(self, what):
            return what.upper()

    with Session() as session:
        assert Agent().act("go") == "GO"
    assert session.dag.nodes[0].input == {"what": "go"}


def test_async_functions_are_recorded_and_nest():
    @agentic_function
    async def child(i):
        await asyncio.sleep(0)
        return i

    @agentic_function
    async def parent():
        return await asyncio.gather(child(1), child(2))

    with Session() as session:
        assert asyncio.run(parent()) == [1, 2]
    top, *children = session.dag.nodes
    assert [c.parent for c in children] == [top.id, top.id]
    assert all(n.status == "completed" for n in session.dag.nodes)


def test_cancelled_tasks_are_recorded_as_cancelled():
    @agentic_function
    async def slow():
        await asyncio.Event().wait()

    async def main():
        task = asyncio.create_task(slow())
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    with Session() as session:
        asyncio.run(main())
    assert session.dag.nodes[0].status == "cancelled"


def test_threads_keep_their_own_stacks_and_a_plain_thread_starts_at_top_level():
    barrier = threading.Barrier(2)

    @agentic_function
    def leaf(i):
        barrier.wait(timeout=10)
        return i

    @agentic_function
    def branch(i):
        return leaf(i)

    with Session() as session:
        threads = [threading.Thread(target=branch, args=(i,)) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    dag = session.dag
    for leaf_node in dag.find(name="leaf"):
        parent = dag.node(leaf_node.parent)
        assert parent.name == "branch"
        assert parent.input["i"] == leaf_node.input["i"]
    assert all(b.parent is None for b in dag.find(name="branch"))


def test_a_thread_in_a_copied_context_nests_under_the_caller():
    @agentic_function
    def worker():
        return 1

    @agentic_function
    def spawner():
        context = contextvars.copy_context()
        thread = threading.Thread(target=context.run, args=(worker,))
        thread.start()
        thread.join()

    with Session() as session:
        spawner()
    spawn, work = session.dag.nodes
    assert work.parent == spawn.id


def test_without_a_session_calls_record_into_a_process_default():
    @agentic_function
    def hello():
        return "hi"

    hello()
    assert current_session().dag.nodes[-1].name == "hello"


def test_worker_threads_record_into_the_most_recently_entered_session():
    @agentic_function
    def job():
        return 1

    with Session() as session:
        thread = threading.Thread(target=job)
        thread.start()
        thread.join()
    assert [n.name for n in session.dag.nodes] == ["job"]


def test_a_failing_recorder_never_breaks_the_call(caplog):
    @agentic_function
    def fine():
        return 42

    with Session() as session:

        def broken(event, node):
            raise OSError("disk full")

        session.dag.listeners.append(broken)
        assert fine() == 42
    assert "could not record" in caplog.text


def test_a_strict_observer_failing_at_call_start_ends_the_call_cleanly():
    from openprogram import Callback, current_session

    class Refuses(Callback):
        strict = True

        def on_call_start(self, node):
            raise RuntimeError("not today")

    ran = []

    @agentic_function
    def work():
        ran.append(1)

    with Session() as session, Runtime(ScriptedModel([]), callbacks=[Refuses()]):
        with pytest.raises(RuntimeError, match="not today"):
            work()
        assert current_session() is session
    (node,) = session.dag.nodes
    assert ran == [] and node.status == "error"
    from openprogram.core._context import frame_id

    assert frame_id() is None


def test_arguments_are_bound_like_python_binds_them():
    @agentic_function
    def f(a, b=2, *, c, d=4):
        return a + b + c + d

    @agentic_function
    def g(a, *rest, **extra):
        return a

    with Session() as session:
        assert f(1, c=3) == 10
        assert f(c=3, a=1, b=5) == 13
        assert g(1, 2, 3, x=4) == 1
        with pytest.raises(TypeError):
            f(1)  # missing c: Python's own error, unchanged
        with pytest.raises(TypeError):
            f(1, 2, 3, c=1)
    recorded = [n.input for n in session.dag.nodes if n.status == "completed"]
    assert recorded == [
        {"a": 1, "b": 2, "c": 3, "d": 4},
        {"a": 1, "b": 5, "c": 3, "d": 4},
        {"a": 1, "rest": [2, 3], "extra": {"x": 4}},
    ]


def test_a_generator_function_is_refused_at_decoration_with_what_to_do_instead():
    """A decorated generator used to be recorded "completed" at once (its output a
    generator object) and its llm() calls landed at the top level as `main`."""

    def numbers():
        yield 1

    async def stream():
        yield "a"

    with pytest.raises(UsageError, match=r"numbers: it is a generator function.*list\(\.\.\.\)"):
        agentic_function(numbers)
    with pytest.raises(UsageError, match=r"stream: it is an async generator function"):
        agentic_function(expose="full")(stream)
    with pytest.raises(ValueError):  # UsageError is a ValueError, as every decoration error
        agentic_function(functools.wraps(numbers)(lambda: numbers()))
