"""Who may use a local HTTP server: the Host header must name the address it is bound to
(a domain name an attacker controls never passes: DNS rebinding), no browser page may
call it, and the request carries the bearer token of this start of the server, compared
in constant time. Start at Access.
"""

from __future__ import annotations

import hmac
import ipaddress
import socket
from collections.abc import Iterable

__all__ = ["BROWSER_HEADERS", "Access", "browser_header", "is_loopback"]

BROWSER_HEADERS = ("Origin", "Sec-Fetch-Site")
"""Headers only a browser sends: a request with one comes from a web page."""


def is_loopback(host: str) -> bool:
    """Whether `host` ("localhost" or an IP address) is a loopback address."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def browser_header(names: Iterable[str]) -> str | None:
    """The first of BROWSER_HEADERS among the header `names` (any case), else None."""
    present = {name.lower() for name in names}
    return next((name for name in BROWSER_HEADERS if name.lower() in present), None)


class Access:
    """The checks of a server bound to `host`:`port` whose clients send `token`."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self._port = str(port)
        self._token = token.encode()
        self._wildcard = host in ("0.0.0.0", "::")
        names = {host.lower(), f"[{host.lower()}]"}
        if is_loopback(host):
            names |= {"localhost", "127.0.0.1", "[::1]"}
        if self._wildcard:
            names |= {socket.gethostname().lower(), socket.getfqdn().lower(), "localhost"}
        self._names = frozenset(names)

    def host_allowed(self, value: str) -> bool:
        """Whether a Host header's `value` ("name:port") names this server."""
        name, colon, port = value.strip().lower().rpartition(":")
        if not colon or port != self._port or not name:
            return False
        if name in self._names:
            return True
        # a wildcard bind answers to any address of the machine, never to a domain name
        return self._wildcard and _is_ip(name.strip("[]"))

    def token_given(self, authorization: bytes) -> bool:
        """Whether an Authorization header's raw bytes are `Bearer <this token>`. The
        comparison takes as long however much of the token was right."""
        scheme, _, value = authorization.strip().partition(b" ")
        if scheme.lower() != b"bearer":
            return False
        return hmac.compare_digest(value.strip(), self._token)


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
