"""A fault-injecting OpenAI-compatible server for tests: FaultServer and its reply shapes.

Owns raw HTTP answers on 127.0.0.1 that a real provider might send on a bad day: any
status, headers and body bytes (non-JSON, truncated, an error object with status 200,
odd retry headers), served first in, first out. `REPLY_SHAPES` is the fuzz corpus.
openprogram.testing.OpenAIServer is the well-behaved sibling; start at FaultServer.add().
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from openprogram.testing._serving import ServedOnThread

__all__ = ["REPLY_SHAPES", "FaultServer", "RawReply", "completion"]


@dataclass(frozen=True)
class RawReply:
    """One HTTP answer as sent: `body` bytes as given; `truncate` closes the connection
    after that many bytes of the body while Content-Length still promises all of it."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    truncate: int | None = None

    @classmethod
    def json(cls, status: int, value: Any, **headers: str) -> RawReply:
        return cls(
            status, json.dumps(value).encode(), {"Content-Type": "application/json", **headers}
        )


def completion(message: Any = None, **overrides: Any) -> dict[str, Any]:
    """A chat.completion body whose first choice's message is `message` (default: text)."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": 0,
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "message": message
                if message is not None
                else {"role": "assistant", "content": "fine"},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }
    body.update(overrides)
    return body


def _error(status: int, message: str, **headers: str) -> RawReply:
    return RawReply.json(
        status, {"error": {"message": message, "type": "x", "code": None}}, **headers
    )


REPLY_SHAPES: dict[str, RawReply] = {
    "no choices": RawReply.json(200, completion(choices=[])),
    "choices null": RawReply.json(200, completion(choices=None)),
    "choices not a list": RawReply.json(200, completion(choices="nope")),
    "choice without message": RawReply.json(200, completion(choices=[{"index": 0}])),
    "message null": RawReply.json(200, completion(choices=[{"index": 0, "message": None}])),
    "content null, no tool calls": RawReply.json(
        200, completion({"role": "assistant", "content": None})
    ),
    "content a number": RawReply.json(200, completion({"role": "assistant", "content": 42})),
    "content a list": RawReply.json(
        200, completion({"role": "assistant", "content": [{"type": "text", "text": "x"}]})
    ),
    "empty object": RawReply.json(200, {}),
    "a JSON list": RawReply.json(200, [1, 2, 3]),
    "a JSON string": RawReply.json(200, "hello"),
    "JSON null": RawReply.json(200, None),
    "error object with status 200": RawReply.json(
        200, {"error": {"message": "upstream overloaded", "type": "server_error"}}
    ),
    "non-JSON text": RawReply(200, b"<html>Bad Gateway</html>", {"Content-Type": "text/html"}),
    "empty body": RawReply(200, b"", {"Content-Type": "application/json"}),
    "truncated JSON": RawReply(
        200, json.dumps(completion()).encode(), {"Content-Type": "application/json"}, truncate=40
    ),
    "invalid UTF-8": RawReply(
        200, b'{"choices": "\xff\xfe"}', {"Content-Type": "application/json"}
    ),
    "usage garbage": RawReply.json(200, completion(usage={"prompt_tokens": "many"})),
    "500 non-JSON": RawReply(500, b"Internal Server Error", {"Content-Type": "text/plain"}),
    "502 truncated": RawReply(502, b'{"error": {"mess', {"Content-Type": "application/json"}),
    "429 retry-after-ms abc": _error(429, "slow down", **{"retry-after-ms": "abc"}),
    "429 retry-after abc": _error(429, "slow down", **{"Retry-After": "abc"}),
    "429 retry-after negative": _error(429, "slow down", **{"Retry-After": "-5"}),
    "429 retry-after huge": _error(429, "slow down", **{"Retry-After": "1e309"}),
    "429 retry-after-ms nan": _error(429, "slow down", **{"retry-after-ms": "nan"}),
    "401": _error(401, "Incorrect API key provided"),
    "404": _error(404, "The model does not exist"),
    "418": _error(418, "I'm a teapot"),
    "400 no body": RawReply(400, b""),
}
"""Named reply shapes for fuzzing: every one must end as a typed ModelError (or a reply)."""


class FaultServer(ServedOnThread):
    """An OpenAI-compatible endpoint on 127.0.0.1 answering each request with the next
    scripted RawReply (a 500 saying so when the script is empty). Records request bodies
    in `requests`. Use as a context manager, or call stop()."""

    def __init__(self) -> None:
        self._script: deque[RawReply] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        http = _Server(("127.0.0.1", 0), _Handler)
        http.fake = self
        self._serve(http, "FaultServer")

    def add(self, *replies: RawReply) -> None:
        """Script replies, served in order, one per request."""
        with self._lock:
            self._script.extend(replies)

    def _next(self, body: Any) -> RawReply:
        with self._lock:
            self.requests.append(body)
            if self._script:
                return self._script.popleft()
        return _error(500, "FaultServer script ran out")


class _Server(ThreadingHTTPServer):
    daemon_threads = False
    block_on_close = True
    fake: FaultServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    timeout = 10

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw or b"null")
        except ValueError:
            body = None
        reply = self.server.fake._next(body)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        if reply.truncate is not None:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(reply.body if reply.truncate is None else reply.body[: reply.truncate])
        self.wfile.flush()
        if reply.truncate is not None:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass
