"""Turning call arguments and results into the JSON-able values nodes hold.

Owns the conversion both ways: pydantic models, dataclasses, tuples and sets become
JSON types; images become `ImageRef`s (registered through a callback) and, in the stored
form, `{"$image": sha256, ...}` objects.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from openprogram.image import ImageRef, is_image

__all__ = ["from_jsonable", "to_jsonable"]

_SCALARS = (str, int, float, bool, type(None))


def to_jsonable(value: Any, add_image: Callable[[Any], ImageRef] | None) -> Any:
    """JSON-able copy of `value`. With `add_image`, images become ImageRef objects (the
    in-memory form); without it, ImageRefs become `{"$image": ...}` dicts (the stored form)."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, ImageRef):
        return value if add_image is not None else value.to_json()
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v, add_image) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v, add_image) for v in value]
    if add_image is not None and is_image(value):
        return add_image(value)
    if isinstance(value, BaseModel):
        return to_jsonable(value.model_dump(mode="python"), add_image)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return to_jsonable(fields, add_image)
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value, add_image)
    if isinstance(value, PurePath):
        return str(value)
    if add_image is None and is_image(value):
        return {"$image": None, "repr": repr(value)}
    return repr(value)


def from_jsonable(value: Any) -> Any:
    """Inverse of the stored form: `{"$image": ...}` dicts become ImageRef objects."""
    if isinstance(value, dict):
        if "$image" in value and value["$image"] and "width" in value:
            return ImageRef(sha256=value["$image"], width=value["width"], height=value["height"])
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value
