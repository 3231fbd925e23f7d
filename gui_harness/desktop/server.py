"""serve_desktop: expose any Desktop over HTTP so a RemoteDesktop can drive it from afar.

Owns the wire protocol (version 1): `GET /v1/size`, `GET /v1/screenshot` (PNG),
`POST /v1/grab` with `{"version": 1, "box": [x, y, width, height]}` (PNG of that part of
the screen: what a client compares before it clicks), `POST /v1/execute` with
`{"version": 1, "action": {...}}` and `POST /v1/settle` with `{"version": 1, "timeout":
seconds}` (the screen settles here, from X events where the desktop has them, so a
client does not poll screenshots), each needing the server's
token; every action is validated and checked by a Policy before it reaches the desktop.
Who may connect and the request limits live in _http.py; the client is remote.py.

Built on the standard library's http.server rather than a server library: the server is
meant for loopback, carries five endpoints, and must stay importable without extras.
What http.server lacks for a hostile neighbour (a total read deadline, bounded workers,
body and depth limits, JSON refusals, token/Host/Origin checks) is in _http.py, and each
case is tested against a real socket in tests/gui_harness/desktop/test_server.py.
"""

from __future__ import annotations

import io
import math
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from typing import Any

from pydantic import ValidationError

from gui_harness.actions import Done, Fail, Policy, Wait, action_adapter
from gui_harness.desktop._http import (
    Gate,
    GuardedHandler,
    GuardedServer,
    HttpRefusal,
    json_body,
)
from gui_harness.desktop.base import Desktop
from gui_harness.desktop.settle import compare_frames
from gui_harness.errors import ActionRejected, InvalidAction
from openprogram.echo import cut, echo
from openprogram.errors import UsageError
from openprogram.serving import is_loopback

__all__ = ["PROTOCOL_VERSION", "DesktopServer", "serve_desktop"]

PROTOCOL_VERSION = 1
"""The version of the wire protocol this server and RemoteDesktop speak."""

_MAX_BODY = 256 * 1024  # a 10 000-character `type` escapes to at most 60 KB
_ENDPOINTS = {
    "/v1/size": "GET",
    "/v1/screenshot": "GET",
    "/v1/grab": "POST",
    "/v1/execute": "POST",
    "/v1/settle": "POST",
}
_SETTLE_FRAMES = 3  # when the desktop has no settle of its own: as gui_agent compares
_MIN_TOKEN = 16


class DesktopServer:
    """A running desktop server: use as a context manager, or call stop() when done.

    `url` and `token` are what a client needs: `RemoteDesktop(server.url,
    token=server.token)`. Actions run one at a time on one thread; screenshots on another,
    so a slow action never holds a screenshot back (the desktop must allow a capture
    during an action, as X11Desktop and VirtualDesktop do); `wait` runs on neither. A
    settle waits at most `max_wait_ms`: on the actions' thread for a desktop that
    reports its own changes (wait_settled), else comparing screenshots on the other.
    """

    def __init__(
        self,
        desktop: Desktop,
        host: str,
        port: int,
        *,
        policy: Policy,
        token: str,
        max_connections: int,
        read_timeout: float,
        max_wait_ms: int,
    ) -> None:
        self.token = token
        self._http = _Server(
            (host, port), _Handler, max_connections=max_connections, read_timeout=read_timeout
        )
        self.host = host
        self.port: int = self._http.server_address[1]
        self._served = _Served(desktop, policy, max_wait_ms, Gate(host, self.port, token))
        self._http.served = self._served
        # A short poll interval makes stop() return in milliseconds instead of 0.5 s.
        self._thread = threading.Thread(
            target=self._http.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"desktop-server:{self.port}",
            daemon=True,
        )
        self._thread.start()

    @property
    def desktop(self) -> Desktop:
        """The desktop served."""
        return self._served.desktop

    @property
    def policy(self) -> Policy:
        """What every action is checked by before it reaches the desktop."""
        return self._served.policy

    @property
    def max_wait_ms(self) -> int:
        """The longest `wait` (and settle) this server performs, in milliseconds."""
        return self._served.max_wait_ms

    @property
    def url(self) -> str:
        """Base URL to give RemoteDesktop, e.g. "http://127.0.0.1:8765"."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def active_connections(self) -> int:
        """How many connections are being served right now (at most max_connections)."""
        return self._http.active_connections

    def stop(self) -> None:
        """Stop serving, cut open connections and close the socket; safe to call twice."""
        if self._thread.is_alive():
            self._http.shutdown()
            self._thread.join()
        self._http.cut_connections()
        self._http.server_close()
        self._served.shutdown()

    def __enter__(self) -> DesktopServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:  # never the token
        return f"DesktopServer(url={self.url!r}, desktop={self.desktop!r})"


def serve_desktop(
    desktop: Desktop,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    policy: Policy | None = None,
    allow_remote: bool = False,
    token: str | None = None,
    max_connections: int = 16,
    read_timeout: float = 10.0,
    max_wait_ms: int = 5_000,
) -> DesktopServer:
    """Serve `desktop` over HTTP in a background thread; port 0 picks a free port.

    Every request must carry `token` (default: a fresh random secret, in the returned
    server's `.token`); give your own, of at least 16 characters, to share it ahead of
    time. Binding anything but a loopback address needs `allow_remote=True`. `policy`
    defaults to Policy(). A client gets `read_timeout` seconds to send a whole request;
    beyond `max_connections` at once, connections are answered 503; a `wait` over
    `max_wait_ms` is refused.
    """
    if not allow_remote and not is_loopback(host):
        raise UsageError(
            f"host={host!r} is not a loopback address; anyone who reaches it could drive"
            " the desktop. Use host='127.0.0.1', or pass allow_remote=True on purpose"
        )
    if token is None:
        token = secrets.token_urlsafe(32)
    elif not (isinstance(token, str) and len(token) >= _MIN_TOKEN and _header_safe(token)):
        shown = token if not isinstance(token, str) else f"{len(token)} characters"
        raise UsageError(
            f"token must be at least {_MIN_TOKEN} printable ASCII characters without spaces"
            f" (got {shown!r}); leave it out to get a random one"
        )
    if type(max_connections) is not int or max_connections < 1:
        raise UsageError(f"max_connections={max_connections!r} must be a whole number >= 1")
    if not (isinstance(read_timeout, (int, float)) and math.isfinite(read_timeout)) or (
        read_timeout <= 0
    ):
        raise UsageError(f"read_timeout={read_timeout!r} must be a positive number of seconds")
    if type(max_wait_ms) is not int or not 0 <= max_wait_ms <= 60_000:
        raise UsageError(f"max_wait_ms={max_wait_ms!r} must be a whole number in 0..60000")
    return DesktopServer(
        desktop,
        host,
        port,
        policy=policy or Policy(),
        token=token,
        max_connections=max_connections,
        read_timeout=float(read_timeout),
        max_wait_ms=max_wait_ms,
    )


class _Served:
    """What a request does to a served desktop: who may ask (`gate`), and the desktop's
    screenshots, settles and actions, each on its thread (the handler's only way to it)."""

    def __init__(self, desktop: Desktop, policy: Policy, max_wait_ms: int, gate: Gate) -> None:
        self.desktop = desktop
        self.policy = policy
        self.max_wait_ms = max_wait_ms
        self.gate = gate
        # one thread each: a backend with per-thread state (mss keeps an X connection per
        # thread) sees two threads in all, not one per request
        self._screen = ThreadPoolExecutor(1, thread_name_prefix="desktop-screen")
        self._input = ThreadPoolExecutor(1, thread_name_prefix="desktop-input")

    def shutdown(self) -> None:
        """Stop both threads; what waits for them is cancelled."""
        self._screen.shutdown(wait=False, cancel_futures=True)
        self._input.shutdown(wait=False, cancel_futures=True)

    def screenshot(self) -> Any:
        """The whole screen, taken on the screen thread."""
        return self._screen.submit(self.desktop.screenshot).result()

    def screenshot_png(self, box: tuple[int, int, int, int] | None = None) -> bytes:
        """The screen as PNG, or its part `box` (through the desktop's own grab where
        it has one, else cut from a screenshot)."""
        grab = getattr(self.desktop, "grab", None)
        if box is None:
            image = self._screen.submit(self.desktop.screenshot).result()
        elif callable(grab):
            image = self._screen.submit(grab, box).result()
        else:
            x, y, w, h = box
            whole = self._screen.submit(self.desktop.screenshot).result()
            image = whole.crop((x, y, x + w, y + h))
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()

    def settle(self, timeout: float) -> bool:
        limit = min(timeout, self.max_wait_ms / 1000)
        settled = getattr(self.desktop, "wait_settled", None)
        if callable(settled):  # X DAMAGE events: after the action sent before, no polling
            return bool(self._input.submit(settled, timeout=limit).result())
        # compare_frames takes only screenshots of it, on the screen thread
        return compare_frames(self, timeout=limit, frames=_SETTLE_FRAMES)  # type: ignore[arg-type]

    def perform(self, action: Any) -> None:
        if isinstance(action, Wait) and action.ms > self.max_wait_ms:
            raise ActionRejected(
                f"wait of {action.ms} ms is over this server's {self.max_wait_ms} ms limit;"
                " wait in shorter steps (RemoteDesktop waits on the client side)",
                action=action,
            )
        self.policy.check(action, self.desktop.size, held=getattr(self.desktop, "held_keys", ()))
        if isinstance(action, (Wait, Done, Fail)):  # nothing on the screen changes
            self.desktop.execute(action)
        else:
            self._input.submit(self.desktop.execute, action).result()


def _header_safe(token: str) -> bool:
    return all(33 <= ord(character) <= 126 for character in token)


class _Server(GuardedServer):
    served: _Served


class _Handler(GuardedHandler):
    server: _Server

    def route(self) -> None:
        owner = self.server.served
        owner.gate.check(self.headers)
        method = _ENDPOINTS.get(self.path)
        if method is None:
            message = f"no endpoint {echo(self.command)} {echo(self.path)}"
            raise HttpRefusal(HTTPStatus.NOT_FOUND, "not_found", message)
        if method != self.command:
            raise HttpRefusal(
                HTTPStatus.METHOD_NOT_ALLOWED,
                "invalid_request",
                f"{self.path} takes {method}, not {echo(self.command)}",
            )
        if self.path == "/v1/size":
            try:
                width, height = owner.desktop.size
            except Exception as exc:
                message = f"the desktop failed to report its size: {_failure(exc)}"
                raise HttpRefusal(
                    HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message
                ) from exc
            self.reply_json(HTTPStatus.OK, {"width": width, "height": height})
        elif self.path == "/v1/screenshot":
            try:
                png = owner.screenshot_png()
            except Exception as exc:
                message = f"the desktop failed to take a screenshot: {_failure(exc)}"
                raise HttpRefusal(
                    HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message
                ) from exc
            self.reply(HTTPStatus.OK, png, "image/png")
        elif self.path == "/v1/settle":
            self._settle(json_body(self.headers, self.rfile, _MAX_BODY))
        elif self.path == "/v1/grab":
            self._grab(json_body(self.headers, self.rfile, _MAX_BODY))
        else:
            self._execute(json_body(self.headers, self.rfile, _MAX_BODY))

    def _grab(self, body: Any) -> None:
        if not self._versioned(body, "box", '{"version": 1, "box": [x, y, width, height]}'):
            return
        owner = self.server.served
        box = body["box"]
        width, height = owner.desktop.size
        if not (
            isinstance(box, list)
            and len(box) == 4
            and all(type(v) is int for v in box)
            and 0 <= box[0] < width
            and 0 <= box[1] < height
            and 0 < box[2] <= width - box[0]
            and 0 < box[3] <= height - box[1]
        ):
            raise HttpRefusal(
                HTTPStatus.BAD_REQUEST,
                "invalid_request",
                f"box={echo(box)} is not [x, y, width, height] of whole pixels inside the "
                f"{width}x{height} screen",
            )
        try:
            png = owner.screenshot_png((box[0], box[1], box[2], box[3]))
        except Exception as exc:
            message = f"the desktop failed to take a screenshot: {_failure(exc)}"
            raise HttpRefusal(HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message) from exc
        self.reply(HTTPStatus.OK, png, "image/png")

    def _settle(self, body: Any) -> None:
        if not self._versioned(body, "timeout", '{"version": 1, "timeout": 3.0}'):
            return
        timeout = body["timeout"]
        if not (type(timeout) in (int, float) and math.isfinite(timeout) and timeout >= 0):
            raise HttpRefusal(
                HTTPStatus.BAD_REQUEST,
                "invalid_request",
                f"timeout={echo(timeout)} is not a number of seconds >= 0",
            )
        try:
            settled = self.server.served.settle(float(timeout))
        except Exception as exc:
            message = f"the desktop failed to settle: {_failure(exc)}"
            raise HttpRefusal(HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message) from exc
        self.reply_json(HTTPStatus.OK, {"settled": bool(settled)})

    def _versioned(self, body: Any, field: str, example: str) -> bool:
        """Whether `body` is a dict of this protocol version with `field`; refuses it
        (400, or 409 for another version) otherwise."""
        if not isinstance(body, dict) or "version" not in body or field not in body:
            raise HttpRefusal(HTTPStatus.BAD_REQUEST, "invalid_request", f"send {example}")
        version = body["version"]
        if type(version) is not int or version != PROTOCOL_VERSION:
            message = (
                f"protocol version {echo(version)} is not supported; this server speaks"
                f" version {PROTOCOL_VERSION}"
            )
            payload = {"error": message, "kind": "unsupported_version"}
            self.reply_json(HTTPStatus.CONFLICT, {**payload, "supported": [PROTOCOL_VERSION]})
            return False
        return True

    def _execute(self, body: Any) -> None:
        if not self._versioned(body, "action", '{"version": 1, "action": {...}}'):
            return
        raw_action = body["action"]
        try:
            action = action_adapter.validate_python(raw_action)
        except ValidationError as exc:
            message = f"invalid action {echo(raw_action)}: {_summary(exc)}"
            raise HttpRefusal(HTTPStatus.BAD_REQUEST, "invalid_action", message) from None
        try:
            self.server.served.perform(action)
        except ActionRejected as exc:
            raise HttpRefusal(HTTPStatus.BAD_REQUEST, "action_rejected", cut(exc.reason)) from None
        except InvalidAction as exc:
            raise HttpRefusal(HTTPStatus.BAD_REQUEST, "invalid_action", cut(str(exc))) from None
        except Exception as exc:
            message = f"the desktop failed: {_failure(exc)}"
            raise HttpRefusal(HTTPStatus.INTERNAL_SERVER_ERROR, "desktop_error", message) from exc
        self.reply_json(HTTPStatus.OK, {"ok": True})


def _failure(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {cut(str(exc))}"


def _summary(exc: ValidationError) -> str:
    """The first problems of an invalid action, each cut (a 30 000-point path has as
    many errors, a 40 000-character key name is quoted in one)."""
    problems = [
        f"{cut('.'.join(map(str, e['loc'])) or 'action', 80)}: "
        f"{cut(e['msg'].removeprefix('Value error, '))}"
        for e in exc.errors()[:5]
    ]
    more = exc.error_count() - len(problems)
    return "; ".join(problems) + (f"; and {more} more" if more > 0 else "")
