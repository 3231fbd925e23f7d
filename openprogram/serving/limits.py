"""What one client may hold of a local http.server: at most `max_connections` worker
threads (a further connection gets a 503 from the accepting thread, which never blocks),
one read deadline for a whole request (a client dribbling bytes holds nothing), and
answered sockets that linger, half-closed, until the client has read the reply (closing
over unread bytes makes the kernel send a reset that can destroy it). Start at
LimitedServer.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from http.server import HTTPServer
from socketserver import BaseRequestHandler, TCPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

__all__ = ["DeadlineReader", "LimitedServer"]

_DRAIN_S = 1.0  # how long a closed connection may take to send what was not read
_DRAIN_BYTES = 1 << 20
_MAX_LINGERING = 1024


class LimitedServer(HTTPServer):
    """An HTTP server serving each connection on a worker thread of its own, at most
    `max_connections` at once; `read_timeout` is the handlers' deadline for a whole
    request (see DeadlineReader). Subclasses say what a busy refusal reads
    (busy_reply) and whether a worker's failure is logged (handle_error)."""

    daemon_threads = True
    request_queue_size = 128
    join_workers = True
    """Whether server_close() waits for the workers (cut their connections first)."""

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseRequestHandler],
        *,
        max_connections: int,
        read_timeout: float,
    ) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.max_connections = max_connections
        self.read_timeout = read_timeout
        self._slots = threading.BoundedSemaphore(max_connections)
        self._active: dict[socket.socket, threading.Thread] = {}
        self._active_lock = threading.Lock()
        self._lingering: list[tuple[socket.socket, float]] = []  # answered, being drained
        self._lingering_lock = threading.Lock()
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind asks DNS for the host's FQDN, which nothing here needs
        TCPServer.server_bind(self)
        self.server_name, self.server_port = str(self.server_address[0]), self.server_address[1]

    def busy_reply(self) -> tuple[bytes, str]:
        """The body and Content-Type of the 503 a connection beyond the limit gets."""
        message = f"the server is busy: all {self.max_connections} connections are in use"
        return f'{{"error": "{message}; try again", "kind": "busy"}}'.encode(), "application/json"

    @property
    def active_connections(self) -> int:
        """How many connections worker threads are serving now."""
        with self._active_lock:
            return len(self._active)

    def process_request(self, request: Any, client_address: object) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused_busy(client_address)
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

    def refused_busy(self, client_address: object) -> None:
        """Called for each connection answered 503 (to log it, say); nothing by default."""

    def _work(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            self._release(request)

    def _release(self, request: socket.socket) -> None:
        # the slot first: once active_connections reads 0, every slot is free
        self._slots.release()
        with self._active_lock:
            self._active.pop(request, None)

    def shutdown_request(self, request: Any) -> None:
        """Half-close and leave the socket to linger (see service_actions)."""
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
        socket then lingers so that the client reads the reply."""
        body, content_type = self.busy_reply()
        head = (
            f"HTTP/1.0 503 Service Unavailable\r\nContent-Type: {content_type}\r\n"
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
                if not request.recv(_DRAIN_BYTES):  # end of stream: the client is done
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
        """Close the socket and the lingering ones, and join every worker unless
        join_workers is off (cut their connections first for a quick stop)."""
        super().server_close()
        with self._active_lock:
            workers = list(self._active.values()) if self.join_workers else []
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join()
        with self._lingering_lock:
            lingering, self._lingering = self._lingering, []
        for request, _ in lingering:
            request.close()

    def handle_error(self, request: object, client_address: object) -> None:
        """A worker's failure is its reply's business; a connection cut by the client or
        by stop() is nobody's: neither is printed."""


class DeadlineReader(io.RawIOBase):
    """Reads a socket until one deadline: a client dribbling bytes cannot hold a thread.
    With `timeout`, the socket's timeout is put back after each read (so that each send
    of the reply may take that long again)."""

    def __init__(self, sock: socket.socket, deadline: float, timeout: float | None = None) -> None:
        self._sock, self._deadline, self._timeout = sock, deadline, timeout

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's read deadline passed")
        self._sock.settimeout(remaining)
        try:
            return self._sock.recv_into(buffer)
        finally:
            if self._timeout is not None:
                self._sock.settimeout(self._timeout)
