"""Code identity: which version of an agentic function's code made a call.

A function's identity is a hash of its source and of the identities of the decorated
functions it names (its callees, looked up in its module's globals when first called),
so changing a helper it calls changes it too. Each code node records it in
`meta["code"]`; resuming compares (session/_resuming.py, `on_code_change`). Start at
code_identity().
"""

from __future__ import annotations

import hashlib
import inspect
import types
from typing import Any, Protocol

__all__ = ["ON_CODE_CHANGE", "Identified", "code_identity"]

ON_CODE_CHANGE = ("keep", "refuse", "latest")
"""What a resumed run does with a completed call whose recorded code identity differs
from the code now: keep its recorded result (the default), refuse (ResumeDivergence), or
run the latest code again (never an `effect="once"` call's body)."""

_LENGTH = 12


class Identified(Protocol):
    """What code_identity() keeps its result on: a decorated function (function.py's
    AgenticFunction, the layer above), callable, its code behind `__wrapped__`."""

    __code_identity__: str | None

    def __call__(self, *args: Any, **kwargs: Any) -> object: ...


def code_identity(wrapper: Identified) -> str:
    """The identity of decorated function `wrapper` (12 hex digits), computed once."""
    found = getattr(wrapper, "__code_identity__", None)
    if found is None:
        found = _identity(wrapper, set())
        wrapper.__code_identity__ = found
    return str(found)


def _identity(wrapper: Any, seen: set[int]) -> str:
    found = getattr(wrapper, "__code_identity__", None)
    if found is not None:
        return str(found)
    fn = inspect.unwrap(wrapper)
    seen.add(id(fn))
    digest = hashlib.sha256(_source(fn).encode("utf-8", "surrogatepass"))
    for name, callee in sorted(_callees(fn).items()):
        if id(inspect.unwrap(callee)) in seen:  # a recursion: its own source counts once
            digest.update(f"\n{name}:self".encode())
            continue
        digest.update(f"\n{name}:{_identity(callee, seen)}".encode())
    return digest.hexdigest()[:_LENGTH]


def _source(fn: Any) -> str:
    """The function's source, else (no file: typed in a console) its bytecode."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return "" if code is None else code.co_code.hex() + repr(code.co_consts)


def _callees(fn: Any) -> dict[str, Any]:
    """The decorated functions `fn` names as globals (in nested functions too)."""
    code = getattr(fn, "__code__", None)
    module = getattr(fn, "__globals__", {})
    if code is None:
        return {}
    names: set[str] = set()
    stack = [code]
    while stack:
        current = stack.pop()
        names.update(current.co_names)
        stack.extend(c for c in current.co_consts if isinstance(c, types.CodeType))
    return {
        name: module[name]
        for name in names
        if getattr(module.get(name), "__agentic__", False) and callable(module.get(name))
    }
