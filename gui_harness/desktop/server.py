"""serve_desktop: expose any Desktop over HTTP so a RemoteDesktop can drive it from afar.

Owns the wire protocol (version 1): `GET /v1/size`, `GET /v1/screenshot` (PNG) and
`POST /v1/execute` with `{"version": 1, "action": {...}}`. Every action is validated
against the schema and checked by a Policy before it reaches the desktop. The client is
gui_harness.desktop.remote.
"""

from __future__ import annotations

import io
import ipaddress
import json
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from pydantic import ValidationError

from gui_harness.actions import Policy, action_adapter
from gui_harness.desktop.base import Desktop
from gui_harness.errors import ActionRejected
from openprogram.errors import UsageError

__all__ = ["PROTOCOL_VERSION", "DesktopServer", "serve_desktop"]

PROTOCOL_VERSION = 1
"""The version of the wire protocol this server and RemoteDesktop speak."""

_MAX_BODY = 1 << 20


class DesktopServer:
    """A running desktop server: use as a context manager, or call stop() when done."""

    def __init__(self, desktop: Desktop, host: str, port: int, policy: Policy) -> None:
        self.desktop = desktop
        self.policy = policy
        self._lock = threading.Lock()
        server_class = _IPv6Server if ":" in host else _Server
        self._http = server_class((host, port), _Handler)
        self._http.owner = self
        self.host = host
        self.port: int = self._http.server_address[1]
        # A short poll interval makes stop() return in milliseconds instead of 0.5 s.
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"desktop-server:{self.port}",
            daemon=True,
        )
        self._thread.start()

    @property
    def url(self) -> str:
        """Base URL to give RemoteDesktop, e.g. "http://127.0.0.1:8765"."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        """Stop serving and close the socket; safe to call twice."""
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join()
        self._http.server_close()

    def __enter__(self) -> DesktopServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"DesktopServer(url={self.url!r}, desktop={self.desktop!r})"


def serve_desktop(
    desktop: Desktop,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    policy: Policy | None = None,
    allow_remote: bool = False,
) -> DesktopServer:
    """Serve `desktop` over HTTP in a background thread; port 0 picks a free port.

    Binding anything but a loopback address needs `allow_remote=True`: whoever reaches
    the port can click and type on the desktop. `policy` defaults to Policy().
    """
    if not allow_remote and not _is_loopback(host):
        raise UsageError(
            f"host={host!r} is not a loopback address; anyone who reaches it could drive"
            " the desktop. Use host='127.0.0.1', or pass allow_remote=True on purpose"
        )
    return DesktopServer(desktop, host, port, policy or Policy())


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64
    owner: DesktopServer


class _IPv6Server(_Server):
    address_family = socket.AF_INET6


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    server_version = "gui-harness-desktop/1"

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: a test run or an agent loop should not print request lines."""

    def do_GET(self) -> None:
        owner = self.server.owner
        if self.path == "/v1/size":
            width, height = owner.desktop.size
            self._reply_json(HTTPStatus.OK, {"width": width, "height": height})
        elif self.path == "/v1/screenshot":
            try:
                with owner._lock:
                    image = owner.desktop.screenshot()
            except Exception as exc:
                message = f"the desktop failed to take a screenshot: {type(exc).__name__}: {exc}"
                self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message)
                return
            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            self._reply(HTTPStatus.OK, buffer.getvalue(), "image/png")
        else:
            self._error(HTTPStatus.NOT_FOUND, "not_found", f"no endpoint GET {self.path!r}")

    def do_POST(self) -> None:
        if self.path != "/v1/execute":
            self._error(HTTPStatus.NOT_FOUND, "not_found", f"no endpoint POST {self.path!r}")
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self._error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "invalid_request", "body too large")
            return
        try:
            body = json.loads(self.rfile.read(length))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self._error(HTTPStatus.BAD_REQUEST, "invalid_request", f"body is not JSON: {exc}")
            return
        if not isinstance(body, dict) or "version" not in body or "action" not in body:
            message = 'send {"version": 1, "action": {...}}'
            self._error(HTTPStatus.BAD_REQUEST, "invalid_request", message)
            return
        version = body["version"]
        if type(version) is not int or version != PROTOCOL_VERSION:
            message = (
                f"protocol version {version!r} is not supported; this server speaks"
                f" version {PROTOCOL_VERSION}"
            )
            self._error(HTTPStatus.CONFLICT, "unsupported_version", message)
            return
        self._execute(body["action"])

    def _execute(self, raw_action: Any) -> None:
        owner = self.server.owner
        try:
            action = action_adapter.validate_python(raw_action)
        except ValidationError as exc:
            message = f"invalid action {raw_action!r}: {_summary(exc)}"
            self._error(HTTPStatus.BAD_REQUEST, "invalid_action", message)
            return
        try:
            with owner._lock:
                owner.policy.check(action, owner.desktop.size)
                owner.desktop.execute(action)
        except ActionRejected as exc:
            self._error(HTTPStatus.BAD_REQUEST, "action_rejected", exc.reason)
            return
        except Exception as exc:
            message = f"the desktop failed: {type(exc).__name__}: {exc}"
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message)
            return
        self._reply_json(HTTPStatus.OK, {"ok": True})

    def _error(self, status: HTTPStatus, kind: str, message: str) -> None:
        payload: dict[str, Any] = {"error": message, "kind": kind}
        if kind == "unsupported_version":
            payload["supported"] = [PROTOCOL_VERSION]
        self._reply_json(status, payload)

    def _reply_json(self, status: HTTPStatus, payload: dict[str, Any]) -> None:
        self._reply(status, json.dumps(payload).encode(), "application/json")

    def _reply(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def _summary(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(map(str, e['loc'])) or 'action'}: {e['msg'].removeprefix('Value error, ')}"
        for e in exc.errors()
    )
