"""How the tests start Chromium: the flags every headless run needs on this closed network.

Without the background-networking flags Chromium keeps reaching for Google's hosts, and
as root it needs --no-sandbox. Each run also gets a fresh --user-data-dir (the caller's).
"""

from __future__ import annotations

__all__ = ["CHROMIUM_FLAGS"]

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
)
