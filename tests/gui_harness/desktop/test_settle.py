"""wait_until_stable on a real Xvfb display: a still screen settles, a changing one does not."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

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


_ANIMATION = """
import itertools, tkinter
root = tkinter.Tk()
root.geometry("300x120+20+20")
label = tkinter.Label(root, font=("DejaVu Sans", 32))
label.pack(fill="both", expand=True)
counter = itertools.count()
def tick():
    label.configure(text=str(next(counter)))
    root.after(15, tick)
tick()
root.mainloop()
"""


@needs_xvfb
def test_a_still_screen_settles_quickly(tmp_path: Path) -> None:
    with VirtualDesktop((800, 600), [demo_app(tmp_path / "state.json")]) as desktop:
        start = time.monotonic()
        assert wait_until_stable(desktop, timeout=5.0)
        assert time.monotonic() - start < 2.0


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


@needs_xvfb
def test_a_constantly_changing_screen_times_out_and_returns_false() -> None:
    with VirtualDesktop((640, 480), [[sys.executable, "-c", _ANIMATION]]) as desktop:
        start = time.monotonic()
        assert not wait_until_stable(desktop, timeout=0.6, interval=0.03)
        assert time.monotonic() - start >= 0.6


def test_fewer_than_two_frames_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="frames=1"):
        wait_until_stable(object(), frames=1)  # type: ignore[arg-type]
