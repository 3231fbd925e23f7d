"""PIIRedactor: reversible masking of personal data before a model sees it.

Owns the detectors (emails, phone numbers, Luhn-checked card numbers, custom regexes),
the vault that maps each value to a stable placeholder such as `<EMAIL_1>`, and
restoring originals in replies and in action arguments (`restore`). Start at
PIIRedactor.redact().
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from openprogram.callbacks.base import Callback
from openprogram.errors import UsageError

__all__ = ["PIIRedactor"]

_EMAIL = re.compile(
    r"(?<![\w.%+-])[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])"
)
_CARD = re.compile(r"(?<![\w-])(?:\d[ -]?){12,18}\d(?![\w-])")
_PHONE = re.compile(
    r"(?<![\w+@.-])\+?(?:\(\d{1,5}\)|\d{1,5})(?:[ .-]{0,2}(?:\(\d{1,5}\)|\d{1,5})){1,6}(?![\w@-])"
)
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")
_IPV4 = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_]*_\d+>")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
_BUILT_IN = ("EMAIL", "CARD", "PHONE")

Pattern = str | re.Pattern[str]


def luhn_valid(digits: str) -> bool:
    """Whether a string of digits passes the Luhn checksum that card numbers carry."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value *= 2
            if value > 9:
                value -= 9
        total += value
    return total % 10 == 0


def _is_card(text: str) -> bool:
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and luhn_valid(digits)


def _is_phone(text: str) -> bool:
    """A heuristic: 7-15 digits, written with a leading + or separators, and not a date,
    an IPv4 address or a decimal number."""
    digits = re.sub(r"\D", "", text)
    if not 7 <= len(digits) <= 15:
        return False
    separated = any(char in text for char in " .-()")
    if not (text.startswith("+") or separated):
        return False
    if _DATE.fullmatch(text) or _IPV4.fullmatch(text):
        return False
    groups = re.findall(r"\d+", text)
    if set(re.sub(r"[\d+]", "", text)) == {"."} and len(groups) < 3:
        return False
    first = 1 if text.startswith("+") else 0
    return all(len(group) >= 2 for group in groups[first:])


class PIIRedactor(Callback):
    """Mask emails, phone numbers, card numbers and custom patterns in every request.

    `on_llm_start` replaces each detected value in the messages' text (string contents
    and text parts; images are left alone) by a placeholder like `<EMAIL_1>`: the same
    value always gets the same placeholder for the lifetime of this redactor (so
    placeholders are stable within a run and across its model calls). `on_llm_end`
    puts the originals back into the reply, and `restore(value)` does the same for any
    str, dict, list, tuple or pydantic model (a GUI loop calls it on action arguments
    before dispatch, so a `type` action types the real value). The DAG keeps the
    original, unmasked content.

    patterns: custom detectors, `{"NAME": regex}` (placeholders `<NAME_k>`) or a list of
    regexes (placeholders `<CUSTOM_k>`); they run before the built-ins. Phone numbers are
    found heuristically (7-15 digits written with + or separators); add a pattern for
    other formats. Card numbers (13-19 digits) are masked only when Luhn-valid.
    Text inside images (screenshots) is not masked.
    """

    def __init__(
        self,
        patterns: Mapping[str, Pattern] | Iterable[Pattern] | None = None,
        *,
        emails: bool = True,
        phones: bool = True,
        cards: bool = True,
    ) -> None:
        detectors: list[tuple[str, re.Pattern[str], Callable[[str], bool] | None]] = []
        for name, pattern in _named(patterns):
            detectors.append((name, _compile(name, pattern), None))
        if emails:
            detectors.append(("EMAIL", _EMAIL, None))
        if cards:
            detectors.append(("CARD", _CARD, _is_card))
        if phones:
            detectors.append(("PHONE", _PHONE, _is_phone))
        self._detectors = detectors
        self._lock = threading.Lock()
        self._placeholders: dict[tuple[str, str], str] = {}
        self._originals: dict[str, str] = {}
        self._counts: dict[str, int] = {}

    def __repr__(self) -> str:
        kinds = ", ".join(name for name, _, _ in self._detectors)
        return f"PIIRedactor({kinds}; {len(self._originals)} value(s) masked)"

    # -- masking -------------------------------------------------------------------------
    def redact(self, text: str) -> str:
        """`text` with every detected value replaced by its placeholder."""
        for name, pattern, check in self._detectors:
            text = pattern.sub(functools.partial(self._mask, name, check), text)
        return text

    def _mask(self, kind: str, check: Callable[[str], bool] | None, match: re.Match[str]) -> str:
        value = match.group(0)
        if _PLACEHOLDER.fullmatch(value) or (check is not None and not check(value)):
            return value
        with self._lock:
            placeholder = self._placeholders.get((kind, value))
            if placeholder is None:
                count = self._counts.get(kind, 0) + 1
                self._counts[kind] = count
                placeholder = f"<{kind}_{count}>"
                self._placeholders[(kind, value)] = placeholder
                self._originals[placeholder] = value
            return placeholder

    @property
    def mapping(self) -> dict[str, str]:
        """Placeholder → original value, for every value masked so far."""
        with self._lock:
            return dict(self._originals)

    def reset(self) -> None:
        """Forget every masked value (placeholders start again at 1)."""
        with self._lock:
            self._placeholders.clear()
            self._originals.clear()
            self._counts.clear()

    # -- restoring -----------------------------------------------------------------------
    def restore(self, value: object) -> Any:
        """`value` with placeholders replaced by the originals, walking dicts, lists,
        tuples and pydantic models (a copy; the input is not changed). Unknown
        placeholders and other types are left as they are."""
        if isinstance(value, str):
            if "<" not in value:
                return value
            with self._lock:
                originals = dict(self._originals)
            return _PLACEHOLDER.sub(lambda m: originals.get(m.group(0), m.group(0)), value)
        if isinstance(value, Mapping):
            return {self.restore(k): self.restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        if isinstance(value, tuple):
            restored = [self.restore(v) for v in value]
            return type(value)(*restored) if hasattr(value, "_fields") else tuple(restored)
        if isinstance(value, BaseModel):
            update = {}
            for name in type(value).model_fields:
                current = getattr(value, name)
                restored_field = self.restore(current)
                if restored_field is not current and restored_field != current:
                    update[name] = restored_field
            return value.model_copy(update=update) if update else value
        return value

    # -- hooks ---------------------------------------------------------------------------
    def on_llm_start(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages with personal data masked (new lists; the input is not changed)."""
        return [self._redact_message(message) for message in messages]

    def _redact_message(self, message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if isinstance(content, str):
            return {**message, "content": self.redact(content)}
        if isinstance(content, list):
            parts = [
                {**part, "text": self.redact(part["text"])}
                if isinstance(part, dict) and isinstance(part.get("text"), str)
                else part
                for part in content
            ]
            return {**message, "content": parts}
        return dict(message)

    def on_llm_end(self, reply: str) -> str:
        """The reply with the originals back in place of placeholders; a JSON reply is
        restored value by value so the originals are escaped correctly."""
        if not isinstance(reply, str) or not _PLACEHOLDER.search(reply):
            return reply
        stripped = reply.strip()
        if stripped.startswith(("{", "[")):
            try:
                return json.dumps(self.restore(json.loads(stripped)), ensure_ascii=False)
            except ValueError:
                pass
        restored: str = self.restore(reply)  # a str walks back to a str
        return restored


def _named(patterns: Mapping[str, Pattern] | Iterable[Pattern] | None) -> list[tuple[str, Pattern]]:
    if patterns is None:
        return []
    if isinstance(patterns, (str, re.Pattern)):
        return [("CUSTOM", patterns)]
    if isinstance(patterns, Mapping):
        named = []
        for name, pattern in patterns.items():
            if not isinstance(name, str) or not _NAME.fullmatch(name):
                raise UsageError(
                    f"PIIRedactor pattern name {name!r} must be letters, digits and _ "
                    "starting with a letter (it becomes the placeholder <NAME_k>)"
                )
            if name.upper() in _BUILT_IN:
                raise UsageError(
                    f"PIIRedactor pattern name {name!r} is a built-in detector; pick "
                    "another name, or turn the built-in off (emails=/phones=/cards=False)"
                )
            named.append((name.upper(), pattern))
        return named
    return [("CUSTOM", pattern) for pattern in patterns]


def _compile(name: str, pattern: Pattern) -> re.Pattern[str]:
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise UsageError(f"PIIRedactor pattern {name}={pattern!r} must be a regex string")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(
            f"PIIRedactor pattern {name}={pattern!r} is not a valid regex: {exc}"
        ) from exc
