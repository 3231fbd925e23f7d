"""ScriptedModel: lists, per-function dicts, callables, running out."""

from __future__ import annotations

import pytest

from openprogram import (
    Runtime,
    ScriptedModel,
    ScriptExhausted,
    Session,
    UsageError,
    agentic_function,
    llm,
)


@agentic_function
def planner():
    return llm("plan")


@agentic_function
def checker():
    return llm("check")


def test_a_list_is_consumed_in_order():
    model = ScriptedModel(["one", {"two": 2}])
    with Session(), Runtime(model):
        assert planner() == "one"
        assert checker() == '{"two": 2}'
    assert model.remaining == 0


def test_a_dict_answers_per_function_with_a_star_fallback():
    model = ScriptedModel({"planner": ["p1", "p2"], "*": ["other"]})
    with Session(), Runtime(model):
        assert [planner(), checker(), planner()] == ["p1", "other", "p2"]


def test_a_callable_sees_the_request():
    model = ScriptedModel(lambda request: f"{request.function}: {request.text}")
    with Session() as session, Runtime(model):
        assert planner() == "planner: plan"
    request = model.requests[0]
    assert request.node_id == session.dag.find(kind="llm")[0].id
    assert request.messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[planner #1] input={}"},
                {"type": "text", "text": "plan"},
            ],
        }
    ]


def test_running_out_is_a_clear_error_recorded_on_the_node():
    model = ScriptedModel(["only"])
    with Session() as session, Runtime(model):
        planner()
        with pytest.raises(ScriptExhausted, match="ran out of replies at request #2"):
            planner()
    failed = session.dag.find(kind="llm")[-1]
    assert failed.status == "error"
    assert session.dag.find(name="planner", kind="code")[-1].status == "error"


def test_a_function_missing_from_the_dict_is_named():
    with (
        Session(),
        Runtime(ScriptedModel({"planner": ["x"]})),
        pytest.raises(ScriptExhausted, match="'checker'"),
    ):
        checker()


def test_an_exception_in_the_script_is_raised():
    with Session(), Runtime(ScriptedModel([TimeoutError("slow")])), pytest.raises(TimeoutError):
        planner()


def test_a_single_string_is_refused():
    with pytest.raises(UsageError, match="list of replies"):
        ScriptedModel("hello")


def test_a_function_as_one_function_s_script_says_to_pass_a_callable_script():
    def replies(request):
        return "ok"

    with pytest.raises(UsageError, match=r"the replies for 'f' must be a list of replies, not"):
        ScriptedModel({"f": replies})
    with pytest.raises(UsageError, match=r"ScriptedModel\(lambda request: \.\.\.\)"):
        ScriptedModel({"f": replies})


def test_one_string_as_a_script_shows_how_to_wrap_it():
    with pytest.raises(UsageError, match=r"pass ScriptedModel\(\['hello'\]\)"):
        ScriptedModel("hello")  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"the replies for 'f' must be a list of replies, not one"):
        ScriptedModel({"f": "hello"})
    with pytest.raises(UsageError, match=r"must be a list of replies, not int: 3"):
        ScriptedModel(3)  # type: ignore[arg-type]
