"""Frames between ProcessOperations and its sandbox process: length-prefixed JSON.

Each frame is a 4-byte big-endian length and that many bytes of UTF-8 JSON (one object).
A frame that is not that (not JSON, not an object, longer than MAX_FRAME) is a FrameError:
the peer is broken or hostile. Used by process.py (the parent, through `Frames`, which
never blocks) and _child.py (the sandbox, through read_frame); nothing else.
"""

from __future__ import annotations

import json
import socket
import struct
from typing import Any

__all__ = ["MAX_FRAME", "FrameError", "Frames", "read_frame", "write_frame"]

MAX_FRAME = 64 << 20
"""The largest frame either side accepts (bytes): a bigger one is a broken peer."""
_HEADER = struct.Struct(">I")


class FrameError(Exception):
    """A frame that is not a length-prefixed JSON object within MAX_FRAME."""


def write_frame(sock: socket.socket, message: dict[str, Any]) -> None:
    """Send one frame (the caller serialises writers)."""
    sock.sendall(encode(message))


def encode(message: dict[str, Any]) -> bytes:
    """One frame's bytes."""
    data = json.dumps(message, ensure_ascii=False, separators=(",", ":"), default=str).encode()
    return _HEADER.pack(len(data)) + data


def _decode(data: bytes) -> dict[str, Any]:
    try:
        message = json.loads(data)
    except (ValueError, RecursionError) as exc:  # not UTF-8, not JSON, nested too deep
        raise FrameError(f"a frame of {len(data)} bytes is not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise FrameError(f"a frame holds a {type(message).__name__}, not an object")
    return message


def _size(header: bytes) -> int:
    (size,) = _HEADER.unpack(header)
    if size > MAX_FRAME:
        raise FrameError(f"a frame claims {size:,} bytes, more than {MAX_FRAME:,}")
    return int(size)


def _exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            return None
        chunks += chunk
    return bytes(chunks)


def read_frame(sock: socket.socket) -> dict[str, Any] | None:
    """The next frame (blocking), or None when the peer closed the connection (or broke
    it). Raises FrameError for a frame that is not one."""
    try:
        header = _exactly(sock, _HEADER.size)
        if header is None:
            return None
        data = _exactly(sock, _size(header))
    except OSError:
        return None
    return None if data is None else _decode(data)


class Frames:
    """Frames cut from bytes as they arrive (the parent reads without blocking): feed()
    what recv() gave, take the whole frames it completes; `pending` says how many bytes
    of an unfinished frame are held."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    @property
    def pending(self) -> int:
        return len(self._buffer)

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        """The frames `data` completes, in order; raises FrameError at a bad one."""
        self._buffer += data
        frames = []
        while len(self._buffer) >= _HEADER.size:
            size = _size(bytes(self._buffer[: _HEADER.size]))
            end = _HEADER.size + size
            if len(self._buffer) < end:
                break
            frames.append(_decode(bytes(self._buffer[_HEADER.size : end])))
            del self._buffer[:end]
        return frames
