"""The life cycle of a local HTTP server: serve on a thread, stop and join.

OpenAIServer and the tests' FaultServer differ in what they answer, not in how they run;
both inherit this. Start at ServedOnThread.
"""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from types import TracebackType
from typing import TypeVar

__all__ = ["ServedOnThread"]

_S = TypeVar("_S", bound="ServedOnThread")


class ServedOnThread:
    """An HTTP server on 127.0.0.1 served from a thread of its own; a context manager."""

    _http: ThreadingHTTPServer

    def _serve(self, http: ThreadingHTTPServer, name: str) -> None:
        self._http = http
        self._stopped = False
        self._thread = threading.Thread(
            target=http.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        return int(self._http.server_address[1])

    @property
    def url(self) -> str:
        """Base URL for an OpenAI client, e.g. ``http://127.0.0.1:PORT/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        """Stop serving, close the socket and join all threads; safe to call twice."""
        if self._stopped:
            return
        self._stopped = True
        self._http.shutdown()
        self._http.server_close()
        self._thread.join()

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
