"""Parts of the screen over HTTP (`POST /v1/grab`): what dispatch compares with an
observation before it clicks, without sending the whole screen. A served X display
grabs the part itself; a desktop without grab has it cut from a screenshot; an older
server without the endpoint is sent whole screenshots; bad boxes are refused."""

from __future__ import annotations

import json
import shutil
from typing import Any

import numpy as np
import pytest

from gui_harness.demo.app import demo_app
from gui_harness.desktop import server as server_module
from gui_harness.desktop.remote import RemoteDesktop
from gui_harness.desktop.server import serve_desktop
from gui_harness.desktop.virtual import VirtualDesktop
from openprogram.errors import UsageError
from tests.gui_harness.desktop.test_remote_settle import Counted
from tests.support.desktop_api import post_json

BOX = (150, 100, 300, 120)


def _same(a: Any, b: Any) -> bool:
    return a.size == b.size and np.array_equal(np.asarray(a), np.asarray(b))


def _cut(image: Any, box: tuple[int, int, int, int]) -> Any:
    x, y, w, h = box
    return image.crop((x, y, x + w, y + h))


@pytest.mark.x11
@pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed")
def test_a_served_x_display_sends_the_part_it_grabs_itself(tmp_path) -> None:
    with VirtualDesktop((800, 600), [demo_app(tmp_path / "state.json")]) as desktop:
        whole = desktop.screenshot()
        assert _same(desktop.grab(BOX), _cut(whole, BOX))
        assert desktop.grab((700, 550, 300, 300)).size == (100, 50)  # clipped to the screen
        with serve_desktop(desktop) as running:
            remote = RemoteDesktop(running.url, token=running.token)
            assert _same(remote.grab(BOX), _cut(whole, BOX))
            assert remote.grab((-20, -10, 50, 40)).size == (30, 30)


def test_a_desktop_without_grab_has_the_part_cut_from_a_screenshot() -> None:
    desktop = Counted()
    with serve_desktop(desktop) as running:  # type: ignore[arg-type]
        remote = RemoteDesktop(running.url, token=running.token)
        part = remote.grab(BOX)
    assert _same(part, _cut(desktop.form.screenshot(), BOX)) and desktop.screenshots == 1
    with pytest.raises(UsageError, match="no part on the 800x600 screen"):
        remote.grab((900, 0, 10, 10))


def test_an_older_server_without_grab_is_sent_whole_screenshots(monkeypatch) -> None:
    monkeypatch.delitem(server_module._ENDPOINTS, "/v1/grab")  # what earlier servers had
    desktop = Counted()
    with serve_desktop(desktop) as running:  # type: ignore[arg-type]
        remote = RemoteDesktop(running.url, token=running.token)
        assert _same(remote.grab(BOX), _cut(desktop.form.screenshot(), BOX))
        assert _same(remote.grab(BOX), _cut(desktop.form.screenshot(), BOX))
    assert remote._server_grabs is False  # asked once, then whole screenshots


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"box": [0, 0, 10, 10]}, 400, "version"),
        ({"version": 1}, 400, "box"),
        ({"version": 1, "box": [0, 0, 10]}, 400, "is not [x, y, width, height]"),
        ({"version": 1, "box": [0, 0, 10.5, 10]}, 400, "is not [x, y, width, height]"),
        ({"version": 1, "box": [-1, 0, 10, 10]}, 400, "inside the 800x600 screen"),
        ({"version": 1, "box": [790, 0, 20, 10]}, 400, "inside the 800x600 screen"),
        ({"version": 1, "box": [0, 0, 0, 10]}, 400, "inside the 800x600 screen"),
        ({"version": 1, "box": [True, 0, 10, 10]}, 400, "is not [x, y, width, height]"),
        ({"version": 1, "box": "0,0,10,10"}, 400, "is not [x, y, width, height]"),
        ({"version": 2, "box": [0, 0, 10, 10]}, 409, "protocol version 2"),
    ],
)
def test_a_bad_grab_request_gets_a_json_error_and_grabs_nothing(body, status, message) -> None:
    desktop = Counted()
    with serve_desktop(desktop) as running:  # type: ignore[arg-type]
        code, payload = post_json(
            running.url + "/v1/grab", json.dumps(body).encode(), running.token
        )
        assert (code, message in payload["error"]) == (status, True), payload
        code, payload = post_json(
            running.url + "/v1/grab", json.dumps({"version": 1, "box": [0, 0, 9, 9]}).encode(),
            "x" * 32,
        )  # fmt: skip
        assert code == 401 and payload["kind"] == "unauthorized"
    assert desktop.screenshots == 0
