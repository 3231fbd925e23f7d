"""What one client may hold of an OpenAIServer (issue 32): its body, threads, time, stop().

Real sockets on 127.0.0.1: a client announcing a 300 MB body, clients that connect and
send nothing, one that dribbles a byte at a time, one that stops reading the reply.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, suppress
from typing import Any

import pytest

from openprogram.errors import UsageError
from openprogram.testing import OpenAIServer

CHAT = "/v1/chat/completions"


def head(server: OpenAIServer, length: int | str, path: str = CHAT) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


def connect(server: OpenAIServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def answer(sock: socket.socket) -> tuple[int, dict[str, Any]]:
    """The status and JSON body of the reply on `sock` (read to its end)."""
    data = b""
    while chunk := sock.recv(65536):
        data += chunk
    assert data, "the server closed the connection without a reply"
    status_line, _, rest = data.partition(b"\r\n")
    body = rest.partition(b"\r\n\r\n")[2]
    return int(status_line.split()[1]), json.loads(body)


def until(condition: Callable[[], bool]) -> None:
    """Wait for `condition` (a state another thread reaches), failing after 30 s."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.01)


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def test_a_body_over_the_limit_is_answered_413_before_it_is_read() -> None:
    with OpenAIServer() as server, closing(connect(server)) as sock:
        sock.sendall(head(server, 300_000_000))  # and never the body
        status, body = answer(sock)
        assert status == 413
        message = body["error"]["message"]
        assert message == "Content-Length 300000000 is over this server's 33,554,432 bytes"
        assert server.requests == []


def test_a_body_sent_over_the_limit_gets_its_413_read_by_the_client() -> None:
    with OpenAIServer(max_body_bytes=1000) as server:
        with closing(connect(server)) as sock:
            sock.sendall(head(server, 5000) + b"x" * 5000)
            assert answer(sock)[0] == 413
        with closing(connect(server)) as sock:  # at the limit: served
            data = json.dumps({"model": "m", "pad": "x" * 900}).encode()
            sock.sendall(head(server, len(data)) + data)
            assert answer(sock)[0] == 200


@pytest.mark.parametrize(
    ("length", "status"), [("12abc", 400), ("-1", 400), ("9" * 40, 413), ("١٢", 400)]
)
def test_a_content_length_that_is_not_a_plain_number_is_refused(length: str, status: int) -> None:
    with OpenAIServer() as server, closing(connect(server)) as sock:
        sock.sendall(head(server, length))
        assert answer(sock)[0] == status


def test_a_body_nested_too_deep_for_json_is_a_400_not_a_dropped_connection() -> None:
    with OpenAIServer() as server, closing(connect(server)) as sock:
        data = b"[" * 100_000 + b"]" * 100_000
        sock.sendall(head(server, len(data)) + data)
        status, body = answer(sock)
        assert status == 400
        assert "not valid JSON" in body["error"]["message"]


def test_connections_beyond_the_cap_are_answered_503_busy_at_once(
    sockets: list[socket.socket],
) -> None:
    with OpenAIServer(max_connections=3) as server:
        for _ in range(3):  # connected, sending nothing: each holds a worker
            sockets.append(connect(server))
        with closing(connect(server)) as sock:  # accepted after the three took theirs
            sock.sendall(head(server, 2) + b"{}")
            status, body = answer(sock)
        assert status == 503
        assert body["error"]["code"] == "server_busy"
        assert "all 3 connections are in use" in body["error"]["message"]
        for stalled in sockets:
            stalled.close()
        until(lambda: server._http.active_connections == 0)  # type: ignore[attr-defined]
        with closing(connect(server)) as sock:  # served again
            sock.sendall(head(server, 2) + b"{}")
            assert answer(sock)[0] == 200


def dribble(sock: socket.socket, stop: threading.Event) -> None:
    """Send a byte of a body every 0.1 s, so no single read ever waits long."""
    with suppress(OSError):
        while not stop.wait(0.1):
            sock.sendall(b" ")


@pytest.mark.slow
def test_a_client_dribbling_its_body_is_answered_408_at_the_read_deadline() -> None:
    stop = threading.Event()
    with OpenAIServer(read_timeout=1.0) as server, closing(connect(server)) as sock:
        sock.sendall(head(server, 10_000))
        sender = threading.Thread(target=dribble, args=(sock, stop))
        sender.start()
        try:
            status, body = answer(sock)
        finally:
            stop.set()
            sender.join()
        assert status == 408
        assert body["error"]["message"] == "the request did not arrive within 1.0 s"


@pytest.mark.slow
def test_stop_returns_at_once_with_stalled_dribbling_and_unread_clients(
    sockets: list[socket.socket],
) -> None:
    before = set(threading.enumerate())
    server = OpenAIServer()
    server.reply("x" * 20_000_000)  # more than the socket buffers hold
    dribbler = connect(server)
    dribbler.sendall(head(server, 1_000_000))
    sockets.append(dribbler)
    going = threading.Event()
    sender = threading.Thread(target=dribble, args=(dribbler, going))
    sender.start()
    for _ in range(3):  # connected, sending nothing
        sockets.append(connect(server))
    unread = connect(server)  # asks, then never reads the reply
    unread.sendall(head(server, 2) + b"{}")
    sockets.append(unread)
    until(lambda: server.requests != [])  # its reply is being sent: all five are served

    stopping = threading.Thread(target=server.stop)
    stopping.start()
    stopping.join(timeout=20)  # without cutting them: 10 s a stalled one, forever a dribbler
    stuck = stopping.is_alive()
    going.set()
    sender.join()
    for sock in sockets:
        sock.close()
    stopping.join()
    assert not stuck, "stop() waited for its clients"
    assert set(threading.enumerate()) - before == set()


@pytest.mark.parametrize(
    ("option", "value"),
    [("max_connections", 0), ("max_body_bytes", 1.5), ("read_timeout", float("nan"))],
)
def test_limits_that_are_not_positive_numbers_are_refused(option: str, value: Any) -> None:
    with pytest.raises(UsageError, match=f"{option}="):
        OpenAIServer(**{option: value})
