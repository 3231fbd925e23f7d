"""A decorated function's signature: binding a call's arguments, and the tool's spec.

Owns what @agentic_function reads off the function once, at decoration: how a call's
arguments are bound fast (as Python binds them), the pydantic model a model's tool
arguments are validated with, the OpenAI-style tool spec, and its annotations resolved
one by one. function.py uses them. Start at binder().
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel, Field, create_model

__all__ = ["arguments_model", "binder", "resolved_annotations", "runtime_positional", "tool_spec"]


def binder(
    signature: inspect.Signature, skipped: set[str]
) -> Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]:
    """A function giving the bound arguments (defaults applied, `skipped` left out).

    Plain signatures (no *args, **kwargs or positional-only parameters) bind by hand,
    several times faster than Signature.bind; anything unusual falls back to it, which
    also raises the same TypeError Python would."""
    params = list(signature.parameters.values())
    plain = all(p.kind is p.POSITIONAL_OR_KEYWORD or p.kind is p.KEYWORD_ONLY for p in params)
    positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    names = [p.name for p in params]
    defaults = {p.name: p.default for p in params if p.default is not p.empty}
    known = set(names)

    def slow(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return {k: v for k, v in bound.arguments.items() if k not in skipped}

    if not plain:
        return slow

    def fast(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) > len(positional) or not known.issuperset(kwargs):
            return slow(args, kwargs)
        given = dict(zip(positional, args, strict=False))
        for key, value in kwargs.items():
            if key in given:
                return slow(args, kwargs)
            given[key] = value
        arguments = {}
        for name in names:
            if name in given:
                value = given[name]
            elif name in defaults:
                value = defaults[name]
            else:
                return slow(args, kwargs)
            if name not in skipped:
                arguments[name] = value
        return arguments

    return fast


def runtime_positional(signature: inspect.Signature, args: tuple[Any, ...]) -> bool:
    index = list(signature.parameters).index("runtime")
    return len(args) > index and args[index] is not None


def arguments_model(
    fn: Callable[..., Any],
    signature: inspect.Signature,
    meta: Mapping[str, Mapping[str, Any]],
    left_out: set[str],
) -> type[BaseModel]:
    """A pydantic model of the parameters a model may pass (the tool's arguments)."""
    hints = resolved_annotations(fn)
    fields: dict[str, Any] = {}
    for param in signature.parameters.values():
        if param.name in left_out or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        entry = meta.get(param.name, {})
        annotation = hints.get(param.name, Any)
        extra: dict[str, Any] = {}
        if entry.get("options") is not None:
            extra["enum"] = list(entry["options"])
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[param.name] = (
            annotation,
            Field(
                default=default,
                description=entry.get("description"),
                json_schema_extra=extra or None,
            ),
        )
    try:
        model = create_model(fn.__name__, **fields)  # dynamic fields
        model.model_json_schema()
    except Exception:  # an annotation pydantic cannot schema: describe it loosely
        loose = {k: (Any, v[1]) for k, v in fields.items()}
        model = create_model(fn.__name__, **loose)  # type: ignore[call-overload]  # dynamic fields
    return model  # type: ignore[no-any-return]


def tool_spec(fn: Callable[..., Any], model: type[BaseModel]) -> dict[str, Any]:
    """OpenAI-style tool spec `{"name", "description", "parameters"}` from the signature."""
    parameters = model.model_json_schema()
    parameters.pop("title", None)
    for schema in parameters.get("properties", {}).values():
        schema.pop("title", None)
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    return {"name": fn.__name__, "description": description, "parameters": parameters}


def resolved_annotations(fn: Callable[..., Any]) -> dict[str, Any]:
    """Annotations resolved one by one; one that does not resolve (a local or forward
    reference) counts as Any rather than spoiling the others."""
    raw = inspect.get_annotations(fn)
    namespace = {**getattr(fn, "__globals__", {})}
    if fn.__closure__:
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__, strict=True):
            with contextlib.suppress(ValueError):  # an empty cell: not bound yet
                namespace[name] = cell.cell_contents
    resolved: dict[str, Any] = {}
    for name, annotation in raw.items():
        if isinstance(annotation, str):
            try:
                annotation = eval(annotation, namespace)
            except Exception:
                annotation = Any
        resolved[name] = annotation
    return resolved
