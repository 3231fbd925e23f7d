"""Settling a served desktop: the server settles (POST /v1/settle) so RemoteDesktop does
not poll screenshots over HTTP; an older server without the endpoint is still polled."""

from __future__ import annotations

import json
import shutil
from typing import Any

import pytest

from gui_harness.actions import Click
from gui_harness.desktop import server as server_module
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.desktop.server import serve_desktop
from gui_harness.desktop.settle import wait_until_stable
from tests.support.desktop_api import post_json


class Counted:
    """The demo form, counting its screenshots; it cannot tell when it settled."""

    def __init__(self) -> None:
        self.form = FakeDesktop.demo_form()
        self.screenshots = 0
        self.asked: list[float] = []

    @property
    def size(self) -> tuple[int, int]:
        return self.form.size

    def screenshot(self) -> Any:
        self.screenshots += 1
        return self.form.screenshot()

    def execute(self, action: Any) -> None:
        self.form.execute(action)


class SelfSettling(Counted):
    """Reports its own settling, as X11Desktop does from DAMAGE events, and notes what it
    was asked."""

    def __init__(self, settles: bool) -> None:
        super().__init__()
        self.settles = settles

    def wait_settled(self, *, timeout: float) -> bool:
        self.asked.append(timeout)
        return self.settles


def settle(running, body: Any, token: str | None = None) -> tuple[int, dict]:
    return post_json(running.url + "/v1/settle", json.dumps(body).encode(), token or running.token)


@pytest.mark.parametrize("settles", [True, False])
def test_the_server_settles_with_its_desktop_s_own_events_and_the_client_takes_no_screenshot(
    settles,
):
    desktop = SelfSettling(settles)
    with serve_desktop(desktop, max_wait_ms=2_000) as running:
        remote = RemoteDesktop(running.url, token=running.token)
        remote.execute(Click(x=200, y=75))
        assert wait_until_stable(remote, timeout=1.5, frames=3) is settles
        assert remote.wait_settled(timeout=30) is settles
    assert desktop.asked == [1.5, 2.0]  # the second cut to the server's max_wait_ms
    assert desktop.screenshots == 0


def test_a_server_settles_a_desktop_without_events_by_comparing_its_frames():
    desktop = Counted()
    with serve_desktop(desktop) as running:
        remote = RemoteDesktop(running.url, token=running.token)
        assert remote.wait_settled(timeout=5) is True
        # the frames were compared on the server: one request, three screenshots or more
        assert desktop.screenshots >= 3


def test_an_older_server_without_settle_is_polled_with_screenshots(monkeypatch):
    monkeypatch.delitem(server_module._ENDPOINTS, "/v1/settle")  # what version-1 servers had
    desktop = SelfSettling(False)
    with serve_desktop(desktop) as running:
        remote = RemoteDesktop(running.url, token=running.token)
        assert remote.wait_settled(timeout=5) is True  # the form holds still
        taken = desktop.screenshots
        assert taken >= 3 and desktop.asked == []
        assert remote.wait_settled(timeout=5) is True
        assert desktop.screenshots >= taken + 3


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"timeout": 1}, 400, "version"),
        ({"version": 1}, 400, "timeout"),
        ({"version": 1, "timeout": "soon"}, 400, "'soon' is not a number"),
        ({"version": 1, "timeout": -1}, 400, "-1 is not a number"),
        ({"version": 1, "timeout": True}, 400, "True is not a number"),
        ({"version": 1, "timeout": 1e400}, 400, "inf is not a number"),
        ({"version": 2, "timeout": 1}, 409, "protocol version 2"),
        ([1], 400, "send"),
    ],
)
def test_a_bad_settle_request_gets_a_json_error_and_settles_nothing(body, status, message):
    desktop = SelfSettling(True)
    with serve_desktop(desktop) as running:
        code, payload = settle(running, body)
        assert (code, message in payload["error"]) == (status, True), payload
        code, payload = settle(running, {"version": 1, "timeout": 1}, token="x" * 32)
        assert code == 401 and payload["kind"] == "unauthorized"
    assert desktop.asked == [] and desktop.screenshots == 0


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_served_x_display_settles_from_damage_events_without_a_screenshot():
    from gui_harness.desktop.virtual import VirtualDesktop

    with VirtualDesktop((320, 240)) as virtual, serve_desktop(virtual) as running:
        remote = RemoteDesktop(running.url, token=running.token)
        remote.execute(Click(x=10, y=10))
        assert remote.wait_settled(timeout=5) is True
        assert virtual.desktop._grabbers == []  # no screen grabber was ever opened
