"""An MCP server's JSON schemas, bounded: how deep and big one may be, and a validator
that cannot run past a deadline.

A server is not trusted. bounded_validator() refuses (ConfigError) a schema too deep or
too big when its tool is listed; the validator it returns checks a deadline at every
keyword and runs `pattern`s on the `regex` engine with a timeout, because Python's `re`
cannot be interrupted (nor let another thread run) inside a backtracking match.
tool.py uses it for arguments and structured results. Start at bounded_validator().
"""

from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import jsonschema
import regex
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from referencing import Registry
from referencing.exceptions import Unresolvable

from openprogram.echo import cut
from openprogram.errors import ConfigError

__all__ = ["MAX_DEPTH", "MAX_SUBSCHEMAS", "SchemaTooSlow", "bounded_validator", "problems"]

MAX_DEPTH = 64
"""JSON objects nested in one another at most (a property's schema is two deeper than
its object's), following `$ref`s; a recursive schema counts each cycle once."""
MAX_SUBSCHEMAS = 10_000
"""Objects and arrays a schema may hold at most, every `$ref` counted as a copy of what
it refers to: a chain of references that doubles at each level is refused here."""
MAX_ERRORS = 20

_deadline: contextvars.ContextVar[float] = contextvars.ContextVar("openprogram_mcp_deadline")


class SchemaTooSlow(Exception):
    """Checking a value against a schema ran past its deadline."""


def bounded_validator(server: str, tool: str, schema: object, *, what: str = "input") -> Validator:
    """A jsonschema validator for `schema`, which must be a JSON object schema within
    MAX_DEPTH and MAX_SUBSCHEMAS; ConfigError naming the server and tool otherwise."""

    def refuse(problem: str) -> ConfigError:
        return ConfigError(f"MCP server {server!r}: tool {tool!r} has {problem}")

    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        raise refuse(f"an {what} schema that is not a JSON object schema: {cut(str(schema), 200)}")
    problem = _measure(schema)
    if problem:
        raise refuse(f"an {what} schema {problem}; it is refused")
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise refuse(f"an invalid {what} schema ({cut(exc.message, 200)})") from None
    # an empty registry: references resolve within the schema, never fetched from afar
    return _bounded_class(cls)(schema, registry=Registry())


def problems(validator: Validator, instance: object, seconds: float) -> list[ValidationError]:
    """The first MAX_ERRORS errors of `instance` (by path); SchemaTooSlow when checking
    takes longer than `seconds`."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        found = []
        for error in validator.iter_errors(instance):
            found.append(error)
            if len(found) >= MAX_ERRORS:
                break
    except Unresolvable as exc:
        found = [ValidationError(f"the schema refers to something it does not hold ({exc})")]
    finally:
        _deadline.reset(token)
    return sorted(found, key=lambda e: [str(p) for p in e.path])


# -- limits, checked once when a tool is listed ---------------------------------------


def _measure(schema: dict[str, Any]) -> str | None:
    """What is wrong with the schema's size or depth (or a pattern), or None. Walks it
    without recursion, following local `$ref`s; a reference back into its own path (a
    recursive schema) is not followed again."""
    budget = MAX_SUBSCHEMAS
    has_unevaluated = has_pattern_properties = False
    # (value, depth in schema objects, ids of the references on the path)
    stack: list[tuple[Any, int, frozenset[int]]] = [(schema, 0, frozenset())]
    while stack:
        value, depth, path = stack.pop()
        if isinstance(value, list):
            budget -= 1
            stack.extend((item, depth, path) for item in value)
        elif isinstance(value, dict):
            budget -= 1
            depth += 1
            if depth > MAX_DEPTH:
                return f"nested deeper than {MAX_DEPTH} levels (following its $refs)"
            for key, item in value.items():
                if key == "pattern" and isinstance(item, str):
                    problem = _compiles(item)
                    if problem:
                        return problem
                elif key == "patternProperties" and isinstance(item, dict):
                    has_pattern_properties = True
                    for name in item:
                        problem = _compiles(name)
                        if problem:
                            return problem
                elif key == "unevaluatedProperties":
                    has_unevaluated = True
                if key in ("enum", "const", "default", "examples"):
                    budget -= len(json.dumps(item)) // 64  # data, counted by its size
                else:
                    stack.append((item, depth, path))
            target = _local_target(schema, value.get("$ref"))
            if target is not None and id(target) not in path:
                stack.append((target, depth, path | {id(target)}))
        if budget < 0:
            return f"bigger than {MAX_SUBSCHEMAS} schema objects (counting each $ref's target)"
    if has_unevaluated and has_pattern_properties:
        return "using unevaluatedProperties with patternProperties, which is not supported"
    return None


def _compiles(pattern: str) -> str | None:
    try:
        regex.compile(pattern)
    except (regex.error, ValueError, OverflowError) as exc:
        return f"a pattern {cut(repr(pattern), 100)} that is not a regular expression ({exc})"
    return None


def _local_target(root: dict[str, Any], ref: Any) -> Any:
    """What a `$ref` of the form `#` or `#/a/b` points to in `root`, else None."""
    if not isinstance(ref, str) or not ref.startswith("#") or ref[1:2] not in ("", "/"):
        return None
    node: Any = root
    for part in ref[2:].split("/") if len(ref) > 1 else ():
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return None
    return node


# -- the validator: every keyword on a deadline, patterns on a timeout ----------------

_classes: dict[Any, Any] = {}


def _bounded_class(cls: Any) -> Any:
    made = _classes.get(cls)
    if made is None:
        keywords = dict(cls.VALIDATORS)
        for name, replacement in _SAFE.items():
            if name in keywords:
                keywords[name] = replacement
        keywords = {name: _on_time(fn) for name, fn in keywords.items()}
        made = _classes[cls] = jsonschema.validators.extend(cls, keywords)
    return made


def _on_time(keyword: Callable[..., Any]) -> Callable[..., Any]:
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        _check_deadline()
        return keyword(validator, value, instance, schema)

    return checked


def _check_deadline() -> float:
    """Seconds left; SchemaTooSlow when none (no deadline set: a day)."""
    left = _deadline.get(time.monotonic() + 86_400.0) - time.monotonic()
    if left <= 0:
        raise SchemaTooSlow
    return left


def _search(pattern: str, text: str) -> bool:
    try:
        return regex.search(pattern, text, timeout=_check_deadline()) is not None
    except TimeoutError:
        raise SchemaTooSlow from None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not _search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for key, value in instance.items():
            if _search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [
        key
        for key in instance
        if key not in properties and not any(_search(p, key) for p in patterns)
    ]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        named = ", ".join(repr(extra) for extra in sorted(extras))
        yield ValidationError(f"additional properties are not allowed ({named} unexpected)")


_SAFE: dict[str, Callable[..., Any]] = {
    "pattern": _pattern,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional_properties,
}
