"""Turning call arguments and results into the JSON-able values nodes hold.

Owns the conversion both ways: pydantic models, dataclasses, tuples and sets become
JSON types; images become `ImageRef`s (registered through a callback) and, in the stored
form, `{"$image": sha256, ...}` objects.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from openprogram.image import ImageRef, is_image

__all__ = ["escape_surrogates", "from_jsonable", "replace_surrogates", "to_jsonable"]

_SCALARS = (str, int, float, bool, type(None))
_SURROGATE = re.compile("[\ud800-\udfff]")


MAX_DEPTH = 100
"""Containers nested deeper are stored as a marker string: a value must stay readable
(decoding and rendering recurse) and a session must never fail to record it."""


def to_jsonable(value: Any, add_image: Callable[[Any], ImageRef] | None) -> Any:
    """JSON-able copy of `value`. With `add_image`, images become ImageRef objects (the
    in-memory form); without it, ImageRefs become `{"$image": ...}` dicts (the stored form).

    A container that holds itself becomes `"<cycle: list>"`, one nested deeper than
    MAX_DEPTH `"<nested deeper than 100 levels: list>"`; anything else JSON cannot hold
    becomes its repr (`"<repr failed: T>"` when even that raises)."""
    return _jsonable(value, add_image, 0, set())


def _jsonable(
    value: Any, add_image: Callable[[Any], ImageRef] | None, depth: int, active: set[int]
) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict or kind is list or kind is tuple:  # the common containers, fast
        return _container(value, kind is dict, add_image, depth, active)
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, ImageRef):
        return value if add_image is not None else value.to_json()
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        return _container(value, isinstance(value, Mapping), add_image, depth, active)
    if add_image is not None and is_image(value):
        return add_image(value)
    if isinstance(value, BaseModel):
        return _object(value, lambda: value.model_dump(mode="python"), add_image, depth, active)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(
            value,
            lambda: {f.name: getattr(value, f.name) for f in dataclasses.fields(value)},
            add_image,
            depth,
            active,
        )
    if isinstance(value, enum.Enum):
        return _jsonable(value.value, add_image, depth + 1, active)
    if isinstance(value, PurePath):
        return str(value)
    if add_image is None and is_image(value):
        return {"$image": None, "repr": _repr(value)}
    return _repr(value)


def _container(
    value: Any,
    mapping: bool,
    add_image: Callable[[Any], ImageRef] | None,
    depth: int,
    active: set[int],
) -> Any:
    key = id(value)
    if key in active:
        return f"<cycle: {type(value).__name__}>"
    if depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels: {type(value).__name__}>"
    active.add(key)  # left behind only when an exception ends the whole conversion
    depth += 1
    if mapping:
        result: Any = {_key(k): _jsonable(v, add_image, depth, active) for k, v in value.items()}
    else:
        result = [_jsonable(v, add_image, depth, active) for v in value]
    active.discard(key)
    return result


def _object(
    value: Any,
    fields: Callable[[], Any],
    add_image: Callable[[Any], ImageRef] | None,
    depth: int,
    active: set[int],
) -> Any:
    """A pydantic model or dataclass as its fields (cycles through it become markers)."""
    if id(value) in active:
        return f"<cycle: {type(value).__name__}>"
    if depth >= MAX_DEPTH:
        return f"<nested deeper than {MAX_DEPTH} levels: {type(value).__name__}>"
    active.add(id(value))
    try:
        return _jsonable(fields(), add_image, depth + 1, active)
    except RecursionError:  # pydantic's own dump of a self-referencing model
        return f"<cycle: {type(value).__name__}>"
    finally:
        active.discard(id(value))


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    try:
        return str(key)
    except Exception:  # a broken __str__ must not cost the record
        return f"<str failed: {type(key).__name__}>"


def _repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception:  # a broken __repr__ must not cost the record
        return f"<repr failed: {type(value).__name__}>"


def from_jsonable(value: Any) -> Any:
    """Inverse of the stored form: `{"$image": ...}` dicts become ImageRef objects."""
    if isinstance(value, dict):
        if "$image" in value and value["$image"] and "width" in value:
            return ImageRef(sha256=value["$image"], width=value["width"], height=value["height"])
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value


def escape_surrogates(json_text: str) -> str:
    """JSON text with lone surrogates (which UTF-8 cannot hold: a filename decoded with
    surrogateescape) written as `\\udcxx` escapes, which JSON decodes back to them."""
    if json_text.isascii():
        return json_text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", json_text)


def replace_surrogates(text: str) -> str:
    """`text` as valid Unicode, each lone surrogate replaced by U+FFFD (for what must be
    sent as UTF-8, such as a model request; the record keeps them, escaped)."""
    return text if text.isascii() else _SURROGATE.sub("\ufffd", text)
