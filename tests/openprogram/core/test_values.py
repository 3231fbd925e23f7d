"""values.py: the stored form of call values (DESIGN §6 "Values and identity").

Different values never hash alike; equal ones always do; what has no faithful form is
opaque; renders show objects by their fields; rebuilt() makes only standard types."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import socket
import threading
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, SecretStr

from openprogram.agentic._resume import input_hash
from openprogram.core.values import (
    NotRebuildable,
    as_shown,
    kinds,
    rebuilt,
    stored_text,
    to_jsonable,
)


@dataclasses.dataclass
class Note:
    text: str
    count: int = 0


@dataclasses.dataclass
class Other:
    text: str
    count: int = 0


class Card(BaseModel):
    title: str
    tags: list[str] = []


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Size(enum.IntEnum):
    SMALL = 1
    LARGE = 2


class Plain:
    def __init__(self, text: str, count: int) -> None:
        self.text = text
        self.count = count


class Slotted:
    __slots__ = ("__inner", "text")

    def __init__(self, text: str, secret: int) -> None:
        self.text = text
        self.__inner = secret


def stored(value: Any) -> Any:
    return to_jsonable(value, None)


def digest(value: Any) -> str:
    return input_hash({"value": stored(value)})


def test_objects_are_stored_by_their_fields_with_their_type():
    assert stored(Note("hi", 2)) == {
        "$type": f"{__name__}.Note",
        "$fields": {"text": "hi", "count": 2},
    }
    assert stored(Card(title="t"))["$fields"] == {"title": "t", "tags": []}
    assert stored(Plain("a", 1)) == {
        "$type": f"{__name__}.Plain",
        "$fields": {"text": "a", "count": 1},
    }
    assert stored(Slotted("a", 7))["$fields"] == {"_Slotted__inner": 7, "text": "a"}
    assert stored(Color.RED) == {"$type": f"{__name__}.Color", "$value": "red"}
    assert stored(Size.LARGE) == {"$type": f"{__name__}.Size", "$value": 2}
    assert stored(PurePosixPath("/a")) == {"$type": "pathlib.PurePosixPath", "$value": "/a"}
    assert stored(b"\x00\xff") == {"$type": "builtins.bytes", "$value": "AP8="}
    assert stored({3, 1, 2}) == {"$type": "builtins.set", "$value": [1, 2, 3]}
    assert stored({1: "a"}) == {"$type": "builtins.dict", "$value": [[1, "a"]]}
    assert stored(2**64) == {"$type": "builtins.int", "$value": str(2**64)}
    assert stored([1, "a", None, 1.5, {"k": True}]) == [1, "a", None, 1.5, {"k": True}]


def test_attrs_classes_are_stored_by_their_fields():
    attrs = pytest.importorskip("attrs")

    @attrs.define
    class Pair:
        left: int
        right: int

    assert stored(Pair(1, 2))["$fields"] == {"left": 1, "right": 2}
    assert digest(Pair(1, 2)) != digest(Pair(2, 1))


def test_values_with_no_faithful_form_are_opaque_and_named():
    def gen() -> Any:
        yield 1

    with socket.socket() as sock, open(__file__) as file:
        values = [threading.Lock(), file, sock, gen(), threading.Thread(), lambda: 1]
        found: list[str] = []
        forms = [to_jsonable(v, None, found) for v in values]
    assert forms[:4] == [
        {"$opaque": "_thread.lock"},
        {"$opaque": "_io.TextIOWrapper"},
        {"$opaque": "socket.socket"},  # a Python class over a C one: its state is in C
        {"$opaque": "builtins.generator"},
    ]
    assert kinds(forms[4]) == (True, True)  # a thread is stored by its fields: it holds a lock
    assert forms[5] == {"$opaque": "builtins.function"}  # a lambda has no name to keep
    assert "_thread.lock" in found and "builtins.generator" in found
    assert as_shown(forms[0]) == "<_thread.lock>"


def test_fields_named_like_secrets_are_never_stored():
    @dataclasses.dataclass
    class Client:
        base_url: str
        api_key: str
        password: str | None = None

    class Login(BaseModel):
        user: str
        word: SecretStr

    found: list[str] = []
    form = to_jsonable(
        [Client("u", "hunter2-hunter2"), Login(user="a", word="hunter3")], None, found
    )
    assert "hunter" not in json.dumps(form)
    secret = {"$opaque": "builtins.str", "$why": "secret"}
    assert form[0]["$fields"] == {"base_url": "u", "api_key": secret, "password": None}
    assert form[1]["$fields"]["word"] == {"$opaque": "pydantic.types.SecretStr", "$why": "secret"}
    assert found == ["builtins.str (secret)", "pydantic.types.SecretStr (secret)"]
    assert as_shown(form[0]) == {"base_url": "u", "api_key": "<secret: str>", "password": None}


def test_an_object_with_a_part_that_cannot_be_read_is_opaque():
    class Unreadable(dict):  # type: ignore[type-arg]
        def items(self) -> Any:
            raise OSError("the backing store is gone")

    found: list[str] = []
    form = to_jsonable({"note": Note("a"), "holder": Plain("x", Unreadable())}, None, found)  # type: ignore[arg-type]
    assert form == {
        "note": {"$type": f"{__name__}.Note", "$fields": {"text": "a", "count": 0}},
        "holder": {"$opaque": f"{__name__}.Plain"},
    }
    assert found == [f"{__name__}.Plain"]


def test_cycles_and_deep_nesting_are_bounded_markers():
    loop: list[Any] = [1]
    loop.append(loop)
    note = Plain("x", 0)
    note.count = note  # type: ignore[assignment]
    assert stored(loop) == [1, {"$opaque": "builtins.list", "$why": "cycle"}]
    assert stored(note)["$fields"]["count"] == {"$opaque": f"{__name__}.Plain", "$why": "cycle"}
    assert as_shown(stored(loop)) == [1, "<cycle: list>"]


def test_dicts_that_look_like_ours_are_kept_apart():
    lookalike = {"$type": f"{__name__}.Note", "$fields": {"text": "hi", "count": 0}}
    assert digest(lookalike) != digest(Note("hi"))
    assert as_shown(stored(lookalike)) == lookalike
    assert rebuilt(stored(lookalike)) == lookalike
    assert digest({1: "a"}) != digest({"1": "a"})


def test_a_huge_int_never_breaks_text_conversion():
    huge = -(10**5000) - 3
    form = stored(huge)
    text = stored_text(form)  # JSON, hashing and renders never call str() on it
    assert len(text) < 5000 and input_hash({"n": form})
    assert as_shown(form) == "<int of about 5001 digits>"
    assert rebuilt(form) == huge
    assert json.loads(json.dumps(form)) == form


def test_renders_show_fields_values_and_text():
    value = {
        "note": Note("hi"),
        "color": Color.BLUE,
        "when": datetime.datetime(2026, 1, 2, 3, 4),
        "path": Path("/tmp/x"),
        "ids": frozenset({2, 1}),
        "raw": b"ab",
    }
    assert as_shown(stored(value)) == {
        "note": {"text": "hi", "count": 0},
        "color": "blue",
        "when": "2026-01-02T03:04:00",
        "path": "/tmp/x",
        "ids": [1, 2],
        "raw": "b'ab'",
    }


def test_standard_types_are_rebuilt_and_others_only_as_fields():
    value = {
        "when": datetime.date(2026, 1, 2),
        "span": datetime.timedelta(days=1, seconds=3),
        "amount": decimal.Decimal("1.10"),
        "id": uuid.UUID(int=5),
        "ids": {1, 2},
        "big": 2**80,
        "raw": bytearray(b"x"),
        "keys": {Color.RED.value: 1, 2: "t"},
    }
    assert rebuilt(stored(value)) == value
    with pytest.raises(NotRebuildable):
        rebuilt(stored(Note("hi")))  # a user type: only its return annotation may rebuild it
    assert rebuilt(stored(Note("hi")), fields=True) == {"text": "hi", "count": 0}
    with pytest.raises(NotRebuildable):
        rebuilt(stored(threading.Lock()), fields=True)


# -- different values never hash alike -------------------------------------------------------

texts = st.text(st.characters(exclude_categories=()), max_size=8)
small = st.one_of(st.integers(-5, 5), texts, st.none())  # no bools: True == 1 in Python
kinds_of_values = st.one_of(
    st.builds(Note, texts, st.integers(-3, 3)),
    st.builds(Other, texts, st.integers(-3, 3)),
    st.builds(Card, title=texts, tags=st.lists(texts, max_size=2)),
    st.builds(Plain, texts, st.integers(-3, 3)),
    st.sampled_from([Color.RED, Color.BLUE, Size.SMALL, Size.LARGE]),
    st.builds(PurePosixPath, texts),
    st.dates(),
    st.datetimes(),
    st.binary(max_size=8),
    st.frozensets(small, max_size=3),
    st.sets(st.integers(-3, 3), max_size=3),
    st.integers(min_value=2**63, max_value=2**70) | st.just(10**5000) | st.just(10**5000 + 1),
    st.dictionaries(st.integers(-2, 2), small, max_size=2),
    st.dictionaries(texts, small, max_size=2),
    small,
    st.booleans(),
)


def same(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, Plain):
        return vars(a) == vars(b)
    return bool(a == b)


@settings(max_examples=400, deadline=None)
@given(kinds_of_values, kinds_of_values)
@pytest.mark.slow
def test_distinct_values_never_share_a_hash_and_equal_ones_always_do(a, b):
    assert (digest(a) == digest(b)) == same(a, b)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers() | texts, max_size=6))
@pytest.mark.slow
def test_a_set_hashes_alike_whatever_its_order(items):
    assert digest(set(items)) == digest(set(reversed(items)))
