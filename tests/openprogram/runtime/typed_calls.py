"""What mypy sees of llm() and allm(): checked by test_ambient.py, never run.

Each `assert_type` fails when a call's return is `Any`, and each `type: ignore` is
reported as unused when a misuse goes unnoticed (warn-unused-ignores, set below).
"""

# mypy: warn-unused-ignores, disallow-untyped-defs

from __future__ import annotations

from typing import assert_type

from pydantic import BaseModel

from openprogram import Runtime, allm, llm
from openprogram.runtime.streaming import (
    AsyncTextStream,
    AsyncToolTextStream,
    PendingStream,
    TextStream,
    ToolTextStream,
)


class Answer(BaseModel):
    text: str


def sync_calls(runtime: Runtime, maybe_stream: bool) -> None:
    assert_type(llm("hi"), str)
    assert_type(llm("hi", response_format=Answer), Answer)
    assert_type(llm("hi", response_format=None), str)
    assert_type(llm("hi", stream=True), TextStream | ToolTextStream)
    for chunk in llm("hi", tools=[len], stream=True):
        assert_type(chunk, str)
    assert_type(llm("hi", stream=maybe_stream), str | TextStream | ToolTextStream)
    assert_type(runtime.llm("hi"), str)
    assert_type(runtime.llm("hi", response_format=Answer), Answer)
    assert_type(runtime.llm("hi", stream=True), TextStream | ToolTextStream)
    llm("hi", response_format=Answer).upper()  # type: ignore[attr-defined]  # not a str
    print(llm("hi").text)  # type: ignore[attr-defined]  # not an Answer
    llm("hi", response_format=dict)  # type: ignore[type-var]  # not a pydantic model


async def async_calls(runtime: Runtime) -> None:
    assert_type(await allm("hi"), str)
    assert_type(await allm("hi", response_format=Answer), Answer)
    assert_type(allm("hi", stream=True), PendingStream)
    async for chunk in allm("hi", stream=True):
        assert_type(chunk, str)
    assert_type(await allm("hi", stream=True), AsyncTextStream | AsyncToolTextStream)
    assert_type(await runtime.allm("hi", response_format=Answer), Answer)
    print((await allm("hi")).text)  # type: ignore[attr-defined]  # not an Answer
