"""Secrets scrubbed by value: the one place that knows what a secret looks like.

Owns the set of secret values (env variables named like `*_API_KEY`, `*_TOKEN`,
`*_SECRET`, `*_PASSWORD`, and keys given to a Runtime or LiteLLMModel), the key-like
prefix patterns (`sk-…`, `key-…`, `AIza…`), and scrubbing them from text, JSON text,
values and exception chains. Start at scrub().
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import threading
import traceback
from collections.abc import Iterable, Mapping
from typing import Any

from openprogram.core.values import escape_surrogates

__all__ = [
    "MASK",
    "is_secret_name",
    "refresh",
    "register",
    "scrub",
    "scrub_exception",
    "scrub_json",
    "scrub_jsons",
    "scrub_name",
    "scrub_value",
    "secrets",
]

MASK = "***"
MIN_LENGTH = 8
"""Shorter values are never scrubbed: a 4-character password would wipe common words."""

KEYLIKE = re.compile(r"(?<![A-Za-z0-9])(sk-|key-|AIza)[A-Za-z0-9_\-*]{6,}")
"""Strings that look like provider keys whatever variable they came from: the prefix
starts a word ("task-…", "disk-…" and "monkey-…" are not keys)."""

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|ACCESS_KEY|SECRET_KEY|PRIVATE_KEY)(?:_|$)",
    re.IGNORECASE,
)
_SECRET_OPTION = re.compile(
    r"(?:^|[_-])(?:api_?key|key|token|secret|password|credentials?|authorization)(?:[_-]|$)",
    re.IGNORECASE,
)

_lock = threading.Lock()
_given: set[str] = set()
_given_size = 0  # len(_given), set with it under _lock: read without the lock
_cache: tuple[frozenset[str], re.Pattern[str] | None] = (frozenset(), None)
_cache_given = 0  # _given_size when _cache was built


def is_secret_name(name: str) -> bool:
    """Whether an environment variable (or option) name says its value is a secret."""
    return bool(_SECRET_NAME.search(name))


def is_secret_option(name: str) -> bool:
    """Whether a keyword argument for a provider (api_key, aws_session_token…) holds one."""
    return bool(_SECRET_OPTION.search(name))


def register(values: Iterable[Any] | Mapping[str, Any]) -> None:
    """Remember secret values given in code: a mapping's values under secret-like names
    (`api_key=...`), or every string of an iterable. Short values are ignored."""
    if isinstance(values, Mapping):
        found = [v for k, v in values.items() if is_secret_option(str(k))]
        for nested in values.values():  # extra_headers={"Authorization": ...}
            if isinstance(nested, Mapping):
                register(nested)
    else:
        found = list(values)
    with _lock:
        global _given_size
        _given.update(v for v in found if isinstance(v, str) and len(v) >= MIN_LENGTH)
        _given_size = len(_given)


def secrets() -> frozenset[str]:
    """Every secret value known now: registered ones and the environment's."""
    environment = {
        value
        for name, value in os.environ.items()
        if len(value) >= MIN_LENGTH and is_secret_name(name)
    }
    with _lock:
        return frozenset(environment | _given)


def refresh() -> None:
    """Read the environment's secrets again (scrub() does; the hot paths use the last
    reading: a Session, Runtime and provider error each take a new one)."""
    _pattern(refresh=True)


def _pattern(*, refresh: bool = True) -> re.Pattern[str] | None:
    """One regex matching every known secret in its plain and JSON-escaped forms."""
    global _cache, _cache_given
    cached_values, cached = _cache
    if not refresh and _given_size == _cache_given:  # nothing registered since
        return cached
    size = _given_size  # before reading: a value registered meanwhile is read next time
    values = secrets()
    if values == cached_values:
        _cache_given = size
        return cached
    forms: set[str] = set()
    for value in values:
        forms.add(value)
        forms.add(json.dumps(value, ensure_ascii=False)[1:-1])
        forms.add(json.dumps(value)[1:-1])
    ordered = sorted(forms, key=len, reverse=True)  # the longest form wins an overlap
    pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
    _cache, _cache_given = (values, pattern), size
    return pattern


def scrub(text: str, *, patterns: bool = True, refresh: bool = True) -> str:
    """`text` with every known secret value (and, with `patterns`, key-like strings)
    replaced by `***`. Without `refresh`, the environment as last read (see refresh())."""
    if not isinstance(text, str) or not text:
        return text
    pattern = _pattern(refresh=refresh)
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return KEYLIKE.sub(MASK, text) if patterns else text


def scrub_name(name: str) -> str:
    """`name` (a node's: a function's or a server's tool's) with known secret values
    masked, as of the last reading of the environment. Names repeat, one per function,
    so each is looked at once per set of secrets."""
    global _names, _names_for
    pattern = _pattern(refresh=False)
    if pattern is not _names_for:
        _names, _names_for = {}, pattern
    found = _names.get(name)
    if found is None:
        found = name if pattern is None else pattern.sub(MASK, name)
        if len(_names) < _NAMES_KEPT:
            _names[name] = found
    return found


_NAMES_KEPT = 4096
_names: dict[str, str] = {}
_names_for: re.Pattern[str] | None = None


def scrub_value(value: object) -> Any:
    """A copy of a JSON-able value with secret values scrubbed from every string (and
    dict key); other values are returned as they are."""
    pattern = _pattern()
    if pattern is None:
        return value
    return _walk(value, pattern)


def _walk(value: Any, pattern: re.Pattern[str]) -> Any:
    if isinstance(value, str):
        return pattern.sub(MASK, value)
    if isinstance(value, dict):
        return {_walk(k, pattern): _walk(v, pattern) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, pattern) for v in value]
    return value


def scrub_json(text: str | None, *, refresh: bool = True) -> str | None:
    """JSON text with secret values scrubbed from its strings (by value only: stored
    data keeps text that merely looks like a key). The text stays valid JSON. Without
    `refresh`, the environment as last read (see refresh())."""
    if not text:
        return text
    pattern = _pattern(refresh=refresh)
    if pattern is None or pattern.search(text) is None:
        return text
    masked = pattern.sub(MASK, text)
    try:
        json.loads(masked)
        return masked
    except ValueError:  # a match that crossed JSON syntax: scrub the decoded strings
        scrubbed = _walk(json.loads(text), pattern)
        return escape_surrogates(json.dumps(scrubbed, ensure_ascii=False, separators=(",", ":")))


def scrub_jsons(texts: tuple[str | None, ...], *, refresh: bool = True) -> tuple[str | None, ...]:
    """scrub_json() of each of `texts`, looking the secrets up once (a stored row's
    JSON columns); `texts` itself when none holds a secret."""
    pattern = _pattern(refresh=refresh)
    if pattern is None or not any(text and pattern.search(text) for text in texts):
        return texts
    return tuple(scrub_json(text, refresh=False) for text in texts)


_ATTRIBUTES = ("message", "body", "litellm_debug_info", "doc", "msg", "reason", "text")


def scrub_exception(error: BaseException) -> BaseException:
    """Scrub secrets from `error` and every exception chained to it, in place (their
    args and message-like attributes). A link whose text still holds a secret afterwards
    is cut from the chain. Returns `error`."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        _scrub_one(current)
        following = current.__cause__ or current.__context__
        if following is not None and _leaks(following):
            current.__cause__ = None
            current.__context__ = None
            current.__suppress_context__ = True
            break
        current = following
    return error


def _scrub_one(error: BaseException) -> None:
    # an exception with read-only attributes is left as it is; _leaks then cuts it off
    with contextlib.suppress(Exception):
        error.args = tuple(scrub(a) if isinstance(a, str) else a for a in error.args)
    for name in _ATTRIBUTES:
        value = getattr(error, name, None)
        if isinstance(value, (str, dict, list)):
            with contextlib.suppress(Exception):
                setattr(error, name, _deep(value))


def _deep(value: Any) -> Any:
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {k: _deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_deep(v) for v in value]
    return value


def _leaks(error: BaseException) -> bool:
    """Whether a traceback printout of `error` (alone) would still show a secret."""
    _scrub_one(error)
    try:
        text = "".join(traceback.format_exception_only(type(error), error))
    except Exception:
        return True
    return scrub(text) != text
