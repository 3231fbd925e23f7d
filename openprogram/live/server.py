"""`openprogram sessions serve`: a store's sessions and runs in the browser, each DAG
updated live over server-sent events (Session.events() feeds them), on this machine only.

Owns the HTTP server (openprogram.serving's LimitedServer: bounded threads, one read
deadline per request), who may use it (Host, the token of this start as `?token=` or a
bearer header on every request, a browser Origin only its own) and the bounds of its
streams (at most `max_streams` at once, each ended after `idle_s` without an event; the
browser reconnects with Last-Event-ID). page.py writes the HTML. Start at LiveServer.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import secrets
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from openprogram.core import _secrets
from openprogram.errors import OpenProgramError, UsageError
from openprogram.live import page
from openprogram.serving import Access, DeadlineReader, LimitedServer, is_loopback

if TYPE_CHECKING:
    from openprogram.store.base import Store

__all__ = ["LiveServer"]

_log = logging.getLogger("openprogram.live")

_SEND_TIMEOUT_S = 10.0  # a client that stops reading is dropped after this
_HEARTBEAT_S = 15.0  # a comment line: proxies keep the stream, a gone client is noticed


class _Refusal(Exception):
    def __init__(self, status: HTTPStatus, kind: str, message: str) -> None:
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


class LiveServer(LimitedServer):
    """Serves the sessions of the store `spec` (a SQLite file or postgresql:// URL) at
    http://`host`:`port`/ (port 0: any free one). `url` carries the token; `stop()` ends
    the streams and closes. Only a loopback `host` is allowed: the pages show what the
    runs recorded."""

    join_workers = False

    def __init__(
        self,
        spec: str,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        token: str | None = None,
        max_connections: int = 32,
        max_streams: int = 8,
        idle_s: float = 300.0,
        read_timeout: float = 10.0,
    ) -> None:
        if not is_loopback(host):
            raise UsageError(
                f"sessions serve binds a loopback address only (127.0.0.1, ::1), not {host!r}: "
                "the pages show what the runs recorded; reach it from elsewhere over ssh -L"
            )
        if max_streams >= max_connections:
            raise UsageError(
                f"max_streams={max_streams} must be below max_connections={max_connections}: "
                "pages must still load while every stream is open"
            )
        from openprogram.store import open_store

        store, _ = open_store(spec)  # fails here, with its message, on a bad spec
        if store is None:
            raise UsageError("an in-memory store has no sessions to serve; pass a file or URL")
        self.store_url = store.url
        store.close()
        self.spec = spec
        self.token = token or secrets.token_urlsafe(32)
        self.idle_s = idle_s
        self.max_streams = max_streams
        self._streams = threading.BoundedSemaphore(max_streams)
        self.stopping = threading.Event()
        super().__init__(
            (host, port), _Handler, max_connections=max_connections, read_timeout=read_timeout
        )
        self.access = Access(host, self.server_port, self.token)
        shown = f"[{host}]" if ":" in host else host
        self.origin = f"http://{shown}:{self.server_port}"

    @property
    def url(self) -> str:
        """The address to open, with the token."""
        return f"{self.origin}/?token={self.token}"

    def open_store(self) -> Store:
        """The store, opened for one request (a connection of its own: requests run on
        threads of their own)."""
        from openprogram.store import open_store

        store, _ = open_store(self.spec)
        assert store is not None  # checked in __init__
        return store

    def take_stream(self) -> bool:
        """Take one of the `max_streams` stream slots; False when all are taken."""
        return self._streams.acquire(blocking=False)

    def release_stream(self) -> None:
        """Give back a slot take_stream() took."""
        self._streams.release()

    def start(self) -> LiveServer:
        """Serve on a thread of its own (serve_forever otherwise)."""
        threading.Thread(target=self.serve_forever, name="openprogram-live", daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        self.shutdown()
        self.cut_connections()
        self.server_close()

    def busy_reply(self) -> tuple[bytes, str]:
        message = f"the server is busy: all {self.max_connections} connections are in use"
        return page.error_page(503, message + "; try again").encode(), "text/html; charset=utf-8"

    def handle_error(self, request: object, client_address: object) -> None:
        host = client_address[0] if isinstance(client_address, tuple) else client_address
        _log.exception("sessions serve failed on a request from %s", host)


class _Handler(BaseHTTPRequestHandler):
    server: LiveServer
    server_version = "openprogram-live/1"
    sys_version = ""

    def setup(self) -> None:
        self.connection = self.request
        deadline = time.monotonic() + self.server.read_timeout
        self.rfile = io.BufferedReader(DeadlineReader(self.connection, deadline))
        self.wfile = io.BytesIO()
        self._started = False

    def handle(self) -> None:
        self.close_connection = True  # HTTP/1.0: one request per connection
        try:
            self.raw_requestline = self.rfile.readline(8193)
            if not self.raw_requestline:
                return
            if len(self.raw_requestline) > 8192:
                self._reply_error(HTTPStatus.REQUEST_URI_TOO_LONG, "the request line is too long")
                return
            if not self.parse_request():
                return
            self._route()
        except TimeoutError:
            if not self._started:
                self._reply_error(HTTPStatus.REQUEST_TIMEOUT, "the request took too long to send")
        except _Refusal as refusal:
            _log.warning("refused %s %s: %s", self.command, self._path_only(), refusal.message)
            self._reply_error(refusal.status, refusal.message)
        except OSError:  # the client went away
            return

    # -- who may ask -----------------------------------------------------------------------
    def _check(self, query: dict[str, list[str]]) -> None:
        hosts = self.headers.get_all("Host") or []
        if len(hosts) != 1 or not self.server.access.host_allowed(hosts[0]):
            raise _Refusal(
                HTTPStatus.MISDIRECTED_REQUEST, "wrong_host",
                "the Host header does not name this server; open the URL it printed",
            )  # fmt: skip
        origins = self.headers.get_all("Origin") or []
        if origins and (len(origins) != 1 or not self._own_origin(origins[0])):
            raise _Refusal(
                HTTPStatus.FORBIDDEN, "browser_refused",
                "requests from pages of other sites are refused",
            )  # fmt: skip
        site = self.headers.get("Sec-Fetch-Site")
        if site is not None and site not in ("same-origin", "none"):
            raise _Refusal(
                HTTPStatus.FORBIDDEN, "browser_refused",
                f"requests from pages of other sites are refused (Sec-Fetch-Site: {site[:40]})",
            )  # fmt: skip
        given = query.get("token", [])
        authorization = self.headers.get_all("Authorization") or []
        if len(given) == 1 and len(authorization) == 0:
            ok = self.server.access.token_given(b"Bearer " + given[0].encode("utf-8", "replace"))
        elif len(authorization) == 1 and not given:
            ok = self.server.access.token_given(authorization[0].encode("latin-1", "replace"))
        else:
            ok = False
        if not ok:
            raise _Refusal(
                HTTPStatus.UNAUTHORIZED, "unauthorized",
                "this server needs its token: open the URL `openprogram sessions serve` "
                "printed (…/?token=…); a restarted server has a new one",
            )  # fmt: skip

    def _own_origin(self, origin: str) -> bool:
        parts = urlsplit(origin.strip())
        return parts.scheme == "http" and self.server.access.host_allowed(parts.netloc)

    # -- routes ----------------------------------------------------------------------------
    def _route(self) -> None:
        if self.command not in ("GET", "HEAD"):
            raise _Refusal(HTTPStatus.METHOD_NOT_ALLOWED, "method", "only GET is served")
        if (self.headers.get("Content-Length") or "0").strip() != "0":
            raise _Refusal(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body", "a GET has no body")
        parts = urlsplit(self.path)
        query = parse_qs(parts.query, keep_blank_values=True, max_num_fields=8)
        self._check(query)
        token = self.server.token
        path = parts.path
        if path == "/":
            self._send(HTTPStatus.OK, "text/html; charset=utf-8", self._listing(token))
            return
        if path.startswith("/session/"):
            rest = path[len("/session/") :]
            session_id, _, what = rest.partition("/")
            session_id = unquote(session_id)
            if what == "":
                self._send(HTTPStatus.OK, "text/html; charset=utf-8", self._session(session_id))
                return
            if what == "view":
                self._send(HTTPStatus.OK, "text/html; charset=utf-8", self._view(session_id)[0])
                return
            if what == "events":
                self._events(session_id, _since(query, self.headers.get("Last-Event-ID")))
                return
        raise _Refusal(HTTPStatus.NOT_FOUND, "not_found", f"nothing at {quote(path[:200])}")

    def _listing(self, token: str) -> str:
        store = self.server.open_store()
        try:
            infos = store.list_sessions()
            statuses = _statuses(store, [info.id for info in infos[-page.LISTED :]])
        finally:
            store.close()
        runs: dict[str, Any] = {}
        try:
            from openprogram.runs import RunQueue

            with RunQueue(self.server.spec) as queue:
                runs = {r.id: r for r in queue.list_runs()}
        except (OpenProgramError, ImportError):
            pass  # no run queue in this store: sessions only
        return page.listing(self.server.store_url, infos, statuses, runs, token)

    def _view(self, session_id: str) -> tuple[str, int, int]:
        """The DAG view fragment of a session, its last seq and node count."""
        from openprogram.display.html import dag_html
        from openprogram.session.session import Session

        store = self.server.open_store()
        try:
            if store.session(session_id) is None:
                raise _Refusal(HTTPStatus.NOT_FOUND, "not_found", "no such session in the store")
            session = Session.open(store, session_id)
            dag = session.dag
            last = max((n.seq for n in dag), default=0)
            view = dag_html(dag, title=f"session {session_id}")
        finally:
            store.close()
        return _secrets.scrub(view, patterns=False), last, len(dag)

    def _session(self, session_id: str) -> str:
        view, last, _ = self._view(session_id)
        return page.session_page(session_id, view, last, self.server.token)

    # -- the stream ------------------------------------------------------------------------
    def _events(self, session_id: str, since: int) -> None:
        from openprogram.store.events import Follow, NodeEvents

        if not self.server.take_stream():
            raise _Refusal(
                HTTPStatus.SERVICE_UNAVAILABLE, "busy",
                f"all {self.server.max_streams} live streams are open; close a page",
            )  # fmt: skip
        try:
            store = self.server.open_store()
            try:
                if store.session(session_id) is None:
                    raise _Refusal(HTTPStatus.NOT_FOUND, "not_found", "no such session")
                with NodeEvents(Follow(store, session_id, since)) as events:
                    self._stream(events)
            finally:
                store.close()
        finally:
            self.server.release_stream()

    def _stream(self, events: Any) -> None:
        head = (
            "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
            "Cache-Control: no-store\r\nX-Accel-Buffering: no\r\n"
            f"{_HEADERS}\r\n"
        )
        self.connection.settimeout(_SEND_TIMEOUT_S)
        # each event goes out at once, never held back by Nagle's algorithm until the
        # client acknowledges the one before (which it may delay)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._started = True
        self.connection.sendall(head.encode() + b"retry: 1000\n\n")
        last_event = last_write = time.monotonic()
        while not self.server.stopping.is_set():
            nodes = events.poll(1.0)
            now = time.monotonic()
            if nodes:
                chunk = "".join(_event(node) for node in nodes)
                self.connection.sendall(chunk.encode("utf-8", "replace"))
                last_event = last_write = now
            elif now - last_write >= _HEARTBEAT_S:
                self.connection.sendall(b": keepalive\n\n")
                last_write = now
            if now - last_event >= self.server.idle_s:
                return  # idle: the browser reconnects with Last-Event-ID when it still looks

    # -- replies ---------------------------------------------------------------------------
    def _send(self, status: HTTPStatus, content_type: str, body: str) -> None:
        data = body.encode("utf-8", "replace")
        head = (
            f"HTTP/1.0 {status.value} {status.phrase}\r\nContent-Type: {content_type}\r\n"
            f"Content-Length: {len(data)}\r\nCache-Control: no-store\r\n{_HEADERS}\r\n"
        )
        self.connection.settimeout(_SEND_TIMEOUT_S)
        self._started = True
        self.connection.sendall(head.encode() + (b"" if self.command == "HEAD" else data))

    def _reply_error(self, status: HTTPStatus, message: str) -> None:
        if self._started:
            return
        extra = 'WWW-Authenticate: Bearer realm="openprogram"\r\n' if status == 401 else ""
        data = page.error_page(status.value, message).encode()
        head = (
            f"HTTP/1.0 {status.value} {status.phrase}\r\nContent-Type: text/html; charset=utf-8"
            f"\r\nContent-Length: {len(data)}\r\n{extra}{_HEADERS}\r\n"
        )
        with contextlib.suppress(OSError):
            self.connection.settimeout(_SEND_TIMEOUT_S)
            self.connection.sendall(head.encode() + data)
        self._started = True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        self._reply_error(HTTPStatus(code), message or HTTPStatus(code).phrase)

    def _path_only(self) -> str:
        return quote(urlsplit(getattr(self, "path", "") or "").path[:200])  # never the token

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: request lines carry the token."""


_HEADERS = (
    "Referrer-Policy: no-referrer\r\nX-Content-Type-Options: nosniff\r\n"
    "Content-Security-Policy: default-src 'none'; script-src 'unsafe-inline'; "
    "style-src 'unsafe-inline'; img-src data:; connect-src 'self'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'\r\nConnection: close\r\n"
)


def _since(query: dict[str, list[str]], last_event_id: str | None) -> int:
    """The seq a stream starts after: the browser's Last-Event-ID, else `?since=`."""
    for text in (last_event_id, *query.get("since", [])[:1]):
        if text is not None and text.strip().isdigit() and len(text.strip()) < 19:
            return int(text)
    return 0


def _event(node: Any) -> str:
    """One node as an SSE message: its seq as the event id, what the page shows as data."""
    data = {
        "seq": node.seq,
        "id": node.id,
        "name": node.name,
        "kind": node.kind,
        "status": node.status,
        "parent": node.parent,
        "started_at": node.started_at,
        "ended_at": node.ended_at,
        "sent_at": time.time(),
    }
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return f"id: {node.seq}\nevent: node\ndata: {text}\n\n"


def _statuses(store: Any, ids: list[str]) -> dict[str, dict[str, int]]:
    """How many nodes of each session of `ids` are in each status: one counting query on
    the SQL stores (their status_counts()), the rows read otherwise."""
    counted = getattr(store, "status_counts", None)
    if callable(counted):
        return counted(ids)  # type: ignore[no-any-return]
    counts: dict[str, dict[str, int]] = {id: {} for id in ids}
    for id in ids:
        for row in store.rows(id):
            counts[id][row.status] = counts[id].get(row.status, 0) + 1
    return counts
