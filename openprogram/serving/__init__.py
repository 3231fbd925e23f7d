"""Serving HTTP on this machine without trusting the client: who may talk to a local
server (access.py: its Host, no browser page, its bearer token) and what one client may
hold (limits.py: bounded worker threads, one read deadline per request, sockets that
linger until the reply is read). The testing server, `mcp serve`'s gate and
gui_harness's desktop server are built on it.
"""

from __future__ import annotations

from openprogram.serving.access import Access, browser_header, is_loopback
from openprogram.serving.limits import DeadlineReader, LimitedServer

__all__ = ["Access", "DeadlineReader", "LimitedServer", "browser_header", "is_loopback"]
