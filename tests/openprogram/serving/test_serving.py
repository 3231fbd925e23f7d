"""openprogram.serving on its own: the access checks, and a LimitedServer on a real socket
(one worker busy: the next connection gets the subclass's 503 at once; stop cuts the busy
one and joins it). The servers built on it have their own attack tests."""

from __future__ import annotations

import http.client
import socket
import threading
from http.server import BaseHTTPRequestHandler

import pytest

from openprogram.serving import Access, LimitedServer, browser_header, is_loopback

TOKEN = "s" * 43


@pytest.mark.parametrize(
    ("bound", "allowed", "refused"),
    [
        ("127.0.0.1", ["127.0.0.1:80", "localhost:80", "LOCALHOST:80", "[::1]:80"],
         ["127.0.0.1:81", "evil.example:80", "10.0.0.1:80", "127.0.0.1", ":80"]),
        ("0.0.0.0", ["192.168.1.5:80", "[fe80::1]:80", f"{socket.gethostname()}:80"],
         ["evil.example:80", "192.168.1.5:81"]),
        ("10.1.2.3", ["10.1.2.3:80"], ["localhost:80", "127.0.0.1:80"]),
    ],
)  # fmt: skip
def test_the_host_header_must_name_the_bound_address(bound, allowed, refused):
    access = Access(bound, 80, TOKEN)
    assert all(access.host_allowed(host) for host in allowed)
    assert not any(access.host_allowed(host) for host in refused)


def test_the_token_must_be_sent_as_a_bearer_and_whole():
    access = Access("127.0.0.1", 80, TOKEN)
    assert access.token_given(f"Bearer {TOKEN}".encode())
    assert access.token_given(f"  bearer   {TOKEN} ".encode())
    for wrong in [
        TOKEN,
        f"Basic {TOKEN}",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN}x",
        "",
        "Bearer",
    ]:
        assert not access.token_given(wrong.encode())


def test_browser_headers_and_loopback_names():
    assert browser_header(["host", "origin"]) == "Origin"
    assert browser_header(["Sec-Fetch-Site"]) == "Sec-Fetch-Site"
    assert browser_header(["Host", "Authorization"]) is None
    assert is_loopback("localhost") and is_loopback("::1") and is_loopback("127.8.0.1")
    assert not is_loopback("10.0.0.1") and not is_loopback("example.org")


class _Held(BaseHTTPRequestHandler):
    entered = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        _Held.entered.set()
        _Held.release.wait(30)
        self.send_response(200)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(LimitedServer):
    def busy_reply(self) -> tuple[bytes, str]:
        return b"busy here", "text/plain"


def test_a_connection_beyond_the_limit_gets_the_busy_reply_and_stop_joins_the_worker():
    _Held.entered.clear()
    _Held.release.clear()
    server = _Server(("127.0.0.1", 0), _Held, max_connections=1, read_timeout=5)
    serving = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    serving.start()
    port = server.server_address[1]
    first = socket.create_connection(("127.0.0.1", port))
    try:
        first.sendall(b"GET / HTTP/1.0\r\nHost: x\r\n\r\n")
        assert _Held.entered.wait(10)
        assert server.active_connections == 1
        second = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        second.request("GET", "/")
        reply = second.getresponse()
        assert (reply.status, reply.read(), reply.getheader("Retry-After")) == (
            503,
            b"busy here",
            "1",
        )
        second.close()
    finally:
        server.shutdown()
        serving.join()
        server.cut_connections()
        _Held.release.set()
        server.server_close()  # joins the held worker
        first.close()
    assert server.active_connections == 0
