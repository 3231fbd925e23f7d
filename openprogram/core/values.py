"""The stored form of call values (DESIGN §6 "Values and identity"): JSON as it is, else
by fields and type (`{"$type", "$fields"|"$value"}`) or `{"$opaque": type}`; images as
ImageRefs. Owns to_jsonable(), what renders show of a stored value (as_shown) and
rebuilding standard types (rebuilt); which results may come back is _resume.py's.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import decimal
import enum
import json
import pathlib
import re
import types
import uuid
from collections.abc import Callable, Collection, Mapping
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel

from openprogram.core.image import ImageRef, is_image

__all__ = [
    "MAX_DEPTH",
    "NotRebuildable",
    "as_shown",
    "escape_surrogates",
    "from_jsonable",
    "kinds",
    "rebuilt",
    "replace_surrogates",
    "shown_json",
    "stored_text",
    "to_jsonable",
    "with_image_dicts",
]

_SURROGATE = re.compile("[\ud800-\udfff]")

MAX_DEPTH = 100
"""Values nested deeper are stored as `{"$opaque": type, "$why": "nested deeper than 100
levels"}`: a value must stay readable (decoding and rendering recurse) and a session must
never fail to record it."""

TYPE, FIELDS, VALUE, OPAQUE, WHY = "$type", "$fields", "$value", "$opaque", "$why"
_BIG_INT = 2**63
"""Ints outside ±2⁶³ are stored as text (`{"$type": "builtins.int", "$value": "…"}`): JSON
readers lose them, and past 4 300 digits Python cannot even write them in decimal."""
_DECIMAL_LIMIT = 10**600  # below Python's lowest allowed int-to-str limit (640 digits)
_CYCLE, _DEEP, _SECRET = "cycle", f"nested deeper than {MAX_DEPTH} levels", "secret"
_SECRET_FIELDS = frozenset(
    ("api_key", "apikey", "token", "secret", "password", "passwd", "credentials",
     "authorization", "private_key", "secret_key", "access_key")
)  # fmt: skip
"""Fields of an object stored by its fields that are never written (nor compared): an
object's state may hold what its repr never showed. Keys given by name are masked
everywhere anyway (_secrets.py); these are any value in a field so named."""
_HEAP_TYPE, _IMMUTABLE_TYPE = 1 << 9, 1 << 8  # a class statement makes heap, mutable types


def to_jsonable(
    value: object,
    add_image: Callable[[Any], ImageRef] | None,
    opaque: list[str] | None = None,
    *,
    hidden: Collection[str] = (),
) -> object:
    """The stored form of a live `value`. With `add_image`, images become ImageRef
    objects (the in-memory form); without it, `{"$image": ...}` dicts.

    The qualified type names of values with no faithful form (and of containers that
    refer to themselves or nest deeper than MAX_DEPTH) are appended to `opaque`.
    `hidden`: keys of a dict `value` (hidden parameters, which neither show nor count for
    identity) whose objects are stored as `{"$type": name}` alone, and never as opaque."""
    if hidden and type(value) is dict:
        names = _Conversion(add_image, None, True)
        rest = _Conversion(add_image, opaque, False)
        return {
            key: (names if key in hidden else rest).convert(item, 1) for key, item in value.items()
        }
    return _Conversion(add_image, opaque, False).convert(value, 0)


class _Conversion:
    __slots__ = ("active", "add_image", "names_only", "opaque")

    def __init__(
        self, add_image: Callable[[Any], ImageRef] | None, opaque: list[str] | None, names: bool
    ) -> None:
        self.add_image = add_image
        self.opaque = opaque
        self.names_only = names
        self.active: set[int] = set()

    def convert(self, value: Any, depth: int) -> Any:
        kind = type(value)
        if kind is str or kind is float or kind is bool or value is None:
            return value
        if kind is int:
            return value if -_BIG_INT < value < _BIG_INT else _tag(kind, VALUE, _int_text(value))
        if kind is dict:
            return self.mapping(value, depth)
        if kind is list or kind is tuple:
            return self.sequence(value, depth)
        return self.other(value, kind, depth)

    def enter(self, value: Any, depth: int) -> dict[str, Any] | None:
        """A marker standing for `value` when it refers to itself or nests too deep."""
        if id(value) in self.active:
            return self.marker(type(value), _CYCLE)
        if depth >= MAX_DEPTH:
            return self.marker(type(value), _DEEP)
        self.active.add(id(value))  # left behind only when an exception ends it all
        return None

    def marker(self, kind: type, why: str | None = None) -> dict[str, Any]:
        name = _qualified(kind)
        if self.opaque is not None:
            self.opaque.append(name if why is None else f"{name} ({why})")
        return {OPAQUE: name} if why is None else {OPAQUE: name, WHY: why}

    def sequence(self, value: Any, depth: int) -> Any:
        stop = self.enter(value, depth)
        if stop is not None:
            return stop
        result = [self.convert(item, depth + 1) for item in value]
        self.active.discard(id(value))
        return result

    def mapping(self, value: Any, depth: int) -> Any:
        stop = self.enter(value, depth)
        if stop is not None:
            return stop
        result: dict[str, Any] = {}
        if "$type" not in value and "$opaque" not in value and "$image" not in value:
            for key, item in value.items():
                if type(key) is not str:  # 1 and "1" must stay apart: stored as pairs
                    result = self.pairs(value, depth)
                    break
                result[key] = self.convert(item, depth + 1)
        else:  # a dict that could pass for one of ours: stored as pairs
            result = self.pairs(value, depth)
        self.active.discard(id(value))
        return result

    def pairs(self, value: Any, depth: int) -> dict[str, Any]:
        pairs = [[self.convert(k, depth + 1), self.convert(v, depth + 1)] for k, v in value.items()]
        pairs.sort(key=lambda pair: _canonical(pair[0]))
        return {TYPE: "builtins.dict", VALUE: pairs}

    def other(self, value: Any, kind: type, depth: int) -> Any:
        if kind is _Stored:
            return value.form
        if isinstance(value, ImageRef):
            return value if self.add_image is not None else value.to_json()
        if isinstance(value, enum.Enum):  # before str and int: StrEnum, IntEnum
            return self.tagged(value, kind, VALUE, lambda: value.value, depth)
        if isinstance(value, (str, float)):  # subclasses equal to their plain value
            return str.__str__(value) if isinstance(value, str) else float(value)
        if isinstance(value, int):
            return self.convert(int(value), depth)
        if isinstance(value, Mapping):
            return self.mapping(value, depth)
        if isinstance(value, (list, tuple)):
            return self.sequence(value, depth)
        if isinstance(value, (set, frozenset)):
            return self.a_set(value, kind, depth)
        if is_image(value):
            if self.add_image is not None:
                return self.add_image(value)
            return {"$image": None, "type": _qualified(kind)}
        if self.names_only:
            return {TYPE: _qualified(kind)}
        if any(base.__name__ == "_SecretBase" for base in kind.__mro__):  # pydantic's
            return self.marker(kind, _SECRET)
        simple = _SIMPLE.get(kind)
        if simple is not None:
            return _tag(kind, VALUE, simple(value))
        try:
            fields = _fields(value, kind)
        except Exception:  # a broken property or descriptor must not cost the record
            return self.marker(kind)
        if fields is None:
            return self.marker(kind)
        if isinstance(fields, str):  # a class or function, by its name
            return _tag(kind, VALUE, fields)
        key, items = fields
        if key == FIELDS:
            for name, item in items.items():
                if item is not None and _secret_field(name):
                    items[name] = _Stored(self.marker(type(item), _SECRET))
        return self.tagged(value, kind, key, lambda: items, depth)

    def tagged(
        self, value: Any, kind: type, key: str, inner: Callable[[], Any], depth: int
    ) -> dict[str, Any]:
        stop = self.enter(value, depth)
        if stop is not None:
            return stop
        active = set(self.active)
        try:
            return _tag(kind, key, self.convert(inner(), depth + 1))
        except Exception:  # a part that cannot be read: the object has no faithful form
            self.active = active
            return self.marker(kind)
        finally:
            self.active.discard(id(value))

    def a_set(self, value: Any, kind: type, depth: int) -> dict[str, Any]:
        stop = self.enter(value, depth)
        if stop is not None:
            return stop
        items = [self.convert(item, depth + 1) for item in value]
        items.sort(key=_canonical)  # iteration order changes from process to process
        self.active.discard(id(value))
        return _tag(kind, VALUE, items)


class _Stored:
    """A part already in its stored form (a marker put in place of a field)."""

    __slots__ = ("form",)

    def __init__(self, form: Any) -> None:
        self.form = form


def _tag(kind: type, key: str, inner: Any) -> dict[str, Any]:
    return {TYPE: _qualified(kind), key: inner}


def _qualified(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _int_text(value: int) -> str:
    """Decimal while any Python can write it so; hexadecimal (which has no limit) past."""
    return str(value) if -_DECIMAL_LIMIT < value < _DECIMAL_LIMIT else hex(value)


def _secret_field(name: Any) -> bool:
    if not isinstance(name, str):
        return False
    name = name.strip("_").lower()
    return name in _SECRET_FIELDS or name.endswith(
        ("_api_key", "_password", "_secret", "_token", "_private_key", "_credentials")
    )


def _int(text: str) -> int:
    """The int _int_text wrote (hexadecimal has no length limit in Python)."""
    return int(text, 16) if text.lstrip("-").startswith("0x") else int(text)


def _bytes_text(value: Any) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


_SIMPLE: dict[type, Callable[[Any], Any]] = {
    bytes: _bytes_text,
    bytearray: _bytes_text,
    memoryview: _bytes_text,
    datetime.datetime: datetime.datetime.isoformat,
    datetime.date: datetime.date.isoformat,
    datetime.time: datetime.time.isoformat,
    datetime.timedelta: lambda v: [v.days, v.seconds, v.microseconds],
    decimal.Decimal: str,
    uuid.UUID: str,
    complex: lambda v: [_float_text(v.real), _float_text(v.imag)],
}
"""Standard types held by one text or list, which rebuilt() makes again without imports."""


def _float_text(value: float) -> Any:
    return value if value == value and abs(value) != float("inf") else repr(value)


def _fields(value: Any, kind: type) -> tuple[str, Any] | str | None:
    """("$fields", dict) or ("$value", x) for an object stored by its state; its name for
    a class or function named by a module-level path; None when it has no faithful form."""
    if isinstance(value, BaseModel):
        state = {name: getattr(value, name) for name in kind.model_fields}  # type: ignore[attr-defined]
        if value.model_extra:
            state.update(value.model_extra)
        return FIELDS, state
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return FIELDS, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    attributes = getattr(kind, "__attrs_attrs__", None)  # an attrs class (attrs not needed)
    if attributes is not None and not isinstance(value, type):
        return FIELDS, {a.name: getattr(value, a.name) for a in attributes}
    if isinstance(value, PurePath):
        return VALUE, str(value)
    if (
        isinstance(value, type)
        or getattr(kind, "__agentic__", False) is True  # a decorated function
        or (
            isinstance(value, (types.FunctionType, types.BuiltinFunctionType))
            and isinstance(getattr(value, "__self__", None), (types.ModuleType, type(None)))
        )
    ):  # not a bound method: its object would be left out
        name = f"{getattr(value, '__module__', None)}.{getattr(value, '__qualname__', '')}"
        return None if "<" in name or name.startswith("None.") else name
    if isinstance(value, BaseException):
        return FIELDS, {"args": value.args, **getattr(value, "__dict__", {})}
    if not all(
        base.__flags__ & (_HEAP_TYPE | _IMMUTABLE_TYPE) == _HEAP_TYPE for base in kind.__mro__[:-1]
    ):
        return None  # a class made in C holds state we cannot see (a lock, a file, a socket)
    state = dict(getattr(value, "__dict__", {}))
    for base in kind.__mro__[:-1]:
        slots = base.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{base.__name__.lstrip('_')}{slot}"
            if hasattr(value, slot):
                state[slot] = getattr(value, slot)
    return FIELDS, state


# -- reading stored values ------------------------------------------------------------------


def from_jsonable(value: object) -> object:
    """Inverse of the stored form's image part: `{"$image": ...}` dicts become ImageRefs."""
    if isinstance(value, dict):
        if "$image" in value and value["$image"] and "width" in value:
            return ImageRef(sha256=value["$image"], width=value["width"], height=value["height"])
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value


def with_image_dicts(value: object) -> object:
    """A stored value with its ImageRefs as `{"$image": ...}` dicts (the form on disk)."""
    if isinstance(value, ImageRef):
        return value.to_json()
    if isinstance(value, dict):
        return {k: with_image_dicts(v) for k, v in value.items()}
    if isinstance(value, list):
        return [with_image_dicts(v) for v in value]
    return value


def stored_text(value: object) -> str:
    """Canonical JSON text of a stored value (sorted keys, images by hash): what input
    hashes are taken of. Never fails: anything left over is written with str()."""
    return json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_image_json
    )


def _image_json(item: Any) -> Any:
    return item.to_json() if isinstance(item, ImageRef) else str(item)


def kinds(value: object, *, skip: tuple[str, ...] = ()) -> tuple[bool, bool]:
    """(holds an opaque value, holds a typed value) of a stored value; `skip` names the
    top-level keys left out (hidden parameters)."""
    typed = False
    stack = [value]
    if skip and isinstance(value, dict):
        stack = [v for k, v in value.items() if k not in skip]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if OPAQUE in item:
                return True, True
            if TYPE in item:
                typed = True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False, typed


def as_shown(value: object) -> object:
    """A stored value as renders show it: objects as their fields, enums as their value,
    paths, dates and numbers as text, sets as lists, opaque values as `<type>`."""
    if isinstance(value, dict):
        if TYPE in value:
            return _shown_tag(value)
        if OPAQUE in value:
            name = str(value[OPAQUE]).rsplit(".", 1)[-1]
            why = value.get(WHY)
            return f"<{value[OPAQUE]}>" if why is None else f"<{why}: {name}>"
        return {k: as_shown(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_shown(v) for v in value]
    return value


def _shown_tag(value: dict[str, Any]) -> Any:
    name = value[TYPE]
    if FIELDS in value:
        return as_shown(value[FIELDS])
    if VALUE not in value:
        return f"<{name}>"
    inner = value[VALUE]
    try:
        if name == "builtins.int":
            number = _int(inner)
            if -_DECIMAL_LIMIT < number < _DECIMAL_LIMIT:
                return number
            return f"<int of about {int(number.bit_length() * 0.30103) + 1} digits>"
        if name in ("builtins.bytes", "builtins.bytearray", "builtins.memoryview"):
            data = base64.b64decode(inner)
            more = f"… ({len(data)} bytes)" if len(data) > 64 else ""
            return repr(data[:64]) + more
        if name == "builtins.dict":
            return {_key_text(as_shown(k)): as_shown(v) for k, v in inner}
    except (TypeError, ValueError):  # not as written: show it as stored
        return value
    return as_shown(inner)


def shown_json(value: object, encode: Callable[[Any], str]) -> str:
    """`encode(value)`, of as_shown(value) when the value holds typed or opaque values."""
    text = encode(value)
    if '"$type":' in text or '"$opaque":' in text:
        return encode(as_shown(value))
    return text


def _key_text(key: Any) -> Any:
    return key if isinstance(key, (str, int, float, bool)) or key is None else _canonical(key)


class NotRebuildable(Exception):
    """A stored value that rebuilt() cannot make into a live one."""


def rebuilt(value: object, *, fields: bool = False) -> object:
    """A stored value made live again: standard types (ints, bytes, sets, dates, numbers,
    paths, dicts with other keys) are rebuilt; with `fields`, a typed object becomes its fields
    and an enum or path its value, for a validator that knows the type (nothing is
    imported by a name from the store). NotRebuildable otherwise."""
    if isinstance(value, dict):
        if OPAQUE in value:
            raise NotRebuildable(value[OPAQUE])
        if TYPE in value:
            return _rebuilt_tag(value, fields)
        return {k: rebuilt(v, fields=fields) for k, v in value.items()}
    if isinstance(value, list):
        return [rebuilt(v, fields=fields) for v in value]
    return value


_REBUILD: dict[str, Callable[[Any], Any]] = {
    "builtins.int": lambda v: _int(v),
    "builtins.bytes": base64.b64decode,
    "builtins.bytearray": lambda v: bytearray(base64.b64decode(v)),
    "builtins.memoryview": base64.b64decode,
    "datetime.datetime": datetime.datetime.fromisoformat,
    "datetime.date": datetime.date.fromisoformat,
    "datetime.time": datetime.time.fromisoformat,
    "datetime.timedelta": lambda v: datetime.timedelta(*v),
    "decimal.Decimal": decimal.Decimal,
    "uuid.UUID": uuid.UUID,
    "builtins.complex": lambda v: complex(float(v[0]), float(v[1])),
    **{
        f"pathlib.{kind.__name__}": kind
        for kind in (
            pathlib.PurePosixPath,
            pathlib.PureWindowsPath,
            pathlib.PosixPath,
            pathlib.WindowsPath,
        )
    },
}


def _rebuilt_tag(value: dict[str, Any], fields: bool) -> Any:
    name = value[TYPE]
    try:
        if name in _REBUILD:
            return _REBUILD[name](value[VALUE])
        if name in ("builtins.set", "builtins.frozenset"):
            items = (rebuilt(v, fields=fields) for v in value[VALUE])
            return set(items) if name == "builtins.set" else frozenset(items)
        if name == "builtins.dict":
            return {rebuilt(k, fields=fields): rebuilt(v, fields=fields) for k, v in value[VALUE]}
    except NotRebuildable:
        raise
    except Exception as exc:  # damaged or not ours: never guess
        raise NotRebuildable(f"{name}: {exc}") from exc
    if not fields:
        raise NotRebuildable(name)
    if FIELDS in value:
        return rebuilt(value[FIELDS], fields=True)
    if VALUE in value:
        return rebuilt(value[VALUE], fields=True)
    raise NotRebuildable(name)


# -- text -----------------------------------------------------------------------------------


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
