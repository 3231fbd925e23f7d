"""Who may use `openprogram mcp serve --transport http`: the Host it is bound to, no
browser page, and the bearer token of this start of the server.

Owns the ASGI gate in front of the SDK's streamable-HTTP app (421 for a Host that is not
this server's, 403 for a browser's Origin, 401 without the token, compared in constant
time; the checks are openprogram.serving's Access) and the token file clients read
(0600, in a 0700 folder, flock-held by its server while it lives, so that the next start
removes a killed server's). serve.py wires them.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import stat
import tempfile
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

from openprogram.errors import ConfigError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: token files of killed servers stay
    fcntl = None  # type: ignore[assignment]
from openprogram.serving import Access, browser_header

__all__ = [
    "CLIENT_GONE",
    "Gate",
    "new_token",
    "remove_dead_tokens",
    "remove_token_file",
    "token_path",
    "write_token",
]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

CLIENT_GONE = "openprogram.client_gone"
"""The key of a request's ASGI scope holding an anyio Event, set when its client
disconnects (a tool call it was waiting for is then stopped)."""


def new_token() -> str:
    """A fresh random token: 43 URL-safe characters (256 bits)."""
    return secrets.token_urlsafe(32)


def token_path(port: int) -> Path:
    """Where the token of the server on `port` is written by default:
    `$XDG_RUNTIME_DIR/openprogram/mcp-PORT.token`, else
    `~/.local/share/openprogram/runtime/mcp-PORT.token` (as Jupyter keeps its own)."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and Path(runtime).is_dir():
        folder = Path(runtime) / "openprogram"
    else:
        folder = Path.home() / ".local" / "share" / "openprogram" / "runtime"
    return folder / f"mcp-{port}.token"


def write_token(path: Path, token: str) -> int:
    """Write `token` to `path`, readable by this user only (0600; a folder it creates is
    0700), and hold it: the returned descriptor keeps an flock on the file for as long
    as it is open (remove_token_file closes it). The file is replaced whole, never
    written through a link. Token files of servers that died (killed: nothing removed
    theirs) are removed from the folder first (remove_dead_tokens)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        remove_dead_tokens(path.parent)
        descriptor, temporary = tempfile.mkstemp(prefix=".mcp-", dir=path.parent)  # 0600
        try:
            if fcntl is not None:  # locked before it is in place: never seen unheld
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.write(descriptor, (token + "\n").encode("ascii"))
            os.replace(temporary, path)
        except BaseException:
            os.close(descriptor)
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
    except OSError as exc:
        raise ConfigError(
            f"cannot write the server's token to {str(path)!r}: {exc}; give another file "
            "with --token-file"
        ) from exc
    return descriptor


def remove_dead_tokens(folder: Path) -> list[Path]:
    """Remove the `mcp-*.token` files of `folder` that no live server holds (their
    server was killed before it could remove its own): this user's regular files that
    nobody has locked. The removed paths."""
    removed: list[Path] = []
    if fcntl is None:
        return removed
    with contextlib.suppress(OSError):
        names = [n for n in os.listdir(folder) if n.startswith("mcp-") and n.endswith(".token")]
        for name in names:
            with contextlib.suppress(OSError):
                fd = os.open(folder / name, _TOKEN_FLAGS)
                try:
                    found = os.fstat(fd)
                    if not stat.S_ISREG(found.st_mode) or found.st_uid != os.geteuid():
                        continue
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: held
                    if os.fstat(fd).st_nlink and os.path.samestat(found, os.stat(folder / name)):
                        os.unlink(folder / name)
                        removed.append(folder / name)
                finally:
                    os.close(fd)
    return removed


def remove_token_file(path: Path, token: str, held: int | None = None) -> None:
    """Remove the token file when it still holds `token` (a later server's is kept),
    and let go of it (`held`: write_token's descriptor)."""
    with contextlib.suppress(OSError, UnicodeDecodeError):
        if path.read_text(encoding="ascii").strip() == token:
            path.unlink()
    if held is not None:
        with contextlib.suppress(OSError):
            os.close(held)


_TOKEN_FLAGS = (
    os.O_RDONLY | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
)


class Gate:
    """ASGI middleware: requests reach `app` only with this server's Host, no browser
    headers and `Authorization: Bearer <token>`; lifespan events pass through. Each
    request let through has an Event under CLIENT_GONE in its scope."""

    def __init__(self, app: App, *, host: str, port: int, token: str) -> None:
        self.app = app
        self._access = Access(host, port, token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, receive, send)
            return
        if scope["type"] != "http":  # a websocket: this server has none
            await send({"type": "websocket.close", "code": 1008})
            return
        refusal = self._refusal(scope)
        if refusal is not None:
            await _refuse(send, *refusal)
            return
        import anyio

        gone = scope[CLIENT_GONE] = anyio.Event()

        async def watched() -> MutableMapping[str, Any]:
            message = await receive()
            if message["type"] == "http.disconnect":
                gone.set()
            return message

        await self.app(scope, watched, send)

    def _refusal(self, scope: Scope) -> tuple[int, str, str] | None:
        headers: dict[str, list[bytes]] = {}
        for key, value in scope.get("headers", ()):
            headers.setdefault(key.decode("latin-1").lower(), []).append(value)
        hosts = headers.get("host", [])
        if len(hosts) != 1 or not self._access.host_allowed(hosts[0].decode("latin-1")):
            return (
                421,
                "wrong_host",
                "the Host header does not name this server; use the URL it printed",
            )
        if browser_header(headers) is not None:
            return 403, "browser_refused", "requests from web pages are refused"
        given = headers.get("authorization", [])
        if len(given) != 1 or not self._access.token_given(given[0]):
            return (
                401,
                "unauthorized",
                "this MCP server needs its token: send 'Authorization: Bearer <token>' with "
                "the token in the file the server printed at start (a restarted server has "
                "a new one)",
            )
        return None


async def _refuse(send: Send, status: int, kind: str, message: str) -> None:
    body = json.dumps({"error": message, "kind": kind}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="openprogram-mcp"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
