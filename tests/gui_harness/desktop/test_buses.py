"""The buses a VirtualDesktop starts for accessibility, and finding a display's bus."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from jeepney import DBusAddress, Properties
from jeepney.io.blocking import open_dbus_connection

from gui_harness.agent import _accessibility
from gui_harness.desktop._tether import group_gone, group_members
from gui_harness.desktop.buses import (
    CHROMIUM_ACCESSIBILITY_FLAG,
    find_accessibility_bus,
    with_accessibility_flag,
)
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.desktop.x11 import X11Desktop
from gui_harness.perception import Perception

_needs_xvfb = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]
_needs_buses = [
    *_needs_xvfb,
    pytest.mark.skipif(
        shutil.which("dbus-daemon") is None
        or not Path("/usr/libexec/at-spi-bus-launcher").exists(),
        reason="needs dbus-daemon and at-spi2-core (scripts/setup.sh)",
    ),
]


def needs_xvfb(test):
    for mark in _needs_xvfb:
        test = mark(test)
    return test


def needs_buses(test):
    for mark in _needs_buses:
        test = mark(test)
    return test


def test_chromium_and_electron_command_lines_get_the_renderer_switch(tmp_path):
    flag = CHROMIUM_ACCESSIBILITY_FLAG
    assert with_accessibility_flag(["chromium", "--app=x"]) == ["chromium", flag, "--app=x"]
    assert with_accessibility_flag(["/opt/google/chrome/google-chrome"])[1] == flag
    assert with_accessibility_flag(["electron", "."]) == ["electron", flag, "."]
    assert with_accessibility_flag(["chromium", flag]) == ["chromium", flag]
    assert with_accessibility_flag(["gtk3-widget-factory"]) == ["gtk3-widget-factory"]
    assert with_accessibility_flag([]) == []
    # an Electron app under any name: Chromium's resource files sit beside it
    app = tmp_path / "my-editor"
    app.write_text("#!/bin/sh\n")
    app.chmod(0o755)
    (tmp_path / "resources.pak").write_bytes(b"")
    assert with_accessibility_flag([str(app)]) == [str(app), flag]


@needs_buses
def test_a_virtual_desktop_runs_its_apps_on_a_private_bus_with_accessibility_on(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("AT_SPI_BUS_ADDRESS", "unix:path=/nonexistent/the-callers-a11y-bus")
    seen = tmp_path / "env.txt"
    app = App(
        argv=["sh", "-c", f"env > {seen}.part && mv {seen}.part {seen} && exec sleep 60"],
        ready=seen.exists,
    )
    with VirtualDesktop((640, 480), apps=[app]) as desktop:
        env = desktop.env
        session = env["DBUS_SESSION_BUS_ADDRESS"]
        assert session != os.environ.get("DBUS_SESSION_BUS_ADDRESS")
        # apps find the AT-SPI bus as in a desktop session, through the session bus or
        # the root window: Qt 6.4 registers nothing with AT_SPI_BUS_ADDRESS set
        assert "AT_SPI_BUS_ADDRESS" not in env
        assert desktop.accessibility_note is None
        assert _is_enabled(session)  # what Chromium waits for before it publishes a tree
        given = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
        for name in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS"):
            assert given[name] == env[name]
        assert "AT_SPI_BUS_ADDRESS" not in given  # not even the caller's own
        assert given["QT_LINUX_ACCESSIBILITY_ALWAYS_ON"] == "1"
        assert given["ACCESSIBILITY_ENABLED"] == "1"
        # an X11Desktop on the same display finds the bus the way AT-SPI clients do
        assert find_accessibility_bus(desktop.display) == desktop.accessibility_bus
        with X11Desktop(desktop.display) as other:
            assert other.accessibility_bus == desktop.accessibility_bus
        bus_pid = desktop.bus_pid
        assert bus_pid is not None and bus_pid not in desktop.pids
        members = group_members(bus_pid)
        assert bus_pid in members and len(members) >= 2  # dbus-daemon and what it activated
        groups = [*desktop.pids, bus_pid]  # each leads its group, with the group's watcher
        assert all(len(group_members(group)) >= 2 for group in groups)
    assert not any(_alive(pid) for pid in members)
    assert all(group_gone(group, 5) for group in groups)  # no watcher is left behind


# A process that starts a VirtualDesktop (an app whose child outlives nothing on its own,
# and the bus), reports what it started, then waits to be killed.
_OWNER = """
import json, sys, time
from gui_harness.desktop.virtual import App, VirtualDesktop
app = App(argv=["sh", "-c", "sleep 600 & wait"], ready=lambda: True)
desktop = VirtualDesktop((320, 240), apps=[app])
desktop.start()
print(json.dumps({"groups": [*desktop.pids, desktop.bus_pid]}), flush=True)
time.sleep(600)
"""


@needs_buses
def test_a_killed_owner_leaves_no_xvfb_app_or_bus_behind():
    with subprocess.Popen([sys.executable, "-c", _OWNER], stdout=subprocess.PIPE) as owner:
        try:
            assert owner.stdout is not None
            groups = json.loads(owner.stdout.readline())["groups"]
            assert None not in groups and len(groups) == 3  # Xvfb, the app, the bus
            started = [pid for group in groups for pid in group_members(group)]
            assert len(started) >= 6  # each with its watcher, the bus with what it activated
            owner.send_signal(signal.SIGKILL)  # no close(), no atexit
            owner.wait()
            assert all(group_gone(group, 20) for group in groups), [
                group_members(group) for group in groups
            ]
            assert not any(_alive(pid) for pid in started)
        finally:
            owner.kill()


@needs_xvfb
def test_without_dbus_the_desktop_runs_and_each_observation_says_why(tmp_path, monkeypatch):
    only_xvfb = tmp_path / "bin"
    only_xvfb.mkdir()
    (only_xvfb / "Xvfb").symlink_to(shutil.which("Xvfb"))
    monkeypatch.setenv("PATH", str(only_xvfb))
    with VirtualDesktop((320, 240)) as desktop:
        assert desktop.accessibility_bus is None
        assert desktop.accessibility_note is not None
        assert "dbus-daemon is not installed" in desktop.accessibility_note
        source = _accessibility(desktop)
        assert source is not None
        observation = Perception(ocr=False, accessibility=source).perceive(desktop.screenshot())
    assert observation.notes == (desktop.accessibility_note,)
    assert observation.accessibility is not None and observation.accessibility.components == ()


@needs_xvfb
def test_accessibility_can_be_turned_off_and_the_reason_is_kept():
    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.accessibility_bus is None
        assert desktop.accessibility_note == "accessibility=False was passed to VirtualDesktop"
        assert "DBUS_SESSION_BUS_ADDRESS" not in desktop.env
        assert len(desktop.pids) == 1  # Xvfb alone


def test_a_display_with_no_bus_anywhere_has_none(monkeypatch):
    monkeypatch.delenv("AT_SPI_BUS_ADDRESS", raising=False)
    monkeypatch.setenv("DISPLAY", ":4321")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/session-bus")
    assert find_accessibility_bus(":4321", timeout=0.5) is None  # no X server, dead bus


def _is_enabled(session: str) -> bool:
    status = DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Status")
    with open_dbus_connection(session) as bus:
        reply = bus.send_and_get_reply(Properties(status).get("IsEnabled"), timeout=5)
    return bool(reply.body[0][1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[0]
    except (OSError, IndexError):
        return "Z"
