"""Quoting input back: what of a value an error, log line or CLI message may show.

Owns the two rules every echo follows: it is cut to a few hundred characters, saying how
much was cut (`cut`, `echo`), and a URL's credentials never appear (`mask_url`: the
password of `scheme://user:password@host`, secret-named query values); what reaches a
terminal carries no control sequence (`printable`), and a long value shown to a person loses
its middle, never its end (`elide`). Start at echo().
"""

from __future__ import annotations

import re
from urllib.parse import unquote

__all__ = ["LIMIT", "cut", "echo", "elide", "mask_url", "printable"]

LIMIT = 300
"""Characters of an echoed input kept by default: enough to recognise it."""

MASK = "***"

_SECRET_KEY = re.compile(r"pass|pwd|secret|token|key|auth|credential|signature", re.IGNORECASE)
"""Query (or libpq key=value) names whose value is masked: over-masking costs nothing."""
_ASSIGNMENT = re.compile(r"(?<![\w.-])([\w.-]{1,64})=([^&;#\s'\"]+)")
_SPACE = re.compile(r"\s")
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e"
    "\u2066-\u2069\ud800-\udfff]"
)
"""What a terminal would act on instead of showing: C0/C1 controls (ESC starts ANSI and
OSC sequences: a title, the clipboard), DEL, bidirectional overrides, line separators and
lone surrogates. Newline and tab are kept; `printable(..., newlines=False)` escapes them."""
_CONTROL_OR_NEWLINE = re.compile(f"{_CONTROL.pattern[:-1]}\n\t]")


def cut(text: str, limit: int = LIMIT) -> str:
    """`text`, or its first `limit` characters and a note saying how much was cut:
    "abc…[cut 10 485 460 of 10 485 760 characters]"."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…[cut {_count(len(text) - limit)} of {_count(len(text))} characters]"


def printable(text: str, *, newlines: bool = True) -> str:
    """`text` with every control character a terminal would act on written as a visible
    escape (`\\x1b`, `\\u202e`), so a model's reply, a tool's output or a stored value
    shown on a terminal can neither rewrite the screen nor set its title or clipboard.
    With `newlines=False`, newline and tab are escaped too (a one-line field)."""
    if not isinstance(text, str):
        text = str(text)
    pattern = _CONTROL if newlines else _CONTROL_OR_NEWLINE
    if text.isprintable() or (newlines and text.isascii() and not pattern.search(text)):
        return text
    return pattern.sub(_escape, text)


def elide(text: str, limit: int = LIMIT) -> str:
    """`text`, or its beginning and its end with the middle replaced by a note saying how
    much was left out: what a person approving a call must see, since the end of a long
    argument is where a trick hides. Never longer than about `limit` + 40 characters."""
    if len(text) <= limit:
        return text
    head = max(1, limit * 2 // 3)
    tail = max(1, limit - head)
    left = len(text) - head - tail
    return f"{text[:head]}…[{_count(left)} characters elided]…{text[-tail:]}"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def echo(value: object, limit: int = LIMIT) -> str:
    """The repr of a user- or model-supplied value for a message: URL credentials
    masked, cut to about `limit` characters (a long string is never copied whole)."""
    if isinstance(value, str):
        masked = mask_url(value)
        if len(masked) <= limit:
            return repr(masked)
        return f"{masked[:limit]!r}{cut(masked, limit)[limit:]}"
    if isinstance(value, (bytes, bytearray)) and len(value) > limit:
        note = f"…[cut {_count(len(value) - limit)} of {_count(len(value))} bytes]"
        return f"{bytes(value[:limit])!r}{note}"
    try:
        text = repr(value)
    except Exception as exc:  # a broken __repr__ must not hide the error being reported
        text = f"<{type(value).__name__} (repr failed: {type(exc).__name__})>"
    return cut(mask_url(text), limit)


def mask_url(text: str, url: str | None = None) -> str:
    """`text` with the credentials of every URL in it masked:
    "postgresql://bob:S3cret@host/db?sslpassword=x" -> "postgresql://bob:***@host/db?sslpassword=***".
    Over-masks rather than leaks: a password holding '@' or '/' is masked whole. With
    `url`, its credentials are also masked wherever they appear alone in `text` (a driver
    error quoting the password it could not parse)."""
    if url and isinstance(text, str):
        for secret in sorted(_credentials(url), key=len, reverse=True):
            text = text.replace(secret, MASK)
    if not isinstance(text, str) or ("://" not in text and "=" not in text):
        return text
    parts: list[str] = []
    done = 0
    start = text.find("://")
    while start >= 0:
        begin = start + 3
        space = _SPACE.search(text, begin)
        end = space.start() if space else len(text)
        run = text[begin:end]
        colon, at = run.find(":"), run.rfind("@")
        boundary = min((i for i in (run.find("/"), run.find("?"), run.find("#")) if i >= 0),
                       default=len(run))  # fmt: skip
        if 0 <= colon < at and colon < boundary:
            parts += [text[done : begin + colon + 1], MASK]
            done = begin + at
        start = text.find("://", end)
    masked = "".join([*parts, text[done:]]) if parts else text
    return _ASSIGNMENT.sub(_mask_assignment, masked) if "=" in masked else masked


def _credentials(url: str) -> set[str]:
    """The secret values of `url` that mask_url hides, as written and percent-decoded."""
    found: set[str] = set()
    _, scheme, rest = url.partition("://")
    run = rest.split(None, 1)[0] if scheme and rest.strip() else ""
    colon, at = run.find(":"), run.rfind("@")
    if 0 <= colon < at:
        found.add(run[colon + 1 : at])
    for match in _ASSIGNMENT.finditer(url):
        if _SECRET_KEY.search(match.group(1)):
            found.add(match.group(2))
    found |= {unquote(value) for value in found}
    return {value for value in found if len(value) >= 3}


def _mask_assignment(match: re.Match[str]) -> str:
    name = match.group(1)
    return f"{name}={MASK}" if _SECRET_KEY.search(name) else match.group(0)


def _count(number: int) -> str:
    return f"{number:,}".replace(",", " ")
