"""A local OpenAI-compatible chat-completions server for tests: OpenAIServer.

Owns the HTTP fake on 127.0.0.1 that litellm (or any OpenAI client) talks to: scripted
replies (text or tool calls, sent whole or streamed over SSE, optionally broken off
mid-stream) and failures, and a record of every chat request. Leaves retries and error
translation to the code under test. Start at OpenAIServer.reply() and .fail().
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support._serving import ServedOnThread

__all__ = ["OpenAIServer", "RecordedRequest"]

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})

# (type, code) of the error body the real API sends for each status.
_ERROR_KINDS: dict[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    408: ("timeout_error", None),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    502: ("server_error", None),
    503: ("server_error", None),
}


@dataclass(frozen=True)
class RecordedRequest:
    """One chat-completions request as the server received it; header names lower-cased."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class _Reply:
    text: str
    prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[dict[str, Any], ...] = ()
    break_after: int | None = None


@dataclass(frozen=True)
class _Failure:
    status: int
    message: str
    retry_after: float | str | None


class OpenAIServer(ServedOnThread):
    """An OpenAI-compatible chat-completions server on 127.0.0.1, started on construction.

    Scripted responses (`reply`, `fail`) are served first in, first out, one per chat
    request. When the script is empty the server answers with `responder(body)` if given,
    else with `default_reply`, else (``default_reply=None``) with a 500 saying the script
    ran out. Streaming requests (``"stream": true``) get a 400 and consume nothing.

    Use it as a context manager, or call `stop()`; either joins every thread it started.
    """

    def __init__(
        self,
        *,
        default_reply: str | None = "ok",
        responder: Callable[[dict[str, Any]], str | dict[str, Any]] | None = None,
    ) -> None:
        self._default_reply = default_reply
        self._responder = responder
        self._script: deque[_Reply | _Failure] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        http = _HTTPServer(("127.0.0.1", 0), _Handler, fake=self)
        self._serve(http, f"OpenAIServer:{http.server_address[1]}")

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the chat requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    @property
    def pending(self) -> int:
        """How many scripted responses have not been served yet."""
        with self._lock:
            return len(self._script)

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        prompt_tokens: int = 10,
        completion_tokens: int = 5,
        break_after: int | None = None,
    ) -> None:
        """Script a successful completion whose assistant message is `text`.

        tool_calls: `[{"name": ..., "arguments": {...} or "raw json", "id"?: ...}]` asks for
        tool calls (ids default to `call_<n>`). break_after: when streamed, send that many
        chunks and then drop the connection mid-response.
        """
        calls = tuple(_tool_call(call, next(self._ids)) for call in tool_calls or ())
        with self._lock:
            self._script.append(_Reply(text, prompt_tokens, completion_tokens, calls, break_after))

    def fail(
        self,
        status: int,
        *,
        retry_after: float | str | None = None,
        message: str = "scripted failure",
    ) -> None:
        """Script an HTTP error `status` with an OpenAI-shaped error body.

        `retry_after` (seconds, or an HTTP date string) is sent as the Retry-After header.
        """
        if not 400 <= status <= 599:
            raise ValueError(f"status={status!r} is not an HTTP error status; use 400-599")
        with self._lock:
            self._script.append(_Failure(status, message, retry_after))

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else self.url
        return f"<OpenAIServer {state} requests={len(self.requests)} pending={self.pending}>"

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_response(self, body: dict[str, Any]) -> _Reply | _Failure:
        with self._lock:
            if self._script:
                return self._script.popleft()
        if self._responder is not None:
            try:
                answer = self._responder(body)
                if isinstance(answer, dict):
                    calls = tuple(
                        _tool_call(call, next(self._ids)) for call in answer.get("tool_calls") or ()
                    )
                    return _Reply(str(answer.get("content") or ""), 10, 5, calls)
                return _Reply(answer, 10, 5)
            except Exception as exc:
                return _Failure(500, f"OpenAIServer responder raised {exc!r}", None)
        if self._default_reply is not None:
            return _Reply(self._default_reply, 10, 5)
        return _Failure(500, "OpenAIServer script ran out: no reply() or fail() left", None)

    def _completion(self, reply: _Reply, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text}
        if reply.tool_calls:
            message = {
                "role": "assistant",
                "content": reply.text or None,
                "tool_calls": list(reply.tool_calls),
            }
        return {
            "id": f"chatcmpl-test-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": _usage(reply),
        }

    def _chunks(self, reply: _Reply, model: str, usage: bool) -> list[dict[str, Any]]:
        """The streamed form of `reply`: one chunk per word, the tool calls (each in
        several deltas), the end."""
        ident = f"chatcmpl-test-{next(self._ids)}"

        def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
            return {
                "id": ident,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }

        chunks = [chunk({"role": "assistant", "content": ""})]
        chunks += [chunk({"content": word}) for word in re.findall(r"\s*\S+|\s+", reply.text)]
        for i, call in enumerate(reply.tool_calls):  # as OpenAI streams them: the id
            # and name first, then the arguments' JSON in pieces
            opening = {**call, "function": {**call["function"], "arguments": ""}}
            chunks.append(chunk({"tool_calls": [{"index": i, **opening}]}))
            arguments = call["function"]["arguments"]
            for start in range(0, len(arguments), 7):
                piece = {"index": i, "function": {"arguments": arguments[start : start + 7]}}
                chunks.append(chunk({"tool_calls": [piece]}))
        chunks.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if usage:
            chunks.append({**chunk({}), "choices": [], "usage": _usage(reply)})
        return chunks


class _HTTPServer(ThreadingHTTPServer):
    # Non-daemon handler threads so server_close() joins them: no thread outlives stop().
    daemon_threads = False
    block_on_close = True

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        *,
        fake: OpenAIServer,
    ) -> None:
        self.fake = fake
        super().__init__(address, handler)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    # A client that connects and never sends must not block server_close() forever.
    timeout = 10

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if path not in _CHAT_PATHS:
            self._send_error(404, f"no route for POST {path!r}; use /v1/chat/completions")
            return
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError as exc:
            self._send_error(400, f"request body is not valid JSON: {exc}")
            return
        if not isinstance(body, dict):
            self._send_error(400, f"request body must be a JSON object, got {body!r}")
            return
        fake = self.server.fake
        headers = {name.lower(): value for name, value in self.headers.items()}
        fake._record(RecordedRequest(path, headers, body))
        response = fake._next_response(body)
        if isinstance(response, _Failure):
            self._send_error(response.status, response.message, response.retry_after)
            return
        model = str(body.get("model", "test-model"))
        if body.get("stream"):
            options = body.get("stream_options") or {}
            self._send_events(
                fake._chunks(response, model, bool(options.get("include_usage"))),
                response.break_after,
            )
            return
        self._send_json(200, fake._completion(response, model))

    def _send_events(self, chunks: list[dict[str, Any]], break_after: int | None) -> None:
        """Server-sent events over a chunked HTTP/1.1 body; with break_after, the
        connection drops after that many content chunks, leaving the body incomplete."""
        self.protocol_version = "HTTP/1.1"
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
        for position, event in enumerate(events):
            if break_after is not None and position > break_after:
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            data = event.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in _MODELS_PATHS:
            self._send_error(404, f"no route for GET {path!r}; use /v1/models")
            return
        model = {"id": "test-model", "object": "model", "created": 0, "owned_by": "openprogram"}
        self._send_json(200, {"object": "list", "data": [model]})

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send_error(
        self, status: int, message: str, retry_after: float | str | None = None
    ) -> None:
        error_type, code = _ERROR_KINDS.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None)
        )
        body = {"error": {"message": message, "type": error_type, "param": None, "code": code}}
        headers = {} if retry_after is None else {"Retry-After": _header_value(retry_after)}
        self._send_json(status, body, headers)

    def _send_json(
        self, status: int, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


def _tool_call(call: dict[str, Any], number: int) -> dict[str, Any]:
    """A tool call in the API's shape: arguments as a JSON string."""
    arguments = call.get("arguments", {})
    return {
        "id": str(call.get("id") or f"call_{number}"),
        "type": "function",
        "function": {
            "name": call["name"],
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
        },
    }


def _usage(reply: _Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _header_value(retry_after: float | str) -> str:
    if isinstance(retry_after, float) and retry_after.is_integer():
        return str(int(retry_after))
    return str(retry_after)
