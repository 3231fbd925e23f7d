"""`openprogram serve`: a private desktop served over HTTP until Ctrl-C.

Owns serve_main(): start a VirtualDesktop (with an app, if given), serve it with
serve_desktop, print the URL and the token a client needs, and stop both cleanly on
SIGINT or SIGTERM. The server's checks live in server.py.
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from typing import TextIO

from gui_harness.desktop.server import serve_desktop
from gui_harness.desktop.virtual import VirtualDesktop
from openprogram.errors import UsageError

__all__ = ["parse_size", "serve_main"]


def parse_size(text: str) -> tuple[int, int]:
    """`"1280x800"` as (1280, 800); UsageError naming the expected form otherwise."""
    width, separator, height = text.lower().partition("x")
    if not (separator and width.isdigit() and height.isdigit()):
        raise UsageError(f"size {text!r} is not WIDTHxHEIGHT in pixels, e.g. 1280x800")
    return int(width), int(height)


def serve_main(
    *,
    app: str | None = None,
    size: str = "1280x800",
    host: str = "127.0.0.1",
    port: int = 0,
    out: TextIO | None = None,
) -> int:
    """Serve a private desktop until SIGINT/SIGTERM; returns the exit code (0).

    Prints the URL and the per-server token: a client connects with
    `RemoteDesktop(url, token=token)`. Only loopback addresses are served.
    """
    out = out or sys.stdout
    stop = threading.Event()
    previous = {
        signum: signal.signal(signum, lambda *_: stop.set())
        for signum in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        apps = [shlex.split(app)] if app else []
        with (
            VirtualDesktop(parse_size(size), apps=apps) as desktop,
            serve_desktop(desktop, host, port) as server,
        ):
            width, height = desktop.size
            print(f"serving a private {width}x{height} display ({desktop.display})", file=out)
            print(f"url: {server.url}", file=out)
            print(f"token: {server.token}", file=out)
            print(
                f"connect with RemoteDesktop({server.url!r}, token=...); Ctrl-C stops",
                file=out,
                flush=True,
            )
            stop.wait()
        print("stopped", file=out, flush=True)
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
