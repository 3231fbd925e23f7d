"""The life cycle and limits of a local HTTP server: serve on a thread, stop and join.

OpenAIServer and the tests' FaultServer differ in what they answer, not in how they run;
both inherit ServedOnThread. BoundedServer and LimitedHandler bound what one client can
hold (openprogram.serving's limits, and the body's size: 413 before it is read); stop()
cuts the connections still open. Start at ServedOnThread.
"""

from __future__ import annotations

import io
import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from types import TracebackType
from typing import TypeVar

from openprogram.serving import DeadlineReader, LimitedServer

__all__ = ["BoundedServer", "LimitedHandler", "Refusal", "ServedOnThread"]

_S = TypeVar("_S", bound="ServedOnThread")
_DIGITS = re.compile(r"[0-9]{1,18}")


class ServedOnThread:
    """An HTTP server on 127.0.0.1 served from a thread of its own; a context manager."""

    _http: HTTPServer

    def _serve(self, http: HTTPServer, name: str) -> None:
        self._http = http
        self._stopped = False
        self._thread = threading.Thread(
            target=http.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._http.server_address[1])

    @property
    def url(self) -> str:
        """Base URL for an OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Stop serving, cut the connections still open (a slow or stalled client holds
        nothing up), close the socket and join all threads; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self._http.shutdown()
        if isinstance(self._http, LimitedServer):
            self._http.cut_connections()
        self._http.server_close()
        self._thread.join()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


class Refusal(Exception):
    """A request not served: its HTTP `status` and the message of the error sent."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


class BoundedServer(LimitedServer):
    """openprogram.serving's LimitedServer (worker threads, read deadline, lingering
    sockets) with bodies of at most `max_body_bytes` and errors in the OpenAI API's
    shape."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[LimitedHandler],
        *,
        max_connections: int,
        read_timeout: float,
        max_body_bytes: int,
    ) -> None:
        self.max_body_bytes = max_body_bytes
        super().__init__(
            address, handler, max_connections=max_connections, read_timeout=read_timeout
        )

    def busy_reply(self) -> tuple[bytes, str]:
        message = (
            f"the server is busy: all {self.max_connections} connections are in use; try again"
        )
        return _error_body(503, message, "server_busy"), "application/json"


class LimitedHandler(BaseHTTPRequestHandler):
    """Reads a request within the server's read deadline (its line, headers and body
    together); body() refuses one over the server's size before reading it."""

    server: BoundedServer

    def setup(self) -> None:
        super().setup()
        timeout = self.server.read_timeout
        reader = DeadlineReader(self.connection, time.monotonic() + timeout, timeout)
        self.rfile = io.BufferedReader(reader)

    def body(self) -> bytes:
        """The request's body. Raises Refusal: no plain Content-Length (400, 501 for
        Transfer-Encoding), over the server's max_body_bytes (413, nothing read), not
        all of it within the read deadline (408) or before the client stopped (400)."""
        if "Transfer-Encoding" in self.headers:
            raise Refusal(501, "Transfer-Encoding is not supported; send a Content-Length")
        lengths = self.headers.get_all("Content-Length") or ["0"]
        given = lengths[0].strip()
        if len(lengths) > 1 or not given.isdigit() or not given.isascii():
            shown = json.dumps(", ".join(lengths))[:80]
            raise Refusal(400, f"Content-Length {shown} is not one whole number of bytes")
        limit = self.server.max_body_bytes
        if not _DIGITS.fullmatch(given) or int(given) > limit:
            shown = given if len(given) <= 20 else f"{given[:20]}… ({len(given)} digits)"
            raise Refusal(413, f"Content-Length {shown} is over this server's {limit:,} bytes")
        length = int(given)
        try:
            raw = self.rfile.read(length)
        except TimeoutError:
            raise Refusal(
                408, f"the request did not arrive within {self.server.read_timeout} s"
            ) from None
        if len(raw) < length:
            raise Refusal(400, f"the body ended after {len(raw)} of {length} bytes")
        return raw


def _error_body(status: int, message: str, code: str | None = None) -> bytes:
    """An error in the OpenAI API's shape."""
    kind = "server_error" if status >= 500 else "invalid_request_error"
    error = {"message": message, "type": kind, "param": None, "code": code}
    return json.dumps({"error": error}).encode()
