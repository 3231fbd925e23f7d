"""The streamable-HTTP transport of MCPServer: the SDK's, with a bound on each answer.

An answer sent as JSON is counted as it arrives and dropped past `max_bytes` (the SDK
then fails its request); one sent as server-sent events is bounded per event by the
SDK's own `max_sse_event_size`. client.py uses it. Start at http_client().
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import httpx2

from openprogram.mcp._sdk import create_mcp_http_client, streamable_http_client

__all__ = ["TOO_LARGE", "http_client"]

TOO_LARGE = "over max_result_bytes"
"""What the error of a dropped answer says (the SDK reports it as a parse error)."""


@contextlib.asynccontextmanager
async def http_client(
    url: str, *, headers: dict[str, str], max_bytes: int
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable_http_client for `url`, its answers bounded by `max_bytes`."""
    client = create_mcp_http_client(headers=headers or None)
    # httpx2 has no public way to wrap a made client's transport, and the SDK makes the
    # client (its timeouts): the one access to a library's private member here
    client._transport = _Bounded(client._transport, max_bytes)
    async with (
        client,
        streamable_http_client(url, http_client=client, max_sse_event_size=max_bytes) as streams,
    ):
        yield streams


class _TooLarge(httpx2.StreamError):
    pass


class _Bounded(httpx2.AsyncBaseTransport):
    def __init__(self, inner: httpx2.AsyncBaseTransport, max_bytes: int) -> None:
        self._inner = inner
        self._max = max_bytes

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        kind = response.headers.get("content-type", "").lower()
        if not kind.startswith("text/event-stream"):  # a stream of events is bounded per event
            response.stream = _BoundedStream(response.stream, self._max)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: Any, max_bytes: int) -> None:
        self._inner = inner
        self._max = max_bytes

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._max:
                raise _TooLarge(
                    f"the server's answer was {TOO_LARGE}={self._max:,}; it was dropped unread"
                )
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()
