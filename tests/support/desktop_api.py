"""A raw JSON request to a desktop server, as a client other than RemoteDesktop sends it
(to test what the server answers to requests RemoteDesktop would never make)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

__all__ = ["post_json"]

_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post_json(url: str, body: bytes, token: str, *, timeout: float = 10) -> tuple[int, Any]:
    """POST `body` to `url` with the bearer `token`; (HTTP status, decoded JSON answer),
    error answers included."""
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Authorization", f"Bearer {token}")
    try:
        with _NO_PROXY.open(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, json.loads(exc.read())
