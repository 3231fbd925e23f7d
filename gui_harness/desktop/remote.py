"""RemoteDesktop: the Desktop protocol over HTTP, the client of gui_harness.desktop.server.

Owns the translation of HTTP and socket failures into gui_harness.errors, in this one
place. Speaks protocol version 1; start at RemoteDesktop.execute(). Settles on the server
(`POST /v1/settle`) and, against an older server without it, by polling screenshots.
"""

from __future__ import annotations

import http.client
import io
import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from PIL import Image

from gui_harness.actions import Action, KeyUp, MouseUp, Wait, held_after
from gui_harness.desktop.server import PROTOCOL_VERSION
from gui_harness.desktop.settle import compare_frames
from gui_harness.errors import (
    ActionRejected,
    DesktopAuthError,
    DesktopError,
    DesktopTimeout,
    InvalidAction,
)
from openprogram.echo import echo
from openprogram.errors import UsageError

__all__ = ["RemoteDesktop"]


class RemoteDesktop:
    """A desktop served by serve_desktop() at `url`, which needs that server's `token`;
    `timeout` is per request, in seconds.

    Raises InvalidAction or ActionRejected when the server refuses an action,
    DesktopAuthError when it refuses the token, DesktopTimeout when it does not answer in
    time, and DesktopError for everything else.
    """

    def __init__(self, url: str, *, token: str | None = None, timeout: float = 10.0) -> None:
        parsed = urllib.parse.urlsplit(url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise UsageError(f"url={url!r} is not an http(s) URL like 'http://127.0.0.1:8765'")
        if token is not None and (not isinstance(token, str) or not token.strip()):
            raise UsageError(
                f"token={token!r} is not a token; pass the string serve_desktop() returned"
                " in DesktopServer.token"
            )
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._token = token
        self._size: tuple[int, int] | None = None
        self._server_settles = True  # until a server answers that it has no /v1/settle
        self._server_grabs = True  # likewise /v1/grab
        self.held_keys: list[str] = []
        """The keys this client's key_downs left held on the server (its account of them)."""
        self.held_buttons: list[str] = []
        """The mouse buttons this client's mouse_downs left held on the server."""
        # Loopback servers (the sandbox case) must not be routed through an HTTP proxy.
        local = parsed.hostname in ("localhost", "127.0.0.1", "::1")
        handlers = [urllib.request.ProxyHandler({})] if local else []
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:  # never the token
        return f"RemoteDesktop({self.url!r})"

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the remote screen in pixels, asked once and remembered."""
        if self._size is None:
            reply = json.loads(self._request("GET", "/v1/size"))
            self._size = (int(reply["width"]), int(reply["height"]))
        return self._size

    def screenshot(self) -> Image.Image:
        """A picture of the whole remote screen, RGB."""
        return self._image(self._request("GET", "/v1/screenshot"))

    def _image(self, data: bytes) -> Image.Image:
        try:
            with Image.open(io.BytesIO(data)) as image:
                return image.convert("RGB")
        except (OSError, http.client.HTTPException) as exc:
            raise DesktopError(f"the server at {self.url} sent an unreadable screenshot") from exc

    def grab(self, box: tuple[int, int, int, int]) -> Image.Image:
        """The part `box` = (x, y, width, height) of the remote screen, clipped to it, RGB:
        a small PNG instead of the whole screen. A server older than `/v1/grab` sends
        its whole screenshot, cut here, and is asked no more."""
        width, height = self.size
        x, y, w, h = (int(v) for v in box)
        left, top = max(0, x), max(0, y)
        right, bottom = min(width, x + w), min(height, y + h)
        if right <= left or bottom <= top:
            raise UsageError(f"box={echo(box)} has no part on the {width}x{height} screen")
        part = [left, top, right - left, bottom - top]
        if self._server_grabs:
            body = {"version": PROTOCOL_VERSION, "box": part}
            try:
                return self._image(self._request("POST", "/v1/grab", body))
            except _NoEndpoint:
                self._server_grabs = False
        return self.screenshot().crop((left, top, right, bottom))

    def execute(self, action: Action) -> None:
        """Send one action in screen pixels; the server validates, checks and performs it.

        A `wait` is waited out here: it changes nothing on the screen, and a long one sent
        to the server would hold a connection (and outlast `timeout`).
        """
        if isinstance(action, Wait):
            time.sleep(action.ms / 1000)
            return
        body = {"version": PROTOCOL_VERSION, "action": action.model_dump(mode="json")}
        self._request("POST", "/v1/execute", body, action=action)
        self.held_keys, self.held_buttons = held_after((self.held_keys, self.held_buttons), action)

    def release_held(self) -> None:
        """Release, on the server, the keys and buttons this client's key_downs and
        mouse_downs left held."""
        for button in reversed(self.held_buttons):
            self.execute(MouseUp(button=button))  # type: ignore[arg-type]  # a MouseButton
        if self.held_keys:
            self.execute(KeyUp(keys=self.held_keys))

    def wait_settled(self, *, timeout: float) -> bool:
        """Wait until the remote screen holds still after the latest action; True then,
        False when `timeout` seconds pass first.

        The server settles (from X DAMAGE events when it serves an X display) and says
        which; a server older than `/v1/settle` is polled with screenshots instead
        (settle.compare_frames), and asked no more.
        """
        if self._server_settles:
            body = {"version": PROTOCOL_VERSION, "timeout": timeout}
            try:
                reply = self._request("POST", "/v1/settle", body, timeout=self.timeout + timeout)
            except _NoEndpoint:
                self._server_settles = False
            else:
                try:
                    return bool(json.loads(reply)["settled"])
                except (ValueError, KeyError, TypeError) as exc:
                    raise DesktopError(
                        f"the server at {self.url} sent an unreadable settle reply: {reply[:200]!r}"
                    ) from exc
        return compare_frames(self, timeout=timeout)

    def _request(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        *,
        action: Any = None,
        timeout: float | None = None,
    ) -> bytes:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        if self._token is not None:
            request.add_header("Authorization", f"Bearer {self._token}")
        try:
            with self._opener.open(request, timeout=timeout or self.timeout) as response:
                reply: bytes = response.read()
                return reply
        except urllib.error.HTTPError as exc:
            with exc:
                raw = exc.read()
                if exc.code == 404 and path in ("/v1/settle", "/v1/grab"):
                    raise _NoEndpoint(path) from exc
                raise self._translate(exc, raw, action) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise self._timeout(method, path) from exc
            raise DesktopError(
                f"could not reach the desktop server for {method} {path}: {exc.reason};"
                f" is the server running at {self.url}?"
            ) from exc
        except TimeoutError as exc:
            raise self._timeout(method, path) from exc
        except (OSError, http.client.HTTPException) as exc:
            raise DesktopError(
                f"the connection to {self.url} failed during {method} {path}: {exc};"
                f" is the server running at {self.url}?"
            ) from exc

    def _timeout(self, method: str, path: str) -> DesktopTimeout:
        return DesktopTimeout(
            f"the desktop server at {self.url} did not answer {method} {path} within"
            f" {self.timeout} s; raise timeout= or check the server"
        )

    def _translate(self, exc: urllib.error.HTTPError, raw: bytes, action: Any) -> Exception:
        try:
            payload = json.loads(raw)
            message, kind = str(payload["error"]), str(payload.get("kind", ""))
        except (ValueError, KeyError, TypeError):
            message, kind = raw.decode("utf-8", "replace")[:500] or exc.reason, ""
        if kind == "unauthorized":
            fix = (
                "pass the server's token: RemoteDesktop(url, token=server.token), where server"
                " is what serve_desktop() returned"
                if self._token is None
                else "the token is not this server's; pass the token of the server running"
                " there (a restarted server has a new one)"
            )
            return DesktopAuthError(f"the desktop server at {self.url} refused the request: {fix}")
        if kind == "invalid_action":
            return InvalidAction(message)
        if kind == "action_rejected":
            return ActionRejected(message, action=action)
        if kind == "unsupported_version":
            return DesktopError(
                f"the server at {self.url} refused protocol version {PROTOCOL_VERSION}:"
                f" {message}. Install the same gui_harness version on both sides"
            )
        return DesktopError(f"the desktop server at {self.url} answered {exc.code}: {message}")


class _NoEndpoint(Exception):
    """The server has no such endpoint: it is older than this client."""
