"""A local OpenAI-compatible chat-completions server: OpenAIServer.

Owns the HTTP server on 127.0.0.1 that litellm (or any OpenAI client) talks to, for tests
and offline runs: replies from a responder (a ScriptedModel-style script or a callable)
or scripted one by one (text or tool calls, whole or streamed over SSE, optionally broken
off mid-stream), failures, token usage counted from the text, and a record of every chat
request. How it runs and what one client may hold (threads, time, body size) is
_serving.py's. Start at OpenAIServer.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from openprogram.errors import UsageError
from openprogram.models.model import reply_text
from openprogram.testing._serving import BoundedServer, LimitedHandler, Refusal, ServedOnThread

__all__ = ["OpenAIServer", "RecordedRequest", "Responder"]

_CHAT_PATHS = frozenset({"/v1/chat/completions", "/chat/completions"})
_MODELS_PATHS = frozenset({"/v1/models", "/models"})
_TOKEN = re.compile(r"\w+|[^\w\s]")

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

Responder = Iterable[Any] | Mapping[str, Iterable[Any]] | Callable[[dict[str, Any]], Any]
"""What OpenAIServer answers with: a list of replies consumed in order, a dict
`{model_name: [replies...]}` ("*" for any other model), or a callable `(request body) ->
reply`. A reply is what a ScriptedModel script holds: a string; a dict with "tool_calls"
(`{"tool_calls": [{"name": "add", "arguments": {"a": 2}}], "content": "optional"}`); a
dict, list or pydantic model (sent as JSON); or an exception (sent as a 500 naming it)."""


@dataclass(frozen=True)
class RecordedRequest:
    """One chat-completions request as the server received it; header names lower-cased."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class _Reply:
    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_calls: tuple[dict[str, Any], ...] = ()
    break_after: int | None = None


@dataclass(frozen=True)
class _Failure:
    status: int
    message: str
    retry_after: float | str | None


class OpenAIServer(ServedOnThread):
    """An OpenAI-compatible chat-completions server on 127.0.0.1, started on construction.

    Give litellm its `.url` as the api_base: `Runtime("openai/any-name",
    api_base=server.url, api_key="test")`. It serves `POST /v1/chat/completions` (whole
    or streamed over SSE, tool calls included) and `GET /v1/models`.

    responder: what to answer (see `Responder`): a list of replies, a dict of them per
    model name, or a callable given the request body; None answers `default_reply`
    ("ok") to everything. Responses scripted with `reply()` and `fail()` come first, one
    per request. When a list runs out, or with ``default_reply=None``, the answer is a
    500 saying the script ran out. Token usage is counted from the text sent and
    replied (words and punctuation marks), unless a `reply()` gives the counts.
    port: 0 picks a free one. Use it as a context manager, or call `stop()`; either
    cuts the connections still open and joins every thread it started.

    What one client may hold: `max_connections` connections are served at once (each
    on a thread of its own; more are answered 503 at once), a client has `read_timeout`
    seconds to send a whole request (else 408) and each send of a reply, and a body
    over `max_body_bytes` is answered 413 without being read.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        port: int = 0,
        default_reply: str | None = "ok",
        max_connections: int = 64,
        read_timeout: float = 10.0,
        max_body_bytes: int = 32 << 20,
    ) -> None:
        _check_limits(max_connections, read_timeout, max_body_bytes)
        self._answers = _Answers(responder, default_reply)
        http = _HTTPServer(
            ("127.0.0.1", port),
            _Handler,
            answers=self._answers,
            max_connections=max_connections,
            read_timeout=float(read_timeout),
            max_body_bytes=max_body_bytes,
        )
        self._serve(http, f"OpenAIServer:{http.server_address[1]}")

    @property
    def requests(self) -> list[RecordedRequest]:
        """A snapshot of the chat requests received so far, oldest first."""
        return self._answers.requests()

    @property
    def pending(self) -> int:
        """How many responses scripted with reply(), fail() or a responder list have not
        been served yet."""
        return self._answers.pending()

    def reply(
        self,
        text: str = "",
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        prompt_tokens: int | None = None,
        completion_tokens: int | None = None,
        break_after: int | None = None,
    ) -> None:
        """Script a successful completion whose assistant message is `text`.

        tool_calls: `[{"name": ..., "arguments": {...} or "raw json", "id"?: ...}]` asks for
        tool calls (ids default to `call_<n>`). prompt_tokens, completion_tokens: the usage
        to report (default: counted from the text). break_after: when streamed, send that
        many chunks and then drop the connection mid-response.
        """
        calls = self._answers.tool_calls(tool_calls or ())
        self._answers.script(_Reply(text, prompt_tokens, completion_tokens, calls, break_after))

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
        self._answers.script(_Failure(status, message, retry_after))

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else self.url
        return f"<OpenAIServer {state} requests={len(self.requests)} pending={self.pending}>"


class _Answers:
    """What an OpenAIServer answers, and what it was asked: the script of replies and
    failures (reply(), fail(), a responder), the requests recorded, and each reply's
    form as a completion or as streamed chunks. Its HTTP handler's only way to it."""

    def __init__(self, responder: Responder | None, default_reply: str | None) -> None:
        self._default_reply = default_reply
        self._callable: Callable[[dict[str, Any]], Any] | None = None
        self._queues: dict[str, deque[Any]] | None = None
        if callable(responder) and not isinstance(responder, Mapping):
            self._callable = responder
        elif isinstance(responder, Mapping):
            self._queues = {
                str(k): _replies(v, f"the replies for {k!r}") for k, v in responder.items()
            }
        elif responder is not None:
            self._queues = {"*": _replies(responder, "OpenAIServer(responder)")}
        self._script: deque[_Reply | _Failure] = deque()
        self._requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)

    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def pending(self) -> int:
        with self._lock:
            queued = sum(len(q) for q in (self._queues or {}).values())
            return len(self._script) + queued

    def model_names(self) -> list[str]:
        """The model names a responder dict answers for ("test-model" without one)."""
        return sorted(set(self._queues or ()) - {"*"}) or ["test-model"]

    def tool_calls(self, calls: Iterable[dict[str, Any]]) -> tuple[dict[str, Any], ...]:
        """Tool calls as sent (ids default to `call_<n>`)."""
        return tuple(_tool_call(call, next(self._ids)) for call in calls)

    def script(self, answer: _Reply | _Failure) -> None:
        """Answer the next request so (before the responder)."""
        with self._lock:
            self._script.append(answer)

    def record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def next_response(self, body: dict[str, Any]) -> _Reply | _Failure:
        with self._lock:
            if self._script:
                return self._script.popleft()
            if self._queues is not None:
                model = str(body.get("model", ""))
                queue = self._queues.get(model, self._queues.get("*"))
                if not queue:
                    named = "" if queue is None else f" for model {model!r}"
                    return _Failure(500, f"OpenAIServer script ran out{named}: no reply left", None)
                answer = queue.popleft()
                return self._from_script(answer)
        if self._callable is not None:
            try:
                answer = self._callable(body)
            except Exception as exc:
                return _Failure(500, f"OpenAIServer responder raised {exc!r:.300}", None)
            return self._from_script(answer)
        if self._default_reply is not None:
            return _Reply(self._default_reply)
        return _Failure(500, "OpenAIServer script ran out: no reply() or fail() left", None)

    def _from_script(self, answer: Any) -> _Reply | _Failure:
        """A script's reply (see Responder) as what to send."""
        if isinstance(answer, BaseException):
            return _Failure(500, f"OpenAIServer script: {answer!r:.300}", None)
        if isinstance(answer, Mapping) and "tool_calls" in answer:
            try:
                calls = tuple(_tool_call(c, next(self._ids)) for c in answer["tool_calls"] or ())
            except (KeyError, TypeError, AttributeError):
                return _Failure(
                    500,
                    "OpenAIServer script: a tool_calls reply needs a list of "
                    f"{{'name': ..., 'arguments': {{...}}}}, not {answer['tool_calls']!r:.200}",
                    None,
                )
            return _Reply(str(answer.get("content") or ""), tool_calls=calls)
        try:
            return _Reply(reply_text(answer))
        except UsageError as exc:
            return _Failure(500, f"OpenAIServer script: {exc}", None)

    def completion(self, reply: _Reply, model: str, body: dict[str, Any]) -> dict[str, Any]:
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
            "usage": _usage(reply, body),
        }

    def chunks(
        self, reply: _Reply, model: str, body: dict[str, Any], usage: bool
    ) -> list[dict[str, Any]]:
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
            chunks.append({**chunk({}), "choices": [], "usage": _usage(reply, body)})
        return chunks


def _check_limits(max_connections: int, read_timeout: float, max_body_bytes: int) -> None:
    for name, value in (("max_connections", max_connections), ("max_body_bytes", max_body_bytes)):
        if type(value) is not int or value < 1:
            raise UsageError(f"{name}={value!r} must be a whole number of at least 1")
    if (
        type(read_timeout) not in (int, float)
        or not math.isfinite(read_timeout)
        or (read_timeout <= 0)
    ):
        raise UsageError(f"read_timeout={read_timeout!r} must be a positive number of seconds")


class _HTTPServer(BoundedServer):
    def __init__(self, *args: Any, answers: _Answers, **limits: Any) -> None:
        self.answers = answers
        super().__init__(*args, **limits)


class _Handler(LimitedHandler):
    server: _HTTPServer

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        try:
            raw = self.body()
        except Refusal as refusal:
            self._send_error(refusal.status, refusal.message)
            return
        if path not in _CHAT_PATHS:
            self._send_error(404, f"no route for POST {path!r}; use /v1/chat/completions")
            return
        try:
            body = json.loads(raw or b"{}")
        except (ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError
            self._send_error(400, f"request body is not valid JSON: {exc}")
            return
        if not isinstance(body, dict):
            self._send_error(400, f"request body must be a JSON object, got {body!r}")
            return
        answers = self.server.answers
        headers = {name.lower(): value for name, value in self.headers.items()}
        answers.record(RecordedRequest(path, headers, body))
        response = answers.next_response(body)
        if isinstance(response, _Failure):
            self._send_error(response.status, response.message, response.retry_after)
            return
        model = str(body.get("model", "test-model"))
        if body.get("stream"):
            options = body.get("stream_options") or {}
            self._send_events(
                answers.chunks(response, model, body, bool(options.get("include_usage"))),
                response.break_after,
            )
            return
        self._send_json(200, answers.completion(response, model, body))

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
        names = self.server.answers.model_names()
        models = [
            {"id": n, "object": "model", "created": 0, "owned_by": "openprogram"} for n in names
        ]
        self._send_json(200, {"object": "list", "data": models})

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


def _usage(reply: _Reply, body: dict[str, Any]) -> dict[str, int]:
    prompt = reply.prompt_tokens
    if prompt is None:
        prompt = count_tokens(_request_text(body))
    completion = reply.completion_tokens
    if completion is None:
        calls = " ".join(
            c["function"]["name"] + c["function"]["arguments"] for c in reply.tool_calls
        )
        completion = count_tokens(reply.text + " " + calls)
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def count_tokens(text: str) -> int:
    """Tokens as this server counts them: words and punctuation marks (at least 1)."""
    return max(1, len(_TOKEN.findall(text)))


def _request_text(body: dict[str, Any]) -> str:
    """The text of a request's messages and tools, as the prompt's token count reads it."""
    texts: list[str] = []
    for message in body.get("messages") or ():
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts += [str(p.get("text", "")) for p in content if isinstance(p, dict)]
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict):
                texts.append(json.dumps(call.get("function", "")))
    if body.get("tools"):
        texts.append(json.dumps(body["tools"]))
    return "\n".join(texts)


def _replies(replies: Any, where: str) -> deque[Any]:
    if isinstance(replies, (str, bytes)) or not isinstance(replies, Iterable):
        raise UsageError(
            f"{where} must be a list of replies (or a callable given the request body), "
            f"not {type(replies).__name__}: {replies!r:.60}"
        )
    return deque(replies)


def _header_value(retry_after: float | str) -> str:
    if isinstance(retry_after, float) and retry_after.is_integer():
        return str(int(retry_after))
    return str(retry_after)
