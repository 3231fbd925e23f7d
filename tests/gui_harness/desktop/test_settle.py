"""wait_until_stable on a real Xvfb display: a still screen settles, a changing one does not."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from gui_harness.actions import Click
from gui_harness.demo.app import demo_app, read_state
from gui_harness.desktop.settle import wait_until_stable
from gui_harness.desktop.virtual import VirtualDesktop
from openprogram.errors import UsageError

_skip_without_xvfb = pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb)"
)


def needs_xvfb(test: Callable[..., None]) -> Callable[..., None]:
    """Mark a test x11 and skip it when there is no Xvfb to run it on."""
    return pytest.mark.x11(_skip_without_xvfb(test))


@needs_xvfb
def test_a_still_screen_settles_quickly(tmp_path: Path) -> None:
    with VirtualDesktop((800, 600), [demo_app(tmp_path / "state.json")]) as desktop:
        assert wait_until_stable(desktop, timeout=5.0)


@needs_xvfb
def test_the_screen_settles_after_a_click_changes_it(tmp_path: Path) -> None:
    state_path = tmp_path / "state.json"
    with VirtualDesktop((800, 600), [demo_app(state_path)]) as desktop:
        state = read_state(state_path)
        assert state is not None
        box = state["widgets"]["subscribe"]
        before = desktop.screenshot()
        desktop.execute(Click(x=box["x"] + 10, y=box["y"] + box["h"] // 2))
        assert wait_until_stable(desktop, timeout=5.0, frames=3)
        assert desktop.screenshot().tobytes() != before.tobytes()


class _EverChanging:
    """A desktop whose every screenshot differs from the last: a screen that never settles,
    without depending on an animation getting the CPU in time on a loaded machine."""

    size = (64, 48)

    def __init__(self) -> None:
        self.shots = 0

    def screenshot(self) -> Image.Image:
        self.shots += 1
        return Image.new("RGB", self.size, (self.shots * 37 % 256, self.shots % 256, 0))

    def execute(self, action: object) -> None:
        raise AssertionError("wait_until_stable only looks")


def test_a_constantly_changing_screen_times_out_and_returns_false() -> None:
    desktop = _EverChanging()
    start = time.monotonic()

    assert not wait_until_stable(desktop, timeout=0.3, interval=0.01)  # type: ignore[arg-type]

    assert time.monotonic() - start >= 0.3
    assert desktop.shots >= 3  # it kept looking until the deadline


def test_fewer_than_two_frames_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="frames=1"):
        wait_until_stable(object(), frames=1)  # type: ignore[arg-type]
