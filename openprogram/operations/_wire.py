"""Frames between ProcessOperations and its sandbox process: length-prefixed JSON.

Each frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON (one object).
Used by process.py (the parent) and _child.py (the sandbox); nothing else.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

__all__ = ["MAX_FRAME", "read_frame", "write_frame"]

MAX_FRAME = 64 << 20
"""The largest frame either side accepts (bytes): a bigger one is a broken peer."""
_HEADER = struct.Struct(">I")


def write_frame(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one frame (the caller serialises writers)."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(sock: socket.socket) -> dict[str, Any] | None:
    """The next frame, or None when the peer closed the connection (or broke it)."""
    try:
        header = _exactly(sock, _HEADER.size)
        if header is None:
            return None
        (size,) = _HEADER.unpack(header)
        if size > MAX_FRAME:
            return None
        data = _exactly(sock, size)
    except OSError:
        return None
    if data is None:
        return None
    message = json.loads(data)
    return message if isinstance(message, dict) else None
