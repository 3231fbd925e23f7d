"""llm(..., tools=[...]) offline: the loop, what is recorded, what the next turn sees."""

from __future__ import annotations

import asyncio
import threading

import pytest
from pydantic import BaseModel

from openprogram import (
    ModelError,
    ReplayModel,
    ResumeDivergence,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    UsageError,
    agentic_function,
    allm,
    llm,
)
from openprogram.render.render import seen_by


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@agentic_function
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    return a / b


def calls(*pairs):
    return {"tool_calls": [{"name": name, "arguments": arguments} for name, arguments in pairs]}


@agentic_function
def solve(question: str) -> str:
    return llm(question, tools=[add, divide])


def test_a_tool_call_runs_the_tool_and_the_model_answers_with_its_result():
    model = ScriptedModel([calls(("add", {"a": 2, "b": 3})), "2 + 3 = 5"])
    with Session() as session, Runtime(model):
        assert solve("what is 2 + 3?") == "2 + 3 = 5"
    frame = session.dag.find(name="solve", kind="code")[0]
    first, tool, second = session.dag.children(frame.id)
    assert (first.kind, tool.kind, second.kind) == ("llm", "code", "llm")
    assert first.meta["tool_calls"] == [
        {"id": "call_1", "name": "add", "arguments": {"a": 2, "b": 3}}
    ]
    assert first.output == "" and first.status == "completed"
    assert (tool.name, tool.input, tool.output) == ("add", {"a": 2, "b": 3}, 5)
    assert tool.meta["tool_call_id"] == "call_1" and tool.meta["asked_by"] == first.id
    assert second.meta["tool_loop"] == [first.id, tool.id]
    assert second.output == "2 + 3 = 5"


def test_the_second_turn_sees_the_calls_and_results_in_the_providers_shape():
    model = ScriptedModel([calls(("add", {"a": 2, "b": 3})), "5"])
    with Session() as session, Runtime(model):
        solve("what is 2 + 3?")
    request = model.requests[1]
    assert request.messages[-2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "5"},
    ]
    assert model.requests[0].tools[0] == {"type": "function", "function": add.spec}
    second = session.dag.find(name="solve", kind="llm")[1]
    rebuilt = seen_by(session.dag, second)
    assert rebuilt.messages_hash == second.messages_hash
    assert rebuilt.messages == request.messages
    assert rebuilt.text().splitlines() == [
        '[solve #1] input={"question": "what is 2 + 3?"}',
        'assistant: [calls add({"a": 2, "b": 3})]',
        '[add #1] input={"a": 2, "b": 3} output=5',
    ]


def test_parallel_calls_each_get_a_result_message_in_order():
    model = ScriptedModel(
        [calls(("add", {"a": 1, "b": 2}), ("divide", {"a": 9, "b": 3})), "3 and 3.0"]
    )
    with Session() as session, Runtime(model):
        assert solve("two sums") == "3 and 3.0"
    tools = session.dag.find(kind="code")[1:]
    assert [(t.name, t.output, t.meta["tool_call_id"]) for t in tools] == [
        ("add", 3, "call_1"),
        ("divide", 3.0, "call_2"),
    ]
    tail = model.requests[1].messages[-3:]
    assert [m["role"] for m in tail] == ["assistant", "tool", "tool"]
    assert [(m["tool_call_id"], m["content"]) for m in tail[1:]] == [
        ("call_1", "3"),
        ("call_2", "3.0"),
    ]


def test_a_failing_tool_tells_the_model_and_the_run_goes_on():
    model = ScriptedModel([calls(("divide", {"a": 1, "b": 0})), "cannot divide by zero"])
    with Session() as session, Runtime(model):
        assert solve("1 / 0?") == "cannot divide by zero"
    (tool,) = session.dag.find(name="divide", kind="code")
    assert tool.status == "error" and tool.error == "ZeroDivisionError: float division by zero"
    assert model.requests[1].messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "error: ZeroDivisionError: float division by zero",
    }


def test_an_unknown_tool_and_invalid_arguments_go_back_to_the_model_as_errors():
    model = ScriptedModel(
        [
            calls(("multiply", {"a": 2, "b": 3}), ("add", {"a": "two", "b": 3})),
            calls(("add", {"a": 2, "c": 3}), ("add", '{"a": 2')),
            "I give up",
        ]
    )
    with Session() as session, Runtime(model):
        assert solve("2 * 3?") == "I give up"
    refused = [n for n in session.dag.find(kind="code") if n.meta.get("refused")]
    assert [n.name for n in refused] == ["multiply", "add", "add", "add"]
    assert all(n.status == "error" for n in refused)
    unknown, invalid, extra, broken = (
        m["content"] for m in model.requests[2].messages if m["role"] == "tool"
    )
    assert (
        unknown
        == "error: there is no tool 'multiply'; the tools are ['add', 'divide']. Call one of those."
    )
    assert invalid.startswith(
        "error: invalid arguments for add: a: Input should be a valid integer"
    )
    assert "(got 'two')" in invalid
    assert extra.startswith("error: add has no parameter 'c'")
    assert broken.startswith("error: the arguments of add are not a JSON object: '{\"a\": 2'")


def test_max_tool_turns_ends_the_loop_with_a_model_error_on_the_last_exchange():
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}))] * 3)

    @agentic_function
    def stubborn():
        return llm("go", tools=[add], max_tool_turns=2)

    with Session() as session, Runtime(model), pytest.raises(ModelError) as caught:
        stubborn()
    assert "after max_tool_turns=2 rounds" in str(caught.value)
    exchanges = session.dag.find(kind="llm")
    assert len(exchanges) == 3 and len(session.dag.find(name="add", kind="code")) == 2
    assert caught.value.node_id == exchanges[-1].id
    assert exchanges[-1].status == "error" and "max_tool_turns" in exchanges[-1].error


def test_a_tool_call_reply_without_tools_is_an_error_not_an_empty_string():
    model = ScriptedModel([calls(("add", {"a": 1, "b": 1}))])
    with Session(), Runtime(model), pytest.raises(ModelError, match="offered no tools"):
        llm("hello")


def test_plain_functions_are_wrapped_and_recorded():
    def lookup(city: str) -> str:
        """Weather of a city."""
        return f"sunny in {city}"

    model = ScriptedModel([calls(("lookup", {"city": "Oslo"})), "It is sunny."])
    with Session() as session, Runtime(model):
        assert llm("weather?", tools=[lookup]) == "It is sunny."
    (tool,) = session.dag.find(name="lookup", kind="code")
    assert tool.output == "sunny in Oslo" and tool.parent is None
    assert model.requests[0].tools[0]["function"]["description"] == "Weather of a city."


def test_run_stopped_and_usage_errors_from_a_tool_propagate():
    @agentic_function
    def halt() -> str:
        raise RunStopped("enough")

    model = ScriptedModel([calls(("halt", {}))])
    with Session(), Runtime(model), pytest.raises(RunStopped, match="enough"):
        llm("go", tools=[halt])

    @agentic_function
    def diverged() -> str:
        raise ResumeDivergence("the re-run took another path")

    model = ScriptedModel([calls(("diverged", {}))])
    with Session(), Runtime(model), pytest.raises(ResumeDivergence):
        llm("go", tools=[diverged])


def test_bad_tools_and_limits_are_usage_errors():
    with Session(), Runtime(ScriptedModel(["x"])):
        with pytest.raises(UsageError, match="must be an int >= 1"):
            llm("go", tools=[add], max_tool_turns=0)
        with pytest.raises(UsageError, match="two tools are named 'add'"):
            llm("go", tools=[add, add])
        with pytest.raises(UsageError, match="not allowed by model providers"):
            llm("go", tools=[lambda x: x])


def test_a_hidden_required_parameter_is_refused_up_front():
    @agentic_function(input={"secret": {"hidden": True}})
    def uses(secret: str, x: int) -> int:
        return x

    with Session(), Runtime(ScriptedModel(["x"])), pytest.raises(UsageError, match="'secret'"):
        llm("go", tools=[uses])


def test_structured_output_after_tool_calls():
    class Answer(BaseModel):
        value: int

    model = ScriptedModel([calls(("add", {"a": 2, "b": 2})), {"value": 4}])
    with Session(), Runtime(model):
        assert llm("2+2", tools=[add], response_format=Answer) == Answer(value=4)


def test_allm_runs_parallel_calls_concurrently():
    both_started = threading.Barrier(2, timeout=10)

    @agentic_function
    async def slow(name: str) -> str:
        await asyncio.to_thread(both_started.wait)  # fails unless the other runs too
        return name.upper()

    @agentic_function
    def blocking(name: str) -> str:
        both_started.wait()
        return name

    model = ScriptedModel([calls(("slow", {"name": "a"}), ("blocking", {"name": "b"})), "done"])

    async def main():
        with Session() as session, Runtime(model):
            assert await allm("go", tools=[slow, blocking]) == "done"
        return session

    session = asyncio.run(main())
    outputs = {n.name: n.output for n in session.dag.find(kind="code")}
    assert outputs == {"slow": "A", "blocking": "b"}
    assert all(n.parent is None for n in session.dag.find(kind="code"))


def test_a_later_call_sees_the_finished_loop_as_calls_and_results():
    model = ScriptedModel([calls(("add", {"a": 2, "b": 3})), "5", "ok"])

    @agentic_function
    def twice():
        llm("sum?", tools=[add])
        return llm("thanks")

    with Session() as session, Runtime(model):
        twice()
    roles = [m["role"] for m in model.requests[2].messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user"]
    for node in session.dag.find(kind="llm"):
        assert seen_by(session.dag, node).messages_hash == node.messages_hash


def test_a_tool_that_asks_the_model_itself_sees_the_pending_call_as_text():
    @agentic_function
    def helper(topic: str) -> str:
        return llm(f"one fact about {topic}")

    model = ScriptedModel([calls(("helper", {"topic": "tea"})), "tea is old", "done"])
    with Session() as session, Runtime(model):
        assert llm("tell me", tools=[helper]) == "done"
    inner = model.requests[1].messages
    assert all("tool_calls" not in m and m["role"] != "tool" for m in inner)
    assert 'assistant: [calls helper({"topic": "tea"})]' in model.requests[1].history
    assert model.requests[2].messages[-1] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": "tea is old",
    }
    for node in session.dag.find(kind="llm"):
        assert seen_by(session.dag, node).messages_hash == node.messages_hash


def test_a_tool_loop_replays_offline_and_tools_run_again():
    model = ScriptedModel([calls(("add", {"a": 2, "b": 3})), "5"])
    with Session() as recorded, Runtime(model):
        solve("2 + 3?")
    with Session() as replayed, Runtime(ReplayModel(recorded)):
        assert solve("2 + 3?") == "5"
    assert [n.kind for n in replayed.dag.nodes] == [n.kind for n in recorded.dag.nodes]
    second = replayed.dag.find(kind="llm")[1]
    assert second.messages_hash == recorded.dag.find(kind="llm")[1].messages_hash


def test_resume_replays_the_loop_without_running_a_completed_tool_again(tmp_path):
    runs: list[int] = []

    @agentic_function
    def count(n: int) -> int:
        runs.append(n)
        return n

    crash = {"on": True}

    @agentic_function
    def fragile(n: int) -> int:
        if crash["on"]:
            raise RunStopped("process died")
        return n * 10

    @agentic_function
    def agent():
        return llm("go", tools=[count, fragile])

    store = str(tmp_path / "s.db")
    script = [calls(("count", {"n": 1})), calls(("fragile", {"n": 2}))]
    with Session(store) as first, Runtime(ScriptedModel(script)), pytest.raises(RunStopped):
        agent()
    crash["on"] = False
    resumed_model = ScriptedModel(["20"])
    with Session.open(store, first.id, resume=True) as again, Runtime(resumed_model):
        assert agent() == "20"
    assert runs == [1]
    assert len(resumed_model.requests) == 1  # the two recorded exchanges were replayed
    fragile_node = again.dag.find(name="fragile", kind="code")[0]
    assert fragile_node.output == 20 and fragile_node.meta["tool_call_id"] == "call_2"
    last = again.dag.find(kind="llm")[-1]
    assert seen_by(again.dag, last).messages_hash == last.messages_hash


def test_pii_placeholders_in_tool_arguments_are_restored_for_the_tool():
    from openprogram import PIIRedactor

    sent: list[str] = []

    @agentic_function
    def send_mail(to: str) -> str:
        sent.append(to)
        return "sent"

    def script(request):
        if request.tools and not sent:
            placeholder = request.messages[-1]["content"].split()[-1]  # what the model saw
            assert placeholder.startswith("<EMAIL_")
            return calls(("send_mail", {"to": placeholder}))
        return "done"

    with Session() as session, Runtime(ScriptedModel(script), callbacks=[PIIRedactor()]):
        assert llm("Mail ada@example.com", tools=[send_mail]) == "done"
    assert sent == ["ada@example.com"]
    asking = session.dag.find(kind="llm")[0]
    assert asking.meta["tool_calls"][0]["arguments"]["to"].startswith("<EMAIL_")  # as replied


def _provider_shape_ok(messages) -> bool:
    """Every assistant tool_calls message is followed by exactly one tool message per
    call, in order, and every tool message answers such a call."""
    position = 0
    while position < len(messages):
        message = messages[position]
        if message["role"] == "tool":
            return False
        if "tool_calls" in message:
            ids = [call["id"] for call in message["tool_calls"]]
            answers = messages[position + 1 : position + 1 + len(ids)]
            if [m.get("tool_call_id") for m in answers] != ids:
                return False
            position += len(ids)
        position += 1
    return True


def test_every_render_window_keeps_tool_messages_in_the_providers_shape():
    from openprogram.render.render import render_context

    model = ScriptedModel(
        [
            calls(("add", {"a": 1, "b": 2}), ("divide", {"a": 1, "b": 0})),
            "first",
            calls(("add", {"a": 3, "b": 4})),
            "second",
        ]
    )

    @agentic_function
    def agent():
        llm("one", tools=[add, divide])
        add(5, 6)
        return llm("two", tools=[add])

    with Session() as session, Runtime(model):
        agent()
    dag = session.dag
    frame = dag.find(name="agent", kind="code")[0]
    whole = render_context(dag, frame.id, content="next?").messages
    assert sum("tool_calls" in m for m in whole) == 2 and _provider_shape_ok(whole)
    for subcalls in range(-1, len(dag) + 1):
        for callers in (None, 0):
            window = {"callers": callers, "subcalls": subcalls}
            rendered = render_context(dag, frame.id, window, content="next?")
            assert _provider_shape_ok(rendered.messages), (window, rendered.messages)
        for llm_node in dag.find(kind="llm"):
            rendered = render_context(dag, frame.id, {"subcalls": subcalls}, before=llm_node.seq)
            assert _provider_shape_ok(rendered.messages)


def test_an_async_loop_with_parallel_calls_replays_strictly():
    @agentic_function
    async def fetch(url: str) -> str:
        await asyncio.sleep(0)
        return f"page {url}"

    @agentic_function
    async def browse() -> str:
        return await allm("read both", tools=[fetch])

    script = [calls(("fetch", {"url": "a"}), ("fetch", {"url": "b"})), "both read"]

    async def run(model):
        with Session() as session, Runtime(model):
            assert await browse() == "both read"
        return session

    recorded = asyncio.run(run(ScriptedModel(script)))
    replayed = asyncio.run(run(ReplayModel(recorded)))
    assert [n.output for n in replayed.dag.find(name="fetch")] == ["page a", "page b"]
    last = replayed.dag.find(kind="llm")[-1]
    assert last.messages_hash == recorded.dag.find(kind="llm")[-1].messages_hash
