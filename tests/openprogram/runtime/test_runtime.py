"""Runtime and llm(): retries, errors, structured output, usage, recording."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from pydantic import BaseModel

from openprogram import (
    ConfigError,
    ContextDAG,
    ModelAuthError,
    ModelOutputError,
    ModelUnavailable,
    RunStopped,
    Runtime,
    ScriptedModel,
    Session,
    Usage,
    agentic_function,
    allm,
    llm,
)
from openprogram.errors import UsageError
from openprogram.models.model import ModelReply
from openprogram.render.render import seen_by


class Verdict(BaseModel):
    ok: bool
    why: str


def quiet(runtime: Runtime) -> list[float]:
    """Record backoff delays instead of sleeping them."""
    delays: list[float] = []
    runtime._sleep = delays.append

    async def asleep(seconds: float) -> None:
        delays.append(seconds)

    runtime._asleep = asleep
    return delays


def transient(retry_after=None):
    error = ModelUnavailable("rate limited")
    error.retry_after = retry_after
    return error


def test_llm_without_a_model_says_how_to_configure_one():
    with Session(), pytest.raises(ConfigError, match="OPENPROGRAM_MODEL"):
        llm("hi")


def test_model_comes_from_the_environment_by_default(monkeypatch):
    monkeypatch.setenv("OPENPROGRAM_MODEL", "openai/gpt-4o-mini")
    assert repr(Runtime()) == "Runtime(model='openai/gpt-4o-mini')"


def test_transient_errors_are_retried_with_backoff_then_succeed():
    runtime = Runtime(ScriptedModel([transient(), transient(), "fine"]), max_retries=2)
    delays = quiet(runtime)
    with Session() as session, runtime:
        assert llm("hello") == "fine"
    assert len(delays) == 2
    assert 0.25 <= delays[0] <= 0.75 and 0.5 <= delays[1] <= 1.5  # jittered exponential
    (node,) = session.dag.find(kind="llm")
    assert node.status == "completed"
    assert len(node.meta["attempts"]) == 2


def test_retry_after_is_honoured():
    runtime = Runtime(ScriptedModel([transient(retry_after=7), "fine"]))
    delays = quiet(runtime)
    with Session(), runtime:
        llm("hello")
    assert delays == [7.0]


def test_giving_up_after_retries_raises_model_unavailable_recorded_on_the_node():
    runtime = Runtime(ScriptedModel([transient(), transient()]), max_retries=1)
    quiet(runtime)
    with (
        Session() as session,
        runtime,
        pytest.raises(ModelUnavailable, match="gave up after 2") as caught,
    ):
        llm("hello")
    (node,) = session.dag.find(kind="llm")
    assert caught.value.node_id == node.id
    assert node.status == "error" and "rate limited" in node.error


def test_auth_errors_fail_at_once():
    runtime = Runtime(ScriptedModel([ModelAuthError("bad key"), "never"]))
    delays = quiet(runtime)
    with Session(), runtime, pytest.raises(ModelAuthError):
        llm("hello")
    assert delays == []


def test_structured_output_is_validated():
    model = ScriptedModel(['```json\n{"ok": true, "why": "saved"}\n```'])
    with Session(), Runtime(model):
        verdict = llm("judge", response_format=Verdict)
    assert verdict == Verdict(ok=True, why="saved")
    assert "JSON schema" in model.requests[0].text


def test_invalid_structured_output_gets_one_repair_re_ask():
    model = ScriptedModel(["sure! it worked", {"ok": False, "why": "typo"}])
    with Session() as session, Runtime(model):
        verdict = llm("judge", response_format=Verdict)
    assert verdict.why == "typo"
    first, repair = session.dag.find(kind="llm")
    assert first.status == "error" and "invalid structured output" in first.error
    assert repair.status == "completed"
    assert "could not be used" in model.requests[1].text
    assert first.id in repair.reads  # the repair sees the bad reply


def test_a_second_invalid_reply_raises_model_output_error():
    model = ScriptedModel(["nope", '{"ok": "maybe"}'])
    with Session() as session, Runtime(model), pytest.raises(ModelOutputError) as caught:
        llm("judge", response_format=Verdict)
    assert caught.value.reply == '{"ok": "maybe"}'
    assert caught.value.node_id == session.dag.find(kind="llm")[-1].id
    assert isinstance(caught.value, ValueError)


def test_usage_is_recorded_per_node_and_totalled_on_the_runtime():
    class Priced:
        name = "priced"

        def complete(self, request):
            usage = Usage(input_tokens=100, output_tokens=20, cost_usd=0.01, calls=1)
            return ModelReply(text="ok", usage=usage)

        async def acomplete(self, request):
            return self.complete(request)

    runtime = Runtime(Priced())
    with Session() as session, runtime:
        llm("a")
        llm("b")
    assert [n.usage.input_tokens for n in session.dag.find(kind="llm")] == [100, 100]
    assert runtime.usage.cost_usd == pytest.approx(0.02)
    assert runtime.usage.calls == 2


def test_allm_records_like_llm_and_retries():
    runtime = Runtime(ScriptedModel([transient(), "async ok"]))
    delays = quiet(runtime)

    @agentic_function
    async def ask():
        return await allm("hello")

    with Session() as session, runtime:
        assert asyncio.run(ask()) == "async ok"
    assert len(delays) == 1
    (node,) = session.dag.find(kind="llm")
    assert node.name == "ask" and node.parent == session.dag.find(name="ask")[0].id


def test_a_gate_saying_false_stops_the_run_before_the_model_is_called():
    class Stop:
        stop_reason = "enough"

        def on_run_continue(self, runtime, **context):
            return False

    model = ScriptedModel(["never"])
    with (
        Session() as session,
        Runtime(model, callbacks=[Stop()]),
        pytest.raises(RunStopped, match="enough"),
    ):
        llm("hello")
    assert model.requests == [] and session.dag.find(kind="llm") == []


def test_transformers_change_what_is_sent_but_not_the_dag():
    class Shout:
        def on_llm_start(self, messages):
            return [{**m, "content": str(m["content"]).upper()} for m in messages]

        def on_llm_end(self, reply):
            return reply + "!"

    model = ScriptedModel(["quiet"])
    with Session() as session, Runtime(model, callbacks=[Shout()]):
        assert llm("hello") == "quiet!"
    assert model.requests[0].messages[-1]["content"] == "HELLO"
    (node,) = session.dag.find(kind="llm")
    assert node.input == "hello" and node.output == "quiet"  # the content as given


def test_image_paths_are_read_and_missing_ones_are_a_clear_error(tmp_path):
    from PIL import Image as PILImage

    path = tmp_path / "shot.png"
    PILImage.new("RGB", (4, 4), "blue").save(path)
    model = ScriptedModel(["seen"])
    with Session() as session, Runtime(model):
        llm(["look", {"type": "image", "path": str(path)}])
        with pytest.raises(ValueError, match="does not exist"):
            llm(["look", {"type": "image", "path": str(tmp_path / "missing.png")}])
    assert len(session.dag.blobs) == 1


def test_a_sync_llm_inside_a_running_event_loop_warns_once_naming_allm():
    @agentic_function
    async def blocking() -> list[str]:
        return [llm("one"), llm("two")]

    with (
        Session(),
        Runtime(ScriptedModel(["1", "2"])),
        pytest.warns(RuntimeWarning, match=r"await allm\(\.\.\.\)") as caught,
    ):
        assert asyncio.run(blocking()) == ["1", "2"]
    assert len(caught) == 1
    assert caught[0].filename == __file__  # points at the llm() call, not at openprogram


def test_a_sync_llm_in_a_worker_thread_of_an_async_program_does_not_warn():
    @agentic_function
    async def offloaded() -> str:
        return await asyncio.to_thread(llm, "in a thread")

    with Session(), Runtime(ScriptedModel(["ok"])):
        assert asyncio.run(offloaded()) == "ok"  # filterwarnings=error: any warning fails


class _Answer(BaseModel):
    text: str


@agentic_function
def _ask(response_format) -> object:
    return llm("Say hi.", response_format=response_format)


@pytest.mark.parametrize("bad", [dict, "_Answer", _Answer(text="x"), list[str]])
def test_a_response_format_that_is_not_a_pydantic_model_class_is_named(bad):
    with (
        Session() as session,
        Runtime(ScriptedModel(['{"text": "hi"}'])),
        pytest.raises(UsageError, match="is not a pydantic model class; pass a BaseModel"),
    ):
        _ask(bad)
    assert [n.kind for n in session.dag.nodes] == ["code"]  # nothing was sent or recorded


def test_a_model_class_instead_of_an_instance_says_to_make_one():
    with pytest.raises(UsageError, match=r"model=ScriptedModel is a class; pass an instance"):
        Runtime(ScriptedModel)  # type: ignore[arg-type]


def test_a_model_override_that_is_not_a_model_is_refused():
    with (
        Session(),
        Runtime(ScriptedModel(["x"])),
        pytest.raises(UsageError, match="neither a litellm model string"),
    ):
        llm("hi", model=42)  # type: ignore[arg-type]


def test_a_structured_reply_that_never_validates_shows_the_reply():
    with (
        Session(),
        Runtime(ScriptedModel(["no json here", "still none"])),
        pytest.raises(ModelOutputError, match=r"The reply was: 'still none'") as caught,
    ):
        _ask(_Answer)
    assert caught.value.reply == "still none"


def test_a_huge_unusable_reply_is_quoted_in_a_bounded_message_and_kept_whole():
    huge = "z" * 5_000_000
    with (
        Session(),
        Runtime(ScriptedModel(["no json here", huge])),
        pytest.raises(ModelOutputError, match=r"cut 4 999 700 of 5 000 000 characters") as caught,
    ):
        _ask(_Answer)
    assert len(str(caught.value)) < 2_000
    assert caught.value.reply == huge


def test_llm_nodes_of_a_long_run_hold_their_reads_as_lists_of_their_own(tmp_path):
    @agentic_function
    def step(i: int) -> str:
        return llm(f"step {i}")

    path = tmp_path / "run.db"
    with Session(path, id="steps") as session, Runtime(ScriptedModel(lambda request: "ok")):
        for i in range(40):
            step(i)
    dag = session.dag
    calls = dag.find(kind="llm")
    previous, last = calls[-2], calls[-1]
    rebuilt = seen_by(dag, last)
    assert last.reads == rebuilt.reads and len(last.reads) == 40  # the steps, then its own
    # DESIGN §2: reads is a list[str], usable as one
    assert type(last.reads) is list and all(type(i) is str for i in last.reads)
    assert json.loads(json.dumps(last.reads)) == last.reads
    assert last.reads + ["x"] == [*rebuilt.reads, "x"]  # noqa: RUF005  # list + list works
    # each node holds a list of its own: appending to one changes no other
    before = list(previous.reads)
    last.reads.append("extra")
    assert previous.reads == before and [*rebuilt.reads, "extra"] == last.reads
    assert all(a.reads is not b.reads for a, b in itertools.pairwise(calls))
    last.reads.pop()
    assert last.model_dump()["reads"] == rebuilt.reads
    data = json.loads(json.dumps(dag.to_dict()))
    assert next(n for n in data["nodes"] if n["id"] == last.id)["reads"] == rebuilt.reads
    loaded = ContextDAG.from_dict(data)
    assert [n.reads for n in loaded.nodes] == [n.reads for n in dag.nodes]
    # stored (each step's reads relative to the step before) and reopened: equal lists
    reopened = Session.open(path, "steps")
    try:
        for node in dag.nodes:
            again = reopened.dag.node(node.id)
            assert type(again.reads) is list and again.reads == node.reads
    finally:
        reopened.close()
