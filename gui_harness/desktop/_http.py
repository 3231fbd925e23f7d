"""A guarded HTTP/1.0 transport on http.server for the desktop server: who may talk, and how.

Owns the per-request limits (one read deadline for request line, headers and body;
bounded worker threads, 503 beyond them; body size and JSON depth checked before
parsing), the gate (Host, no browser Origin, bearer token) and JSON replies for every
refusal. Knows nothing of desktops: server.py routes the requests it lets through.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import re
import time
from email.message import Message
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any

from openprogram.echo import cut, echo
from openprogram.serving import Access, DeadlineReader, LimitedServer, browser_header

__all__ = ["Gate", "GuardedHandler", "GuardedServer", "HttpRefusal", "json_body"]

_log = logging.getLogger("gui_harness.desktop.server")

_MAX_DEPTH = 16  # a valid request nests 4 deep: {"action": {"path": [[x, y]]}}
_DIGITS = re.compile(r"[0-9]{1,12}")
_NUMBER = re.compile(r"[0-9]+")


class HttpRefusal(Exception):
    """A request the server will not serve: `status`, a machine `kind` and a message."""

    def __init__(self, status: HTTPStatus, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class Gate:
    """Who may use the server: the Host it is bound to, no browser, the right token."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self._access = Access(host, port, token)

    def check(self, headers: Message) -> None:
        """Raise HttpRefusal unless the headers name this server, come from no browser
        page, and carry the token as `Authorization: Bearer <token>`."""
        host = headers.get_all("Host") or []
        if len(host) != 1 or not self._access.host_allowed(host[0]):
            raise HttpRefusal(
                HTTPStatus.MISDIRECTED_REQUEST,
                "wrong_host",
                f"Host {echo(', '.join(host) or '(none)')} is not this server's address; use the"
                " URL serve_desktop() returned",
            )
        browser = browser_header(headers.keys())
        if browser is not None:
            raise HttpRefusal(
                HTTPStatus.FORBIDDEN,
                "browser_refused",
                f"requests from web pages are refused ({browser}:"
                f" {echo(headers[browser])}); drive the desktop with RemoteDesktop",
            )
        # headers are decoded as latin-1, so this gives back the bytes that were sent
        given = (headers.get("Authorization") or "").strip()
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise HttpRefusal(
                HTTPStatus.UNAUTHORIZED,
                "unauthorized",
                "this desktop server needs its token: send 'Authorization: Bearer <token>'"
                " with the token serve_desktop() returned (RemoteDesktop(url, token=...))",
            )
        if not self._access.token_given(given.encode("latin-1")):
            raise HttpRefusal(
                HTTPStatus.UNAUTHORIZED,
                "unauthorized",
                "the token is wrong; send the token of the server running at this address"
                " (a restarted server has a new one)",
            )


def json_body(headers: Message, rfile: io.BufferedIOBase, max_bytes: int) -> Any:
    """The JSON body of a POST, read after its headers are checked; HttpRefusal if unfit.

    Content-Type must be application/json, Content-Length one plain decimal number up to
    `max_bytes`, and the JSON may nest at most _MAX_DEPTH deep (checked before parsing).
    """
    content_type = (headers.get("Content-Type") or "").split(";")[0].strip().lower()
    if content_type != "application/json":
        raise HttpRefusal(
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            "invalid_request",
            f"Content-Type {echo(headers.get('Content-Type'))} is not accepted; send"
            " 'Content-Type: application/json'",
        )
    if "Transfer-Encoding" in headers:
        raise HttpRefusal(
            HTTPStatus.NOT_IMPLEMENTED,
            "invalid_request",
            f"Transfer-Encoding {echo(headers['Transfer-Encoding'])} is not supported; send the"
            " body with a Content-Length",
        )
    lengths = headers.get_all("Content-Length") or []
    if not lengths:
        raise HttpRefusal(
            HTTPStatus.LENGTH_REQUIRED, "invalid_request", "send a Content-Length header"
        )
    if len(lengths) > 1 or not _DIGITS.fullmatch(lengths[0].strip()):
        if len(lengths) == 1 and _NUMBER.fullmatch(lengths[0].strip()):  # just too long
            raise _too_large(lengths[0].strip(), max_bytes)
        raise HttpRefusal(
            HTTPStatus.BAD_REQUEST,
            "invalid_request",
            f"Content-Length {echo(', '.join(lengths))} is not one non-negative whole number"
            " of bytes",
        )
    length = int(lengths[0])
    if length > max_bytes:
        raise _too_large(str(length), max_bytes)
    body = rfile.read(length)
    if len(body) < length:
        raise HttpRefusal(
            HTTPStatus.BAD_REQUEST,
            "invalid_request",
            f"the body ended after {len(body)} of the {length} bytes Content-Length announced",
        )
    if _too_deep(body, _MAX_DEPTH):
        raise HttpRefusal(
            HTTPStatus.BAD_REQUEST,
            "invalid_request",
            f"the JSON body nests deeper than {_MAX_DEPTH} levels; a request nests 4 deep",
        )
    try:
        return json.loads(body)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
        raise HttpRefusal(
            HTTPStatus.BAD_REQUEST, "invalid_request", f"body is not JSON: {exc}"
        ) from None


def _too_large(length: str, max_bytes: int) -> HttpRefusal:
    shown = length if len(length) <= 20 else f"{length[:20]}… ({len(length)} digits)"
    return HttpRefusal(
        HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
        "invalid_request",
        f"Content-Length {shown} is over this server's limit of {max_bytes} bytes",
    )


def _too_deep(body: bytes, limit: int) -> bool:
    """Whether arrays and objects in a JSON text nest deeper than `limit`, strings skipped.

    A linear scan, so a 200 000-deep body is refused after `limit` bytes instead of
    reaching json's recursive parser.
    """
    if body.count(b"[") + body.count(b"{") <= limit:
        return False
    depth, in_string, escaped = 0, False, False
    for byte in body:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in (0x5B, 0x7B):  # [ {
            depth += 1
            if depth > limit:
                return True
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return False


class GuardedServer(LimitedServer):
    """The desktop server's transport: at most `max_connections` worker threads, more
    get a quick 503 (logged); a worker's failure is logged. Workers are not joined on
    close: one may be waiting for the desktop, which stops after the server."""

    join_workers = False

    def busy_reply(self) -> tuple[bytes, str]:
        payload = {
            "error": f"the desktop server is busy: all {self.max_connections} connections are"
            " in use; try again",
            "kind": "busy",
        }
        return json.dumps(payload).encode(), "application/json"

    def refused_busy(self, client_address: Any) -> None:
        _log.warning(
            "answered 503 to a connection from %s: all %d workers are busy",
            client_address[0],
            self.max_connections,
        )

    def handle_error(self, request: Any, client_address: Any) -> None:
        _log.exception("the desktop server failed on a request from %s", client_address[0])


class GuardedHandler(BaseHTTPRequestHandler):
    """Reads one request within the server's deadline and answers it with `route()`;
    every refusal and failure is a JSON reply, never a silent close."""

    server: GuardedServer
    server_version = "gui-harness-desktop/1"
    sys_version = ""

    def setup(self) -> None:
        self.connection = self.request
        self.deadline = time.monotonic() + self.server.read_timeout
        self.rfile = io.BufferedReader(DeadlineReader(self.connection, self.deadline))
        self.wfile = io.BytesIO()  # replies go out with sendall (see _send), not here
        self._replied = False

    def handle(self) -> None:
        self.close_connection = True  # HTTP/1.0: one request per connection
        try:
            self.raw_requestline = self.rfile.readline(65537)
            if not self.raw_requestline:
                return
            if len(self.raw_requestline) > 65536:
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.parse_request():  # it replied through send_error, except for a blank line
                if not self._replied:
                    self.send_error(HTTPStatus.BAD_REQUEST, "the request line is empty")
                return
            self.route()
        except TimeoutError:
            self.refuse(
                HttpRefusal(
                    HTTPStatus.REQUEST_TIMEOUT,
                    "timeout",
                    f"the request did not arrive within {self.server.read_timeout} s",
                )
            )
        except HttpRefusal as refusal:
            self.refuse(refusal)
        except OSError:  # the client went away; nobody to answer
            return
        except Exception as exc:
            _log.exception("the desktop server failed on %s %s", self.command, echo(self.path))
            message = f"the server failed: {type(exc).__name__}: {cut(str(exc))}"
            self.reply_json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": message, "kind": "error"})

    def route(self) -> None:
        """Answer the parsed request (self.command, self.path, self.headers)."""
        raise NotImplementedError

    def refuse(self, refusal: HttpRefusal) -> None:
        """Log and answer a refused request."""
        if refusal.kind not in ("invalid_action", "action_rejected", "not_found"):
            line = getattr(self, "requestline", "") or repr(getattr(self, "raw_requestline", b""))
            _log.warning(
                "answered %d to %r from %s: %s",
                refusal.status.value,
                cut(line, 200),
                self.client_address[0],
                refusal.message,
            )
        payload = {"error": refusal.message, "kind": refusal.kind}
        extra = {"WWW-Authenticate": "Bearer"} if refusal.status == HTTPStatus.UNAUTHORIZED else {}
        self.reply_json(refusal.status, payload, extra)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (bad request line, too many headers) as JSON too."""
        status = HTTPStatus(code)
        self.refuse(HttpRefusal(status, "invalid_request", message or status.phrase))

    def reply_json(
        self, status: HTTPStatus, payload: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        """Send `payload` as the JSON reply."""
        self.reply(status, json.dumps(payload).encode(), "application/json", headers)

    def reply(
        self,
        status: HTTPStatus,
        body: bytes,
        content_type: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Send the whole reply in one sendall, bounded by the read timeout: a client that
        stops reading cannot hold the worker. Only the first reply to a request is sent."""
        if self._replied:
            return
        self._replied = True
        lines = [
            f"HTTP/1.0 {status.value} {status.phrase}",
            f"Server: {self.server_version}",
            f"Content-Type: {content_type}",
            f"Content-Length: {len(body)}",
            "Cache-Control: no-store",
            "X-Content-Type-Options: nosniff",
            "Connection: close",
            *(f"{name}: {value}" for name, value in (headers or {}).items()),
        ]
        with contextlib.suppress(OSError):  # the client is gone or stopped reading
            self.connection.settimeout(self.server.read_timeout)
            self.connection.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: refusals are logged by refuse(); request lines are not."""
