"""Who may use `openprogram sessions serve` and what one client may hold, against the
real server process: the token on every request, a browser's Origin only its own, its
own Host, GET only, a bounded number of live streams, and a stream idle too long ends
(the browser reconnects with Last-Event-ID and misses nothing).
"""

from __future__ import annotations

import http.client
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from openprogram import Session
from openprogram.cli import cli
from tests.support.children import ROOT


@pytest.fixture
def store(tmp_path) -> str:  # type: ignore[no-untyped-def]
    path = str(tmp_path / "sessions.db")
    with Session(path, id="one") as session:
        session.submit("hello")
    return path


def ask(port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"):  # type: ignore[no-untyped-def]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    connection.request(method, path, headers=headers or {})
    reply = connection.getresponse()
    return reply.status, reply.read().decode(), dict(reply.getheaders())


def test_the_printed_url_opens_the_list_and_each_page_needs_the_token(store, serve) -> None:
    server = serve(store)
    status, body, headers = ask(server.port, f"/?token={server.token}")
    assert status == 200 and 'data-session="one"' in body
    assert headers["Referrer-Policy"] == "no-referrer"
    assert "connect-src 'self'" in headers["Content-Security-Policy"]
    status, body, _ = ask(server.port, "/session/one", {"Authorization": f"Bearer {server.token}"})
    assert status == 200 and "session one" in body

    for path, headers in [
        ("/", {}),
        ("/session/one", {}),
        ("/session/one/events", {}),
        ("/session/one/view", {}),
        (f"/?token={server.token[:-1]}x", {}),
        ("/?token=", {}),
        ("/", {"Authorization": f"Bearer {server.token}x"}),
        ("/", {"Authorization": f"Basic {server.token}"}),
    ]:
        status, body, reply_headers = ask(server.port, path, headers)
        assert status == 401, (path, headers)
        assert "needs its token" in body and reply_headers["WWW-Authenticate"].startswith("Bearer")
        assert server.token not in body


def test_pages_of_other_sites_and_other_hosts_are_refused(store, serve) -> None:
    server = serve(store)
    with_token = f"/session/one/events?token={server.token}"
    for headers in [
        {"Origin": "http://evil.example"},
        {"Origin": f"http://127.0.0.1:{server.port + 1}"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ]:
        status, body, _ = ask(server.port, with_token, headers)
        assert status == 403 and "other sites are refused" in body, headers
    status, _, _ = ask(server.port, with_token, {"Host": f"attacker.example:{server.port}"})
    assert status == 421  # DNS rebinding: a name the attacker controls
    status, _, _ = ask(server.port, f"/?token={server.token}", method="POST")
    assert status == 405
    # its own page's requests pass (what the browser test's EventSource and fetch send)
    own = {"Origin": server.origin, "Sec-Fetch-Site": "same-origin"}
    status, body, _ = ask(server.port, f"/session/one/view?token={server.token}", own)
    assert status == 200 and "session one" in body


def test_streams_are_bounded_and_an_idle_one_ends(store, serve) -> None:
    server = serve(store, "--max-streams", "1", "--idle", "1")
    first = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    first.request("GET", f"/session/one/events?token={server.token}")
    stream = first.getresponse()
    assert stream.status == 200 and (stream.getheader("Content-Type") or "").startswith(
        "text/event-stream"
    )
    assert stream.readline() == b"retry: 1000\n"
    while stream.readline() != b"event: node\n":
        pass
    node = json.loads(stream.readline().decode().removeprefix("data: "))
    assert (node["seq"], node["kind"], node["status"]) == (1, "user", "completed")

    status, body, _ = ask(server.port, f"/session/one/events?token={server.token}")
    assert status == 503 and "1 live streams are open" in body
    status, _, _ = ask(server.port, f"/?token={server.token}")
    assert status == 200  # pages still load

    assert stream.read() in (b"", b"\n")  # no event for --idle 1 s: the server ends it
    first.close()
    status, body, _ = ask(
        server.port, f"/session/one/events?token={server.token}", {"Last-Event-ID": "999"}
    )  # the slot is free again; this one would wait (its Last-Event-ID is past the end)
    assert status == 200
    missing, _, _ = ask(server.port, f"/session/nope/view?token={server.token}")
    assert missing == 404


def test_a_stream_resumes_after_the_last_event_id_and_the_list_counts_states(
    tmp_path, serve
) -> None:
    path = str(tmp_path / "sessions.db")
    with Session(path, id="two") as session:
        session.submit("first")
        session.submit("second")
    server = serve(path, "--idle", "1")
    status, body, _ = ask(
        server.port, f"/session/two/events?token={server.token}", {"Last-Event-ID": "1"}
    )  # what a reconnecting EventSource sends; the stream ends once idle for 1 s
    assert status == 200
    events = [json.loads(line[6:]) for line in body.splitlines() if line.startswith("data: ")]
    assert [(e["seq"], e["status"]) for e in events] == [(2, "completed")]
    assert "id: 2\nevent: node\n" in body
    status, body, _ = ask(server.port, f"/?token={server.token}")
    assert '<tr data-session="two">' in body
    assert '<td class="op-state">finished</td>' in body and "<td>2</td>" in body


def test_a_store_that_is_not_there_is_an_error_not_a_new_empty_file(tmp_path) -> None:
    missing = tmp_path / "typo.db"
    result = subprocess.run(
        [sys.executable, "-m", "openprogram", "sessions", "serve", str(missing)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1 and "no session store at" in result.stderr
    assert not missing.exists()
    runner = CliRunner()
    for given in (["--store", str(missing)], []):  # as the other commands take it, or env
        named = runner.invoke(cli, ["sessions", "serve", *given],
                              env={"OPENPROGRAM_STORE": str(missing)})  # fmt: skip
        assert named.exit_code == 1 and "no session store at" in named.output, named.output
    twice = runner.invoke(cli, ["sessions", "serve", str(missing), "--store", str(missing)])
    assert twice.exit_code == 2 and "give the store once" in twice.output
    assert not missing.exists()
