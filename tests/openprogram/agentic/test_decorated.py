"""What @agentic_function returns: a typed object that stands for the function."""

from __future__ import annotations

import asyncio
import inspect
import pickle
import sys

import pytest

from openprogram import Session, agentic_function
from openprogram.agentic.function import AgenticFunction, AsyncAgenticFunction, is_async


@agentic_function(expose="full", input={"text": {"description": "what to shout"}})
def shout(text: str, times: int = 1) -> str:
    """Shout `text`.

    More words."""
    return (text.upper() + "!") * times


@agentic_function
async def whisper(text: str) -> str:
    """Whisper `text`."""
    await asyncio.sleep(0)
    return text.lower()


class Greeter:
    def __init__(self, name: str) -> None:
        self.name = name

    @agentic_function
    def greet(self, greeting: str) -> str:
        return f"{greeting}, {self.name}"


def test_the_decorated_function_is_an_object_with_its_settings_and_the_functions_face():
    assert isinstance(shout, AgenticFunction) and shout.__agentic__ is True
    assert (shout.__name__, shout.__qualname__, shout.__module__) == (
        "shout", "shout", __name__,
    )  # fmt: skip
    assert shout.__doc__ is not None and shout.__doc__.startswith("Shout")
    assert str(inspect.signature(shout)) == "(text: 'str', times: 'int' = 1) -> 'str'"
    assert shout.expose == "full" and shout.input_meta == {"text": {"description": "what to shout"}}
    assert shout.spec["name"] == "shout" and set(shout.arguments_model.model_fields) == {
        "text", "times",
    }  # fmt: skip
    with Session() as session:
        assert shout("hey", times=2) == "HEY!HEY!"
    (node,) = session.dag.nodes
    assert node.name == "shout" and node.input == {"text": "hey", "times": 2}


def test_as_a_method_it_binds_to_its_instance_and_records_without_self():
    greeter = Greeter("Ada")
    assert Greeter.greet is Greeter.__dict__["greet"]
    assert str(inspect.signature(greeter.greet)) == "(greeting: 'str') -> 'str'"
    with Session() as session:
        assert greeter.greet("Hello") == "Hello, Ada"
        assert Greeter.greet(greeter, "Hi") == "Hi, Ada"
    assert [n.input for n in session.dag.nodes] == [{"greeting": "Hello"}, {"greeting": "Hi"}]


def test_an_async_one_is_awaited_and_known_for_async():
    assert isinstance(whisper, AsyncAgenticFunction) and is_async(whisper)
    assert not is_async(shout)
    if sys.version_info >= (3, 12):
        assert inspect.iscoroutinefunction(whisper)
    with Session() as session:
        assert asyncio.run(whisper("LOUD")) == "loud"
    (node,) = session.dag.nodes
    assert node.status == "completed" and node.output == "loud"


def test_it_pickles_by_its_qualified_name_as_the_function_would():
    assert pickle.loads(pickle.dumps(shout)) is shout
    assert pickle.loads(pickle.dumps(Greeter.greet)) is Greeter.greet


def test_a_local_one_refuses_to_pickle_as_a_local_function_does():
    @agentic_function
    def local() -> None:
        return None

    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(local)
