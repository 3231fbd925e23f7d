"""Settling on a real Xvfb display: from DAMAGE events, and by comparing frames where the
server has no DAMAGE; a still screen settles, a changing one does not."""

from __future__ import annotations

import contextlib
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import Xlib.display
from PIL import Image

from gui_harness.actions import Click
from gui_harness.demo.app import demo_app, read_state
from gui_harness.desktop import virtual
from gui_harness.desktop._damage import DamageWatch
from gui_harness.desktop.settle import compare_frames, wait_until_stable
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.desktop.x11 import X11Desktop
from gui_harness.errors import DesktopError
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


def _click_subscribe(
    desktop: VirtualDesktop, state_path: Path
) -> tuple[dict[str, int], Image.Image]:
    """Click the demo form's Subscribe box; its box and the screen from before the click."""
    state = read_state(state_path)
    assert state is not None
    box: dict[str, int] = state["widgets"]["subscribe"]
    # the form as drawn and taking input (its state file comes first on a loaded machine)
    assert wait_until_stable(desktop, timeout=5.0, frames=3)
    before = desktop.screenshot()
    desktop.execute(Click(x=box["x"] + 10, y=box["y"] + box["h"] // 2))
    return box, before


@needs_xvfb
def test_the_screen_settles_after_a_click_changes_it(tmp_path: Path) -> None:
    with VirtualDesktop((800, 600), [demo_app(tmp_path / "state.json")]) as desktop:
        _, before = _click_subscribe(desktop, tmp_path / "state.json")
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


def _region(image: Image.Image, box: dict[str, int]) -> bytes:
    return image.crop((box["x"], box["y"], box["x"] + box["w"], box["y"] + box["h"])).tobytes()


@needs_xvfb
def test_settling_from_damage_waits_for_the_apps_redraw(tmp_path: Path) -> None:
    with VirtualDesktop((800, 600), [demo_app(tmp_path / "state.json")]) as desktop:
        box, before = _click_subscribe(desktop, tmp_path / "state.json")
        assert desktop.wait_settled(timeout=5.0)
        settled = desktop.screenshot()
        assert _region(settled, box) != _region(before, box)  # the tick is drawn already
        assert compare_frames(desktop.desktop, timeout=5.0)
        assert _region(desktop.screenshot(), box) == _region(settled, box)  # nothing after


@needs_xvfb
def test_a_screen_drawn_on_without_pause_does_not_settle_by_the_deadline() -> None:
    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.display is not None
        watch = DamageWatch(desktop.display)
        stop = threading.Event()

        def draw() -> None:
            painter = Xlib.display.Display(desktop.display)
            root = painter.screen().root
            gc = root.create_gc(foreground=0)
            colour = 0
            while not stop.is_set():
                colour = (colour + 0x102030) & 0xFFFFFF
                gc.change(foreground=colour)
                root.fill_rectangle(gc, 0, 0, 100, 100)
                painter.sync()
                stop.wait(0.01)
            painter.close()

        drawer = threading.Thread(target=draw)
        drawer.start()
        try:
            watch.mark()
            # quiet=0.2: only a pause 20 times the drawing interval would count as still
            assert not watch.settle(timeout=1.0, quiet=0.2)
        finally:
            stop.set()
            drawer.join()
            watch.close()


@needs_xvfb
def test_a_loaded_machine_waits_longer_for_an_apps_first_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On an idle machine the first change is waited for 0.1 s before any action was
    measured; an app that repaints 0.3 s late on a machine at 40x load (patience() at
    its bound, stretched further here) is still waited for, not taken as unchanged."""
    from gui_harness.desktop import _damage

    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.display is not None
        watch = DamageWatch(desktop.display)
        painter = Xlib.display.Display(desktop.display)

        def repaint() -> None:  # the late app: one repaint, then still
            root = painter.screen().root
            root.fill_rectangle(root.create_gc(foreground=0xFF0000), 0, 0, 50, 50)
            painter.sync()

        late = threading.Timer(0.3, repaint)
        try:
            watch.mark()
            assert watch.settle(timeout=60.0, quiet=0.5)  # the new desktop drawn and still
            monkeypatch.setattr(_damage, "patience", lambda: 50.0)  # 0.1 s -> 5 s
            watch.mark()
            before = watch.changes
            late.start()
            assert watch.settle(timeout=30.0)
            assert watch.changes > before, "settled before the late repaint came"
        finally:
            late.cancel()
            late.join()
            painter.close()
            watch.close()


@needs_xvfb
def test_no_time_to_settle_is_not_settled_and_a_still_screen_is() -> None:
    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.display is not None
        watch = DamageWatch(desktop.display)
        try:
            watch.mark()
            assert not watch.settle(timeout=0.0)
            assert watch.settle(timeout=5.0)  # no change at all within the first wait
        finally:
            watch.close()
            watch.close()  # twice is harmless


@needs_xvfb
def test_a_server_without_damage_settles_by_comparing_frames(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(virtual, "_XVFB_OPTIONS", (*virtual._XVFB_OPTIONS, "-extension", "DAMAGE"))
    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.display is not None
        with pytest.raises(DesktopError, match="lacks the DAMAGE extension"):
            DamageWatch(desktop.display)
        with X11Desktop(desktop.display) as screen:
            assert screen.wait_settled(timeout=5.0)
            assert not screen.wait_settled(timeout=0.0)


@contextlib.contextmanager
def _ticked_with_frames(
    tmp_path: Path,
) -> Iterator[tuple[VirtualDesktop, list[Image.Image], dict[str, int], Image.Image]]:
    """The demo form with a frame listener, its Subscribe box clicked and settled: the
    desktop, the frames taken while settling, the box and the screen from before."""
    with VirtualDesktop((800, 600), [demo_app(tmp_path / "state.json")]) as desktop:
        frames: list[Image.Image] = []
        desktop.add_frame_listener(frames.append)
        box, before = _click_subscribe(desktop, tmp_path / "state.json")
        assert desktop.wait_settled(timeout=5.0)
        yield desktop, frames, box, before


@needs_xvfb
def test_the_frame_taken_while_settling_goes_to_listeners_and_is_the_next_screenshot(
    tmp_path: Path,
) -> None:
    with _ticked_with_frames(tmp_path) as (desktop, frames, box, before):
        assert frames and _region(frames[-1], box) != _region(before, box)  # the tick drawn
        assert desktop.screenshot() is frames[-1]  # nothing drawn since: no new capture
        assert desktop.screenshot() is not frames[-1]  # used once
        desktop.remove_frame_listener(frames.append)
        desktop.remove_frame_listener(frames.append)  # twice is harmless
        count = len(frames)
        _click_subscribe(desktop, tmp_path / "state.json")
        assert desktop.wait_settled(timeout=5.0)
        assert len(frames) == count


@needs_xvfb
def test_a_frame_taken_while_settling_is_not_returned_once_the_screen_changed_after_it(
    tmp_path: Path,
) -> None:
    with _ticked_with_frames(tmp_path) as (desktop, frames, box, _):
        assert desktop.display is not None
        painter = Xlib.display.Display(desktop.display)
        try:
            root = painter.screen().root
            root.fill_rectangle(root.create_gc(foreground=0xFF0000), 0, 0, 20, 20)
            painter.sync()
        finally:
            painter.close()
        shot = desktop.screenshot()
        assert shot is not frames[-1]
        assert shot.getpixel((5, 5)) == (255, 0, 0)
        assert _region(shot, box) == _region(frames[-1], box)


@needs_xvfb
def test_a_new_action_drops_the_frame_taken_while_settling(tmp_path: Path) -> None:
    with _ticked_with_frames(tmp_path) as (desktop, frames, _, _):
        desktop.execute(Click(x=1, y=1))  # on the bare root: nothing redraws
        assert desktop.screenshot() is not frames[-1]


@needs_xvfb
def test_settle_calls_early_again_after_a_change_at_most_twice_and_counts_changes() -> None:
    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.display is not None
        watch = DamageWatch(desktop.display)
        painter = Xlib.display.Display(desktop.display)
        root = painter.screen().root
        colours = iter(range(0x10, 0xFF))
        calls: list[int] = []

        def paint() -> None:
            root.fill_rectangle(root.create_gc(foreground=next(colours)), 0, 0, 50, 50)
            painter.sync()

        def early() -> None:  # each early frame is made stale by a drawing right after it
            calls.append(watch.changes)
            paint()

        try:
            watch.mark()
            paint()
            assert watch.settle(timeout=5.0, early=early)
            assert len(calls) == 2  # again after the change it saw, then no more
            assert watch.changed_since(calls[0]) and watch.changed_since(calls[1])
            count = watch.changes
            assert not watch.changed_since(count)
            paint()
            assert watch.changed_since(count)
        finally:
            painter.close()
            watch.close()


@needs_xvfb
def test_a_change_made_while_a_slow_early_frame_was_taken_is_seen() -> None:
    # a loaded machine: the early frame's work outlasts the quiet spell; the drawing made
    # meanwhile must still count (the screen was not still), not be left unread
    with VirtualDesktop((320, 240), accessibility=False) as desktop:
        assert desktop.display is not None
        watch = DamageWatch(desktop.display)
        painter = Xlib.display.Display(desktop.display)
        root = painter.screen().root
        colours = iter(range(0x10, 0xFF))
        calls: list[int] = []

        def paint() -> None:
            root.fill_rectangle(root.create_gc(foreground=next(colours)), 0, 0, 50, 50)
            painter.sync()

        def slow_early() -> None:
            calls.append(watch.changes)
            if len(calls) == 1:
                paint()
                time.sleep(0.2)  # the frame's work, slower than the quiet spell

        try:
            watch.mark()
            paint()
            assert watch.settle(timeout=5.0, early=slow_early)
            assert len(calls) == 2  # the change it made was read: an early frame again
            assert watch.changed_since(calls[0]) and not watch.changed_since(calls[1])
        finally:
            painter.close()
            watch.close()
