"""A desktop task's config command runs in the desktop's own environment: its display
and its buses, never a caller's AT-SPI bus address (with it, a Qt 6 app started from
it would publish its tree on the caller's bus, or on none)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gui_harness.bench.desktop import DesktopEpisode
from gui_harness.bench.desktop_spec import DesktopTask

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="no dbus-daemon"),
]


def _environment(path: Path) -> dict[str, str]:
    entries = path.read_bytes().split(b"\0")
    return dict(e.decode().split("=", 1) for e in entries if b"=" in e)


def test_a_config_command_gets_the_desktops_buses_not_the_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AT_SPI_BUS_ADDRESS", "unix:path=/nonexistent/callers-at-spi")
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/callers-session")
    task = DesktopTask.model_validate(
        {
            "id": "command-env",
            "app": "sh",
            "instruction": "nothing",
            "config": [
                {"type": "command", "argv": ["sh", "-c", "env -0 > {workdir}/env.bin"]},
            ],
            "evaluator": [{"type": "file_text", "path": "{workdir}/env.bin", "contains": []}],
            "size": [320, 240],
        }
    )
    with DesktopEpisode(task, workdir=tmp_path) as episode:
        desktop = episode.desktop
        assert desktop is not None and desktop.accessibility_bus is not None
        seen = _environment(tmp_path / "env.bin")
        assert "AT_SPI_BUS_ADDRESS" not in seen
        assert seen["DBUS_SESSION_BUS_ADDRESS"] == desktop.env["DBUS_SESSION_BUS_ADDRESS"]
        assert seen["DISPLAY"] == desktop.display
        assert "AT_SPI_BUS_ADDRESS" not in desktop.app_env()
