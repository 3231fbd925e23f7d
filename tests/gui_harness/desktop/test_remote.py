"""RemoteDesktop against serve_desktop over real HTTP on 127.0.0.1, with a FakeDesktop."""

from __future__ import annotations

import json
import socket
import threading

import numpy as np
import pytest

from gui_harness.actions import Click, Keypress, Policy, Type
from gui_harness.desktop.base import Desktop
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.desktop.server import PROTOCOL_VERSION, serve_desktop
from gui_harness.errors import ActionRejected, DesktopError, DesktopTimeout, InvalidAction
from openprogram.errors import UsageError
from tests.support.desktop_api import post_json


@pytest.fixture
def fake():
    return FakeDesktop.demo_form()


@pytest.fixture
def server(fake):
    with serve_desktop(fake) as running:
        yield running


def post(server, body: bytes) -> tuple[int, dict]:
    return post_json(server.url + "/v1/execute", body, server.token, timeout=5)


def test_remote_desktop_implements_the_protocol_and_reports_the_size(server):
    remote = RemoteDesktop(server.url, token=server.token)
    assert isinstance(remote, Desktop)
    assert remote.size == (800, 600)
    assert server.url.startswith("http://127.0.0.1:")


def test_screenshot_round_trips_pixel_for_pixel(server, fake):
    fake.execute(Click(x=170, y=140))
    image = RemoteDesktop(server.url, token=server.token).screenshot()
    assert image.mode == "RGB"
    assert np.array_equal(np.asarray(image), np.asarray(fake.screenshot()))


def test_execute_runs_actions_on_the_served_desktop(server, fake):
    remote = RemoteDesktop(server.url, token=server.token)
    remote.execute(Click(x=200, y=75))
    remote.execute(Type(text="Ada"))
    assert fake.state()["name"] == "Ada"
    assert fake.actions == [Click(x=200, y=75), Type(text="Ada")]


def test_policy_rejection_comes_back_as_action_rejected(server, fake):
    remote = RemoteDesktop(server.url, token=server.token)
    chord = Keypress(keys=["ctrl", "alt", "delete"])
    with pytest.raises(ActionRejected, match="deny list") as info:
        remote.execute(chord)
    assert info.value.action == chord
    with pytest.raises(ActionRejected, match="outside the 800x600 screen"):
        remote.execute(Click(x=5000, y=5))
    with pytest.raises(ActionRejected, match="unresolved"):
        remote.execute(Click(element=2))
    assert fake.actions == []


def test_server_uses_the_given_policy(fake):
    refuse_all = Policy(confirm=lambda action: False)
    with serve_desktop(fake, policy=refuse_all) as running, pytest.raises(ActionRejected):
        RemoteDesktop(running.url, token=running.token).execute(Click(x=1, y=1))
    assert fake.actions == []


def test_server_rejects_unknown_protocol_versions(server):
    body = json.dumps({"version": 99, "action": {"type": "wait"}}).encode()
    status, payload = post(server, body)
    assert status == 409
    assert payload["kind"] == "unsupported_version"
    assert payload["supported"] == [PROTOCOL_VERSION]
    assert "99" in payload["error"]


@pytest.mark.parametrize(
    ("body", "kind", "message"),
    [
        (b"{not json", "invalid_request", "not JSON"),
        (b'{"action": {"type": "wait"}}', "invalid_request", "version"),
        (b'{"version": 1, "action": {"type": "jump"}}', "invalid_action", "jump"),
        (b'{"version": 1, "action": {"type": "click", "x": 1}}', "invalid_action", "both x"),
        (b'{"version": 1, "action": {"type": "type", "text": ""}}', "action_rejected", "empty"),
    ],
)
def test_server_answers_bad_requests_with_400_and_a_json_error(server, fake, body, kind, message):
    status, payload = post(server, body)
    assert status == 400
    assert payload["kind"] == kind
    assert message in payload["error"]
    assert fake.actions == []


def test_invalid_action_from_the_server_is_raised_as_invalid_action(server):
    class Sneaky(Click):
        def model_dump(self, **kwargs):
            return {"type": "click", "x": 1}

    with pytest.raises(InvalidAction, match="both x and y"):
        RemoteDesktop(server.url, token=server.token).execute(Sneaky(x=1, y=1))


def test_desktop_failures_come_back_as_desktop_error(fake):
    def explode(desktop, action):
        raise RuntimeError("display went away")

    fake.on_action = explode
    with serve_desktop(fake) as running, pytest.raises(DesktopError, match="display went away"):
        RemoteDesktop(running.url, token=running.token).execute(Click(x=1, y=1))


def test_connection_refused_asks_whether_the_server_runs():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with pytest.raises(DesktopError, match=f"is the server running at {url}"):
        RemoteDesktop(url).screenshot()


def test_a_silent_server_raises_desktop_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(DesktopTimeout, match="did not answer"):
            RemoteDesktop(url, timeout=0.2).execute(Click(x=1, y=1))


def test_serving_a_non_loopback_host_needs_allow_remote(fake):
    with pytest.raises(UsageError, match="allow_remote=True"):
        serve_desktop(fake, host="0.0.0.0")
    with pytest.raises(UsageError, match="not an http"):
        RemoteDesktop("127.0.0.1:8000")


def test_stop_is_idempotent_and_frees_the_port(fake):
    running = serve_desktop(fake)
    running.stop()
    running.stop()
    with pytest.raises(DesktopError, match="is the server running"):
        _ = RemoteDesktop(running.url, token=running.token, timeout=2).size


def test_concurrent_clients_are_served_one_action_at_a_time(server, fake):
    remote = RemoteDesktop(server.url, token=server.token)
    remote.execute(Click(x=200, y=75))
    threads = [threading.Thread(target=remote.execute, args=(Type(text="ab"),)) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert fake.state()["name"] == "ab" * 8


def test_keys_held_over_the_wire_make_chords_the_servers_policy_checks(server, fake):
    from gui_harness.actions import KeyDown, KeyUp, MouseDown

    remote = RemoteDesktop(server.url, token=server.token)
    remote.execute(KeyDown(keys=["ctrl", "alt"]))
    remote.execute(MouseDown(x=10, y=10, button="right"))
    assert (remote.held_keys, remote.held_buttons) == (["ctrl", "alt"], ["right"])
    assert fake.held_keys == ["ctrl", "alt"]
    with pytest.raises(ActionRejected, match="'ctrl\\+alt\\+t' is not allowed"):
        remote.execute(Keypress(keys=["t"]))  # with the held keys: a terminal's chord
    with pytest.raises(InvalidAction, match="not all held"):
        remote.execute(KeyUp(keys=["shift"]))
    remote.release_held()
    assert (remote.held_keys, remote.held_buttons, fake.held_keys, fake.held_buttons) == (
        [], [], [], [],
    )  # fmt: skip
