"""Callback semantics: order, chaining, the DAG keeping originals, errors, run end."""

from __future__ import annotations

import logging

import pytest

from openprogram import (
    Callback,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    agentic_function,
    llm,
)
from openprogram.callbacks import current_run, gate, notify


class Recorder(Callback):
    """Appends `(tag, hook, node name)` for every observer hook to a shared list."""

    def __init__(self, tag: str, events: list) -> None:
        self.tag = tag
        self.events = events

    def on_run_start(self, run):
        self.events.append((self.tag, "run_start", run.name))

    def on_run_end(self, run):
        self.events.append((self.tag, "run_end", run.name, run.status))

    def on_call_start(self, node):
        self.events.append((self.tag, "call_start", node.name))

    def on_call_end(self, node):
        self.events.append((self.tag, "call_end", node.name))

    def on_usage(self, node, usage):
        self.events.append((self.tag, "usage", node.name))


class Append(Callback):
    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def on_llm_start(self, messages):
        *history, last = messages
        *parts, text = last["content"]
        return [
            *history,
            {**last, "content": [*parts, {**text, "text": text["text"] + self.suffix}]},
        ]

    def on_llm_end(self, reply):
        return reply + self.suffix


class Refuse(Callback):
    def __init__(self, reason: str, asked: list) -> None:
        self.stop_reason = reason
        self.asked = asked

    def on_run_continue(self, runtime, *, kind, frame=None, **context):
        self.asked.append((self.stop_reason, kind))
        return False


class Allow(Callback):
    def __init__(self, asked: list) -> None:
        self.asked = asked

    def on_run_continue(self, runtime, *, kind, frame=None, **context):
        self.asked.append(("allow", kind))
        return True


class Broken(Callback):
    def __init__(self, hook: str, *, strict: bool = False) -> None:
        self.strict = strict
        setattr(self, hook, self._raise)

    def _raise(self, *args):
        raise RuntimeError("observer bug")


@agentic_function
def outer(text: str) -> str:
    return inner(text)


@agentic_function
def inner(text: str) -> str:
    return llm(text)


def test_observers_are_called_in_list_order_for_every_call():
    events: list = []
    runtime = Runtime(
        ScriptedModel(["hi"]), callbacks=[Recorder("a", events), Recorder("b", events)]
    )
    with Session(), runtime:
        outer("hello")
    assert events == [
        ("a", "run_start", "outer"),
        ("b", "run_start", "outer"),
        ("a", "call_start", "outer"),
        ("b", "call_start", "outer"),
        ("a", "call_start", "inner"),
        ("b", "call_start", "inner"),
        ("a", "usage", "inner"),
        ("b", "usage", "inner"),
        ("a", "call_end", "inner"),
        ("b", "call_end", "inner"),
        ("a", "call_end", "outer"),
        ("b", "call_end", "outer"),
        ("a", "run_end", "outer", "completed"),
        ("b", "run_end", "outer", "completed"),
    ]


def test_transformers_chain_in_list_order_and_the_dag_keeps_the_raw_exchange():
    model = ScriptedModel(["reply"])
    with Session() as session, Runtime(model, callbacks=[Append("-a"), Append("-b")]):
        assert outer("hello") == "reply-a-b"
    assert model.requests[0].messages[-1]["content"][-1]["text"] == "hello-a-b"
    (node,) = session.dag.find(kind="llm")
    assert node.input == "hello"
    assert node.output == "reply"
    assert session.dag.find(name="inner")[0].output == "reply-a-b"


def test_gates_are_asked_in_order_and_the_first_refusal_stops_the_run():
    asked: list = []
    model = ScriptedModel(["never"])
    callbacks = [Allow(asked), Refuse("first", asked), Refuse("second", asked)]
    with (
        Session() as session,
        Runtime(model, callbacks=callbacks),
        pytest.raises(RunStopped, match="first"),
    ):
        outer("hello")
    assert asked == [("allow", "llm"), ("first", "llm")]
    assert model.requests == []
    run, inner = session.dag.find(name="outer")[0], session.dag.find(name="inner")[0]
    assert run.meta["stop_reason"] == inner.meta["stop_reason"] == "first"
    # a stop is not a failure: both calls it ended are `stopped`, the error says by what
    assert run.status == inner.status == "stopped" and inner.error == "RunStopped: first"


def test_run_end_fires_on_success_error_and_a_gate_stop():
    events: list = []

    @agentic_function
    def crash() -> None:
        raise ValueError("boom")

    working = Runtime(ScriptedModel(["ok"]), callbacks=[Recorder("r", events)])
    gated = Runtime(ScriptedModel([]), callbacks=[Recorder("r", events), Refuse("no", [])])
    with Session():
        with working:
            outer("fine")
            with pytest.raises(ValueError):
                crash()
        with gated, pytest.raises(RunStopped):
            outer("stopped")
    ends = [e for e in events if e[1] == "run_end"]
    assert ends == [
        ("r", "run_end", "outer", "completed"),
        ("r", "run_end", "crash", "error"),
        ("r", "run_end", "outer", "stopped"),
    ]


def test_a_raising_observer_is_logged_and_recorded_on_the_run_not_fatal(caplog):
    caplog.set_level(logging.WARNING, "openprogram.callbacks")
    events: list = []
    callbacks = [Broken("on_call_start"), Broken("on_usage"), Recorder("after", events)]
    with Session() as session, Runtime(ScriptedModel(["fine"]), callbacks=callbacks):
        assert outer("hello") == "fine"
    run = session.dag.find(name="outer")[0]
    errors = run.meta["callback_errors"]
    assert errors.count("Broken.on_call_start: RuntimeError: observer bug") == 2
    assert "Broken.on_usage: RuntimeError: observer bug" in errors
    assert "Broken.on_call_start failed: observer bug" in caplog.text
    assert ("after", "run_end", "outer", "completed") in events


def test_a_strict_observer_error_is_fatal():
    with (
        Session(),
        Runtime(ScriptedModel(["fine"]), callbacks=[Broken("on_usage", strict=True)]),
        pytest.raises(RuntimeError, match="observer bug"),
    ):
        outer("hello")


def test_a_transformer_error_propagates_and_the_exchange_is_recorded_as_failed():
    class BadStart(Callback):
        def on_llm_start(self, messages):
            raise RuntimeError("transformer bug")

    class BadEnd(Callback):
        def on_llm_end(self, reply):
            raise RuntimeError("reply bug")

    model = ScriptedModel(["never"])
    with (
        Session() as session,
        Runtime(model, callbacks=[BadStart()]),
        pytest.raises(RuntimeError, match="transformer bug"),
    ):
        outer("hello")
    (node,) = session.dag.find(kind="llm")
    assert node.status == "error" and "transformer bug" in node.error
    assert model.requests == []

    with (
        Session(),
        Runtime(ScriptedModel(["sent"]), callbacks=[BadEnd()]),
        pytest.raises(RuntimeError, match="reply bug"),
    ):
        outer("hello")


def test_a_gate_error_propagates():
    class BadGate(Callback):
        def on_run_continue(self, runtime, **context):
            raise RuntimeError("gate bug")

    with (
        Session(),
        Runtime(ScriptedModel(["never"]), callbacks=[BadGate()]),
        pytest.raises(RuntimeError, match="gate bug"),
    ):
        outer("hello")


def test_a_loop_gate_of_any_kind_records_the_reason_on_the_frame_and_the_run():
    asked: list = []
    callbacks = [Allow(asked), Refuse("enough steps", asked)]
    runtime = Runtime(ScriptedModel([]), callbacks=callbacks)
    seen: dict = {}

    @agentic_function
    def step() -> None:
        frame = session.dag.find(name="step")[0]
        seen["reason"] = gate(callbacks, runtime, kind="gui_step", frame=frame)
        seen["run"] = current_run()

    @agentic_function
    def loop() -> str:
        step()
        return "ended cleanly"

    with Session() as session, runtime:
        assert loop() == "ended cleanly"
    assert seen["reason"] == "enough steps"
    assert asked == [("allow", "gui_step"), ("enough steps", "gui_step")]
    assert seen["run"].name == "loop"
    assert session.dag.find(name="step")[0].meta["stop_reason"] == "enough steps"
    assert session.dag.find(name="loop")[0].meta["stop_reason"] == "enough steps"
    assert gate([Allow([])], runtime, kind="gui_step", frame=None) is None


def test_notify_records_observer_errors_on_the_given_node():
    with Session() as session:
        node = session.dag.add("code", "run")
        notify([Broken("on_screenshot")], "on_screenshot", object(), 1, record_on=node)
    assert node.meta["callback_errors"] == ["Broken.on_screenshot: RuntimeError: observer bug"]
    assert current_run() is None


def test_the_messages_are_built_for_a_callback_only_when_one_reads_them():
    class Reads(Callback):
        def on_llm_start(self, messages):
            return messages

    for callbacks, built in [([Recorder("a", [])], False), ([Recorder("a", []), Reads()], True)]:
        model = ScriptedModel(["fine"])
        with Session(), Runtime(model, callbacks=callbacks):
            outer("hello")
        (request,) = model.requests
        assert (request.rendered._messages is not None) is built  # the model never read them
