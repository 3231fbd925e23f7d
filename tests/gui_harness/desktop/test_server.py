"""serve_desktop under attack: each case from issue 9 against a real server on 127.0.0.1.

Malformed requests go over raw sockets, so nothing between the test and the server
tidies them up. The desktop is a FakeDesktop, so "nothing was typed" is `fake.actions`.
"""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from collections.abc import Callable

import pytest

from gui_harness.actions import Click, Keypress, Type, Wait
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.desktop.server import DesktopServer, serve_desktop
from gui_harness.errors import ActionRejected, DesktopAuthError, DesktopError
from openprogram.errors import UsageError
from tests.support.desktop_api import post_json

TYPE_X = b'{"version": 1, "action": {"type": "type", "text": "x"}}'


@pytest.fixture
def fake():
    desktop = FakeDesktop.demo_form()
    desktop.execute(Click(x=200, y=75))  # focus the name field: a typed "x" would land
    desktop.actions.clear()
    return desktop


@pytest.fixture
def server(fake):
    with serve_desktop(fake) as running:
        yield running


def exchange(server: DesktopServer, data: bytes, *, half_close: bool = False) -> bytes:
    """Send raw bytes, read until the server closes; the whole reply, status line first."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        return read_all(sock)


def read_all(sock: socket.socket) -> bytes:
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def parse(reply: bytes) -> tuple[int, dict[str, str], dict]:
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    assert headers["Content-Type"] == "application/json"
    assert int(headers["Content-Length"]) == len(body)
    return int(status_line.split()[1]), headers, json.loads(body)


def post_bytes(server: DesktopServer, body: bytes, **headers: str) -> bytes:
    """A POST /v1/execute as a well-behaved client sends it, with `headers` on top
    (a value of "" drops that header)."""
    fields = {
        "Host": f"127.0.0.1:{server.port}",
        "Authorization": f"Bearer {server.token}",
        "Content-Type": "application/json",
        "Content-Length": str(len(body)),
    }
    fields.update({name.replace("_", "-"): value for name, value in headers.items()})
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items() if value)
    return f"POST /v1/execute HTTP/1.1\r\n{head}\r\n".encode("latin-1") + body


def get_bytes(server: DesktopServer, path: str, **headers: str) -> bytes:
    fields = {"Host": f"127.0.0.1:{server.port}", "Authorization": f"Bearer {server.token}"}
    fields.update({name.replace("_", "-"): value for name, value in headers.items()})
    head = "".join(f"{name}: {value}\r\n" for name, value in fields.items() if value)
    return f"GET {path} HTTP/1.1\r\n{head}\r\n".encode("latin-1")


def wait_until(condition: Callable[[], bool]) -> None:
    """Poll a condition the server offers no event for (its connection count)."""
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, "the condition never came true"
        time.sleep(0.01)


# --- who may ask -----------------------------------------------------------------------


def test_a_well_formed_request_with_the_token_is_served(server, fake):
    status, _, payload = parse(exchange(server, post_bytes(server, TYPE_X)))
    assert (status, payload) == (200, {"ok": True})
    assert fake.state()["name"] == "x"


def test_the_issues_curl_types_nothing_it_gets_401(server, fake):
    # curl -X POST http://127.0.0.1:PORT/v1/execute --data '{...}'
    curl = post_bytes(
        server, TYPE_X, Authorization="", Content_Type="application/x-www-form-urlencoded"
    )
    status, headers, payload = parse(exchange(server, curl))
    assert status == 401 and payload["kind"] == "unauthorized"
    assert "Authorization: Bearer <token>" in payload["error"]
    assert headers["WWW-Authenticate"] == "Bearer"
    assert fake.actions == [] and fake.state()["name"] == ""


@pytest.mark.parametrize("path", ["/v1/size", "/v1/screenshot"])
@pytest.mark.parametrize(
    "authorization", ["", "Bearer wrong-token", "Basic Zm9vOmJhcg==", "Bearer"]
)
def test_every_endpoint_needs_the_token(server, path, authorization):
    status, _, payload = parse(
        exchange(server, get_bytes(server, path, Authorization=authorization))
    )
    assert status == 401 and payload["kind"] == "unauthorized"


def test_a_token_that_differs_in_its_last_character_is_refused(server, fake):
    wrong = server.token[:-1] + ("A" if server.token[-1] != "A" else "B")
    reply = exchange(server, post_bytes(server, TYPE_X, Authorization=f"Bearer {wrong}"))
    assert parse(reply)[0] == 401
    reply = exchange(server, post_bytes(server, TYPE_X, Authorization="Bearer é-not-ascii"))
    assert parse(reply)[0] == 401
    assert fake.actions == []


def test_each_server_has_its_own_random_token(fake):
    with serve_desktop(fake) as one, serve_desktop(fake) as two:
        assert one.token != two.token and len(one.token) >= 32
        assert one.token not in repr(one)
        with pytest.raises(DesktopAuthError, match="not this server's"):
            RemoteDesktop(one.url, token=two.token).execute(Type(text="x"))
    assert fake.actions == []


def test_remote_desktop_without_the_token_says_to_pass_it(server, fake):
    with pytest.raises(DesktopAuthError, match=r"RemoteDesktop\(url, token=server.token\)"):
        RemoteDesktop(server.url).execute(Type(text="x"))
    with pytest.raises(DesktopAuthError):
        RemoteDesktop(server.url).screenshot()
    assert fake.actions == []


def test_a_chosen_token_is_used_and_a_weak_one_refused(fake):
    with serve_desktop(fake, token="a-long-shared-secret-0123") as running:
        assert running.token == "a-long-shared-secret-0123"
        assert RemoteDesktop(running.url, token="a-long-shared-secret-0123").size == (800, 600)
    for weak in ["short", "sixteen chars ok", "x" * 15, 12345678901234567890]:
        with pytest.raises(UsageError, match="at least 16 printable ASCII"):
            serve_desktop(fake, token=weak)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="not a token"):
        RemoteDesktop("http://127.0.0.1:1", token="")


@pytest.mark.parametrize(
    "header",
    [
        {"Origin": "http://127.0.0.1:9999"},
        {"Origin": "null"},
        {"Sec_Fetch_Site": "same-site"},
    ],
)
def test_requests_from_a_browser_page_are_refused_even_with_the_token(server, fake, header):
    status, _, payload = parse(exchange(server, post_bytes(server, TYPE_X, **header)))
    assert status == 403 and payload["kind"] == "browser_refused"
    assert fake.actions == []


@pytest.mark.parametrize(
    "host", ["evil.example:{port}", "127.0.0.1:1", "127.0.0.1", "", "127.0.0.2:{port}"]
)
def test_a_host_other_than_the_bound_address_is_refused(server, fake, host):
    request = post_bytes(server, TYPE_X, Host=host.format(port=server.port))
    status, _, payload = parse(exchange(server, request))
    assert status == 421 and payload["kind"] == "wrong_host"
    assert fake.actions == []


def test_localhost_is_an_accepted_host_for_a_loopback_server(server, fake):
    request = post_bytes(server, TYPE_X, Host=f"localhost:{server.port}")
    assert parse(exchange(server, request))[0] == 200


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback here")
def test_an_ipv6_loopback_server_accepts_its_bracketed_host(fake):
    with serve_desktop(fake, host="::1") as running:
        assert running.url == f"http://[::1]:{running.port}"
        assert RemoteDesktop(running.url, token=running.token).size == (800, 600)


def test_a_post_must_say_it_is_json(server, fake):
    for content_type in ["", "text/plain", "application/x-www-form-urlencoded"]:
        request = post_bytes(server, TYPE_X, Content_Type=content_type)
        status, _, payload = parse(exchange(server, request))
        assert status == 415 and "application/json" in payload["error"]
    request = post_bytes(server, TYPE_X, Content_Type="application/json; charset=utf-8")
    assert parse(exchange(server, request))[0] == 200


# --- malformed requests: always a JSON reply, never a hang or a silent close -----------


@pytest.mark.parametrize(
    ("length", "status", "message"),
    [
        ("abc", 400, "not one non-negative whole number"),
        ("-1", 400, "not one non-negative whole number"),
        ("+5", 400, "not one non-negative whole number"),
        ("0x10", 400, "not one non-negative whole number"),
        ("1" * 40, 413, "over this server's limit"),
        (str(10**9), 413, "over this server's limit"),
        ("", 411, "send a Content-Length"),
    ],
)
def test_a_bad_content_length_gets_a_json_error(server, fake, length, status, message):
    reply = exchange(server, post_bytes(server, TYPE_X, Content_Length=length))
    got, _, payload = parse(reply)
    assert got == status and message in payload["error"]
    assert fake.actions == []


def test_two_content_lengths_or_a_chunked_body_are_refused(server, fake):
    twice = post_bytes(server, TYPE_X).replace(
        b"Content-Length:", b"Content-Length: 3\r\nContent-Length:", 1
    )
    assert parse(exchange(server, twice))[0] == 400
    chunked = post_bytes(server, b"", Content_Length="", Transfer_Encoding="chunked")
    status, _, payload = parse(exchange(server, chunked))
    assert status == 501 and "Content-Length" in payload["error"]
    assert fake.actions == []


def test_a_body_shorter_than_its_content_length_is_refused(server, fake):
    request = post_bytes(server, TYPE_X, Content_Length=str(len(TYPE_X) + 10))
    status, _, payload = parse(exchange(server, request, half_close=True))
    assert status == 400 and f"ended after {len(TYPE_X)} of" in payload["error"]
    assert fake.actions == []


def test_a_body_over_the_limit_is_refused_before_it_is_read(server, fake):
    body = b'{"version": 1, "action": {"type": "type", "text": "' + b"x" * 300_000 + b'"}}'
    status, _, payload = parse(exchange(server, post_bytes(server, body)))
    assert status == 413 and "262144 bytes" in payload["error"]
    assert fake.actions == []


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 200_000,  # 200 000 deep, never closed
        b'{"version": 1, "action": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"version": 1, "action": {"type": "type", "text": "x", "n": ' + b"{" * 20,
    ],
)
def test_deeply_nested_json_is_refused_without_parsing_it(server, fake, body):
    status, _, payload = parse(exchange(server, post_bytes(server, body)))
    assert status == 400 and "nests deeper than 16 levels" in payload["error"]
    assert fake.actions == []


def test_brackets_inside_strings_do_not_count_as_nesting(server, fake):
    text = '[{"\\"' * 400
    body = json.dumps({"version": 1, "action": {"type": "type", "text": text}}).encode()
    assert parse(exchange(server, post_bytes(server, body)))[0] == 200
    assert fake.state()["name"] == text


@pytest.mark.parametrize(
    "request_bytes",
    [
        b"\r\n",
        b"GARBAGE\r\n\r\n",
        b"POST /v1/execute HTTP/9.9\r\n\r\n",
        b"GET /v1/size HTTP/1.1\r\n" + b"X-Filler: y\r\n" * 150 + b"\r\n",
        b"GET /v1/size HTTP/1.1\r\nX-Long: " + b"y" * 70_000 + b"\r\n\r\n",
    ],
)
def test_garbage_requests_get_a_json_error(server, request_bytes):
    status, _, payload = parse(exchange(server, request_bytes, half_close=True))
    assert status in (400, 431, 505) and payload["kind"] == "invalid_request"


def test_unknown_paths_and_methods_get_json_errors(server):
    status, _, payload = parse(exchange(server, get_bytes(server, "/v1/nope")))
    assert status == 404 and payload["kind"] == "not_found"
    status, _, payload = parse(exchange(server, get_bytes(server, "/v1/execute")))
    assert status == 405 and "takes POST" in payload["error"]
    options = get_bytes(server, "/v1/execute").replace(b"GET", b"OPTIONS", 1)
    assert parse(exchange(server, options))[0] == 405


# --- time and threads ------------------------------------------------------------------


def test_a_stalled_request_gets_408_and_frees_its_worker(fake):
    with serve_desktop(fake, read_timeout=0.5, max_connections=1) as running:
        with socket.create_connection(("127.0.0.1", running.port), timeout=30) as stalled:
            stalled.sendall(b"POST /v1/execute HTTP/1.1\r\nHost: 127.0.0.1")
            status, _, payload = parse(read_all(stalled))  # the server speaks first
        assert status == 408 and payload["kind"] == "timeout"
        wait_until(lambda: running.active_connections == 0)  # its one worker is free again
        # a body that stops halfway gets the same
        with socket.create_connection(("127.0.0.1", running.port), timeout=30) as stalled:
            stalled.sendall(post_bytes(running, TYPE_X)[:-10])
            assert parse(read_all(stalled))[0] == 408
        wait_until(lambda: running.active_connections == 0)
        assert RemoteDesktop(running.url, token=running.token).size == (800, 600)
    assert fake.actions == []


def test_a_client_dribbling_bytes_is_cut_off_at_the_deadline(fake):
    request = post_bytes(fake_server := serve_desktop(fake, read_timeout=0.5), TYPE_X)
    request = request.replace(b"\r\n\r\n", b"\r\nX-Pad: " + b"p" * 5_000 + b"\r\n\r\n", 1)
    sent = 0
    with fake_server, socket.create_connection(("127.0.0.1", fake_server.port)) as sock:

        def dribble() -> None:
            nonlocal sent
            try:
                for index in range(len(request)):
                    sock.sendall(request[index : index + 1])
                    sent += 1
                    time.sleep(0.01)  # the attacker's pace, not synchronisation
            except OSError:  # the server cut the connection
                pass

        sender = threading.Thread(target=dribble)
        sender.start()
        status, _, payload = parse(read_all(sock))
        sock.shutdown(socket.SHUT_RDWR)
        sender.join()
    assert status == 408 and payload["kind"] == "timeout"
    assert sent < len(request)
    assert fake.actions == []


def test_300_stalled_connections_hold_at_most_max_connections_threads(fake):
    with serve_desktop(fake, max_connections=16, read_timeout=60) as running:
        threads_before = threading.active_count()
        stalled = [
            socket.create_connection(("127.0.0.1", running.port), timeout=30) for _ in range(300)
        ]
        try:
            for sock in stalled:
                sock.sendall(b"GET /v1/size HTTP/1.1\r\n")  # and never the rest
            # connections are accepted in order: the first 16 hold every worker, so each
            # later one is answered 503 at once rather than given a thread
            refused = [parse(read_all(sock)) for sock in stalled[16:]]
            assert {status for status, _, _ in refused} == {503}
            assert {payload["kind"] for _, _, payload in refused} == {"busy"}
            assert refused[0][1]["Retry-After"] == "1"
            assert running.active_connections == 16
            assert threading.active_count() <= threads_before + 16
            with pytest.raises(DesktopError, match="busy"):
                RemoteDesktop(running.url, token=running.token).execute(Type(text="x"))
        finally:
            for sock in stalled:
                sock.close()
        wait_until(lambda: running.active_connections == 0)
        RemoteDesktop(running.url, token=running.token).execute(Type(text="y"))
    assert fake.state()["name"] == "y"


def test_stop_cuts_stalled_connections(fake):
    running = serve_desktop(fake, read_timeout=60)
    with socket.create_connection(("127.0.0.1", running.port), timeout=30) as stalled:
        stalled.sendall(b"GET /v1/size HTTP/1.1\r\n")
        wait_until(lambda: running.active_connections == 1)
        running.stop()
        assert read_all(stalled) == b""  # closed by stop(), not after 60 s
    wait_until(lambda: running.active_connections == 0)


# --- actions, waits and screenshots ----------------------------------------------------


def test_a_wait_holds_neither_actions_nor_screenshots(fake):
    started, release = threading.Event(), threading.Event()

    def block_in_wait(desktop, action):
        if isinstance(action, Wait):
            started.set()
            assert release.wait(30)

    fake.on_action = block_in_wait
    with serve_desktop(fake) as running:
        waiting: list[int] = []
        body = b'{"version": 1, "action": {"type": "wait", "ms": 5000}}'
        client = threading.Thread(
            target=lambda: waiting.append(parse(exchange(running, post_bytes(running, body)))[0])
        )
        client.start()
        assert started.wait(30)
        remote = RemoteDesktop(running.url, token=running.token)
        remote.screenshot()
        remote.execute(Type(text="z"))
        assert not release.is_set() and waiting == []  # both done while the wait is on
        release.set()
        client.join()
    assert waiting == [200]
    assert fake.actions == [Wait(ms=5000), Type(text="z")]


def test_a_slow_action_never_holds_a_screenshot_and_actions_stay_one_at_a_time(fake):
    order: list[str] = []
    started, release = threading.Event(), threading.Event()

    def slow_click(desktop, action):
        order.append(f"{action.type} starts")
        if isinstance(action, Click):
            started.set()
            assert release.wait(30)
        order.append(f"{action.type} ends")

    fake.on_action = slow_click
    with serve_desktop(fake) as running:
        remote = RemoteDesktop(running.url, token=running.token)
        clicking = threading.Thread(target=remote.execute, args=(Click(x=200, y=75),))
        typing = threading.Thread(target=remote.execute, args=(Type(text="q"),))
        clicking.start()
        assert started.wait(30)
        typing.start()
        wait_until(lambda: running.active_connections == 2)  # the type is at the server
        image = remote.screenshot()  # while the click is still running
        order.append("screenshot")
        release.set()
        clicking.join()
        typing.join()
    assert image.size == (800, 600)
    assert order == ["click starts", "screenshot", "click ends", "type starts", "type ends"]


def test_a_wait_over_the_servers_cap_is_refused_and_remote_waits_stay_local(fake):
    with serve_desktop(fake, max_wait_ms=100) as running:
        body = b'{"version": 1, "action": {"type": "wait", "ms": 60000}}'
        status, _, payload = parse(exchange(running, post_bytes(running, body)))
        assert status == 400 and payload["kind"] == "action_rejected"
        assert "over this server's 100 ms limit" in payload["error"]
        RemoteDesktop(running.url, token=running.token).execute(Wait(ms=200))
    assert fake.actions == []  # the client waited; nothing went to the desktop


@pytest.mark.parametrize(
    "keys",
    [
        ["ctrl", "alt", "t"],
        ["alt", "F2"],
        ["Super_L"],
        ["super", "e"],
        ["meta", "r"],
        ["win", "d"],
        ["cmd", "space"],
        ["ctrl", "alt", "F3"],
        ["ctrl", "alt", "backspace"],
        ["ctrl", "alt", "shift", "delete"],
        ["ctrl", "escape"],
        ["alt", "space"],
        ["ctrl", "alt", "escape"],
        ["ctrl", "alt", "shift", "pagedown"],
        ["F12"],
        ["ctrl", "shift", "f12"],
        ["alt", "enter"],
        ["alt", "Return"],
        ["alt", "shift", "Return"],
        ["shift", "F10"],
        ["ctrl", "`"],
        ["alt", "p"],
        ["alt", "shift", "q"],
    ],
)
def test_the_default_deny_list_is_enforced_by_the_server(server, fake, keys):
    with pytest.raises(ActionRejected, match="deny list"):
        RemoteDesktop(server.url, token=server.token).execute(Keypress(keys=keys))
    assert fake.actions == []


@pytest.mark.parametrize(
    ("action", "kind", "message"),
    [
        ({"type": "keypress", "keys": ["a"] * 40_000}, "invalid_action", "at most 8 items"),
        ({"type": "keypress", "keys": ["shift"] * 9}, "invalid_action", "at most 8 items"),
        ({"type": "keypress", "keys": ["x" * 40_000]}, "invalid_action", "not a key name"),
        ({"type": "type", "text": "x" * 40_000}, "action_rejected", "over the 10000-character"),
        ({"type": "type", "text": "é" * 40_000}, "action_rejected", "over the 10000-character"),
        ({"type": "click", "x": "y" * 200_000, "y": 1}, "invalid_action", "characters]"),
        ({"type": "drag", "path": [[1, 2]] * 30_000 + ["z"]}, "invalid_action", "characters]"),
    ],
)  # fmt: skip
def test_huge_keys_and_text_are_refused_over_http_in_a_bounded_message(server, fake, action,
                                                                      kind, message):  # fmt: skip
    body = json.dumps({"version": 1, "action": action}).encode()
    status, payload = post_json(server.url + "/v1/execute", body, server.token)
    assert status == 400 and payload["kind"] == kind, payload
    assert message in payload["error"]
    assert len(payload["error"]) < 1_500
    assert fake.actions == []


def test_a_desktop_that_fails_is_a_json_500_on_every_endpoint():
    class Broken:
        @property
        def size(self):
            raise TimeoutError("the display stopped answering")

        def screenshot(self):
            raise OSError("the display went away")

        def execute(self, action):
            raise ConnectionError("the display went away")

    with serve_desktop(Broken()) as running:
        for path, message in [
            ("/v1/size", "TimeoutError: the display stopped answering"),
            ("/v1/screenshot", "OSError: the display went away"),
        ]:
            status, _, payload = parse(exchange(running, get_bytes(running, path)))
            assert status == 500 and payload["kind"] == "desktop_error"
            assert message in payload["error"]
        status, _, payload = parse(exchange(running, post_bytes(running, TYPE_X)))
        assert status == 500 and "the display stopped answering" in payload["error"]


@pytest.mark.parametrize(
    "bad",
    [
        {"max_connections": 0},
        {"read_timeout": 0},
        {"read_timeout": float("nan")},
        {"max_wait_ms": -1},
    ],
)
def test_bad_server_limits_are_usage_errors(fake, bad):
    with pytest.raises(UsageError, match=next(iter(bad))):
        serve_desktop(fake, **bad)


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_served_x_display_opens_one_screen_grabber_not_one_per_request():
    from gui_harness.desktop.virtual import VirtualDesktop

    with VirtualDesktop((320, 240)) as virtual, serve_desktop(virtual) as running:
        remote = RemoteDesktop(running.url, token=running.token)
        remote.screenshot()
        # each mss grabber is an X connection; one per request thread ran Xvfb out of clients
        grabbers = len(virtual.desktop._grabbers)
        for _ in range(20):
            assert remote.screenshot().size == (320, 240)
        assert len(virtual.desktop._grabbers) == grabbers
