"""The life cycle and limits of a local HTTP server: serve on a thread, stop and join.

OpenAIServer and the tests' FaultServer differ in what they answer, not in how they run;
both inherit ServedOnThread. LimitedServer and LimitedHandler bound what one client can
hold: worker threads (503 beyond them), one read deadline for a whole request, the body's
size (413 before it is read); stop() cuts the connections still open. Start at
ServedOnThread.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, TypeVar

__all__ = ["LimitedHandler", "LimitedServer", "Refusal", "ServedOnThread"]

_S = TypeVar("_S", bound="ServedOnThread")
_DRAIN_S = 1.0  # how long a closing connection may take to send what was not read
_DRAIN_BYTES = 1 << 20
_MAX_LINGERING = 1024
_DIGITS = re.compile(r"[0-9]{1,18}")


class ServedOnThread:
    """An HTTP server on 127.0.0.1 served from a thread of its own; a context manager."""

    _http: ThreadingHTTPServer

    def _serve(self, http: ThreadingHTTPServer, name: str) -> None:
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


class LimitedServer(ThreadingHTTPServer):
    """A threaded HTTP server with at most `max_connections` worker threads (a further
    connection gets a 503 from the accepting thread), `read_timeout` seconds for a
    client to send a whole request, and bodies of at most `max_body_bytes`."""

    daemon_threads = True  # joined by server_close(), after stop() cut their connections
    block_on_close = False
    request_queue_size = 128

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[LimitedHandler],
        *,
        max_connections: int,
        read_timeout: float,
        max_body_bytes: int,
    ) -> None:
        self.max_connections = max_connections
        self.read_timeout = read_timeout
        self.max_body_bytes = max_body_bytes
        self._slots = threading.BoundedSemaphore(max_connections)
        self._active: dict[socket.socket, threading.Thread] = {}
        self._active_lock = threading.Lock()
        self._lingering: list[tuple[socket.socket, float]] = []  # answered, being drained
        self._lingering_lock = threading.Lock()
        super().__init__(address, handler)

    @property
    def active_connections(self) -> int:
        """How many connections worker threads are serving now."""
        with self._active_lock:
            return len(self._active)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            self._refuse_busy(request)
            return
        thread = threading.Thread(target=self._work, args=(request, client_address), daemon=True)
        with self._active_lock:
            self._active[request] = thread
        try:
            thread.start()
        except RuntimeError:  # the process may not start another thread
            self._release(request)
            self._refuse_busy(request)

    def _work(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._release(request)

    def _release(self, request: socket.socket) -> None:
        self._slots.release()
        with self._active_lock:
            self._active.pop(request, None)

    def shutdown_request(self, request: Any) -> None:
        """Half-close and leave the socket to linger (see service_actions): closing over
        unread bytes (a refused body) makes the kernel answer with a reset that can
        destroy the reply before the client reads it."""
        try:
            request.shutdown(socket.SHUT_WR)
            request.setblocking(False)
        except OSError:
            request.close()
            return
        self._linger(request)

    def _linger(self, request: socket.socket) -> None:
        with self._lingering_lock:
            if len(self._lingering) < _MAX_LINGERING:
                self._lingering.append((request, time.monotonic() + _DRAIN_S))
                return
        request.close()

    def _refuse_busy(self, request: socket.socket) -> None:
        """Answer 503 without a worker thread and without blocking the accept loop; the
        socket then lingers (see service_actions) so that the client reads the reply."""
        body = _error_body(
            503,
            f"the server is busy: all {self.max_connections} connections are in use; try again",
            "server_busy",
        )
        head = (
            "HTTP/1.0 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n"
        )
        try:
            request.setblocking(False)
            request.send(head.encode() + body)  # a few hundred bytes: fits an empty buffer
            request.shutdown(socket.SHUT_WR)
        except OSError:
            request.close()
            return
        self._linger(request)

    def service_actions(self) -> None:
        """Between accepts: read and drop what answered clients still send, and close
        their sockets at the end of their stream or after _DRAIN_S, never waiting."""
        with self._lingering_lock:
            lingering, self._lingering = self._lingering, []
        now, kept = time.monotonic(), []
        for request, deadline in lingering:
            try:
                if not request.recv(_DRAIN_BYTES):
                    request.close()
                    continue
            except BlockingIOError:
                pass
            except OSError:
                request.close()
                continue
            if now < deadline:
                kept.append((request, deadline))
            else:
                request.close()
        with self._lingering_lock:
            self._lingering += kept

    def cut_connections(self) -> None:
        """Cut every connection being served, so that its worker ends now (on stop)."""
        with self._active_lock:
            active = list(self._active)
        for request in active:
            with contextlib.suppress(OSError):
                request.shutdown(socket.SHUT_RDWR)

    def server_close(self) -> None:
        """Close the socket and the refused ones, and join every worker."""
        super().server_close()
        with self._active_lock:
            workers = list(self._active.values())
        for worker in workers:
            worker.join()
        with self._lingering_lock:
            lingering, self._lingering = self._lingering, []
        for request, _ in lingering:
            request.close()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A worker's failure is its reply's business (a 500); a connection cut by the
        client or by stop() is nobody's: neither is printed."""


class _DeadlineReader(io.RawIOBase):
    """Reads a socket until one deadline: a client dribbling bytes cannot hold a thread."""

    def __init__(self, sock: socket.socket, deadline: float, timeout: float) -> None:
        self._sock, self._deadline, self._timeout = sock, deadline, timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's read deadline passed")
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv_into(buffer)
        finally:  # each send of the reply may take the whole timeout again
            self._sock.settimeout(self._timeout)


class LimitedHandler(BaseHTTPRequestHandler):
    """Reads a request within the server's read deadline (its line, headers and body
    together); body() refuses one over the server's size before reading it."""

    server: LimitedServer

    def setup(self) -> None:
        super().setup()
        timeout = self.server.read_timeout
        reader = _DeadlineReader(self.connection, time.monotonic() + timeout, timeout)
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
