"""X11Desktop: a real X display, captured with mss and driven with XTest input events.

Owns the translation of actions (already in screen pixels) into XTest events and of X11
and mss errors into DesktopError. Starting a private display is virtual.py's job; when
the screen settles after input, _damage.py's (asked through settle.py). Start at
X11Desktop.execute().
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gui_harness.errors import DesktopError
from openprogram.echo import echo
from openprogram.errors import UsageError

try:
    import mss
    import mss.exception
    import Xlib.display
    import Xlib.error
    from PIL import Image

    from gui_harness.desktop._damage import DamageWatch
    from gui_harness.desktop._input import XInput
    from gui_harness.desktop._windows import Window
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f'X11Desktop needs the gui extra ({exc.name} is missing): pip install "openprogram[gui]"'
    ) from exc

if TYPE_CHECKING:
    from gui_harness.actions import Action

__all__ = ["Window", "X11Desktop"]

_UNKNOWN = object()


class X11Desktop:
    """The X display `display` (default: $DISPLAY) as a Desktop.

    Input goes through the XTest extension, so applications see ordinary device events.
    Characters the keyboard map lacks are typed on borrowed spare keycodes (restored on
    close). Safe to share between threads: each thread gets its own mss grabber, and input
    is serialised. Raises DesktopError when the display cannot be opened or lacks XTest.
    """

    def __init__(self, display: str | None = None) -> None:
        name = display if display is not None else os.environ.get("DISPLAY", "")
        if not name:
            raise DesktopError("no X display given and $DISPLAY is unset; pass display=':N'")
        self.display = name
        with _translate_errors(name):
            self._x = Xlib.display.Display(name)
        try:
            if not self._x.has_extension("XTEST"):
                raise DesktopError(f"X display {name!r} lacks the XTEST extension needed for input")
            screen = self._x.screen()
            self._size = (int(screen.width_in_pixels), int(screen.height_in_pixels))
            self._root = screen.root
        except BaseException:
            self._x.close()
            raise
        self._input_lock = threading.Lock()
        self._input = XInput(self._x, name)
        self._grabbers_lock = threading.Lock()
        self._grabbers: list[Any] = []
        self._local = threading.local()
        self._closed = False
        self._accessibility_bus: str | object | None = _UNKNOWN
        self._watch: DamageWatch | object | None = _UNKNOWN
        self._early: tuple[Image.Image, int] | None = None  # a frame taken while settling
        self._frame_listeners: list[Callable[[Image.Image], object]] = []

    def __repr__(self) -> str:
        return f"X11Desktop(display={self.display!r})"

    def __enter__(self) -> X11Desktop:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the X screen in pixels."""
        return self._size

    @property
    def accessibility_bus(self) -> str | None:
        """The AT-SPI bus of this display's apps, or None: the user's own session bus is
        used when present (see buses.find_accessibility_bus); looked up once."""
        if self._accessibility_bus is _UNKNOWN:
            from gui_harness.desktop.buses import find_accessibility_bus

            self._accessibility_bus = find_accessibility_bus(self.display)
        return self._accessibility_bus  # type: ignore[return-value]  # _UNKNOWN replaced above

    def screenshot(self) -> Image.Image:
        """Capture the whole screen as an RGB image of exactly `size` pixels.

        The frame taken while the screen settled is returned when X reported no drawing
        since it was taken (it is then what a capture now would show).
        """
        early, self._early = self._early, None
        watch = self._damage()
        if early is not None and watch is not None and not watch.changed_since(early[1]):
            return early[0]
        return self._grab()

    def add_frame_listener(self, listener: Callable[[Image.Image], object]) -> None:
        """Call `listener(frame)` with each frame taken while the screen settles after an
        action (once it has been quiet for a few milliseconds), on the settling thread,
        so work on it overlaps the rest of the quiet spell. The frame may turn out stale:
        screenshot() then captures a new one."""
        self._frame_listeners.append(listener)

    def remove_frame_listener(self, listener: Callable[[Image.Image], object]) -> None:
        """Stop calling `listener`; no error when it was not added."""
        with contextlib.suppress(ValueError):
            self._frame_listeners.remove(listener)

    def grab(self, box: tuple[int, int, int, int]) -> Image.Image:
        """Capture the part `box` = (x, y, width, height) of the screen, clipped to it,
        as RGB: what dispatch compares with an observation before it clicks (a
        128×64 part costs a fraction of a whole capture). Raises UsageError for a box
        with nothing on the screen."""
        x, y, w, h = (int(v) for v in box)
        width, height = self._size
        left, top = max(0, x), max(0, y)
        right, bottom = min(width, x + w), min(height, y + h)
        if right <= left or bottom <= top:
            raise UsageError(f"box={echo(box)} has no part on the {width}x{height} screen")
        return self._grab((left, top, right - left, bottom - top))

    def _grab(self, box: tuple[int, int, int, int] | None = None) -> Image.Image:
        grabber = self._grabber()
        x, y, width, height = box or (0, 0, *self._size)
        with _translate_errors(self.display):
            shot = grabber.grab({"left": x, "top": y, "width": width, "height": height})
        # decoded straight from mss's buffer: `shot.bgra` would copy the pixels once more
        return Image.frombytes("RGB", shot.size, shot.raw, "raw", "BGRX")

    def execute(self, action: Action) -> None:
        """Perform one action whose coordinates are screen pixels; returns once it is sent.

        `wait` sleeps for its `ms`; `done` and `fail` do nothing. Raises InvalidAction for
        an unknown action type or key name, DesktopError when the X server fails.
        """
        kind = action.type
        if kind == "wait":
            time.sleep(max(0, action.ms) / 1000)  # type: ignore[union-attr]  # kind narrows it
            return
        if kind in ("done", "fail"):
            return
        self._check_open()
        self._early = None
        watch = self._damage()
        if watch is not None:
            watch.mark()
        with self._input_lock, _translate_errors(self.display):
            self._input.perform(action)
            self._x.sync()

    @property
    def held_keys(self) -> list[str]:
        """The keys key_down pressed and no key_up released yet (canonical names): what a
        Policy counts as held (`Policy.check(..., held=desktop.held_keys)`)."""
        return self._input.held_keys

    @property
    def held_buttons(self) -> list[str]:
        """The mouse buttons mouse_down pressed and no mouse_up released yet."""
        return self._input.held_buttons

    def release_held(self) -> None:
        """Release every key and button that key_down and mouse_down left held."""
        self._check_open()
        with self._input_lock, _translate_errors(self.display):
            self._input.release_held()
            self._x.sync()

    def wait_settled(self, *, timeout: float) -> bool:
        """Wait until the screen has answered the latest action and holds still (from X
        DAMAGE events: no polling); True then, False when `timeout` seconds pass first.

        Falls back to comparing screenshots (settle.compare_frames) on a server without
        the DAMAGE extension.
        """
        watch = self._damage()
        if watch is None:
            from gui_harness.desktop.settle import compare_frames

            return compare_frames(self, timeout=timeout)
        return watch.settle(timeout=timeout, early=lambda: self._take_early(watch))

    def visible_windows(self) -> list[Window]:
        """The viewable top-level windows, bottom to top, with their owners' pids, titles,
        boxes and frames (_windows.list_windows)."""
        from gui_harness.desktop._windows import list_windows

        self._check_open()
        with self._input_lock, _translate_errors(self.display):
            return list_windows(self._x, self._root)

    def raise_window(self, window: int) -> None:
        """Ask the window manager to raise and focus top-level `window` (an X id from
        visible_windows()); without one, raise it and give it the input focus."""
        self._window_request(window, "raise")

    def maximize_window(self, window: int) -> None:
        """Ask the window manager to maximise top-level `window` (needs one)."""
        self._window_request(window, "maximize")

    def _window_request(self, window: int, what: str) -> None:
        from gui_harness.desktop._windows import window_request

        self._check_open()
        with self._input_lock, _translate_errors(self.display):
            window_request(self._x, self._root, window, what, display=self.display)

    def close(self) -> None:
        """Close the X connection and every thread's grabber. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if isinstance(self._watch, DamageWatch):
            self._watch.close()
        with self._grabbers_lock:
            grabbers, self._grabbers = self._grabbers, []
        for grabber in grabbers:
            with contextlib.suppress(mss.exception.ScreenShotError):  # the server is gone
                grabber.close()
        with (
            contextlib.suppress(Xlib.error.XError, Xlib.error.ConnectionClosedError, OSError),
            self._input_lock,
        ):
            self._input.close()  # releases what is held, restores borrowed keycodes
        self._x.close()

    # -- internals -----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise DesktopError(f"{self!r} is closed")

    def _damage(self) -> DamageWatch | None:
        """The display's change watch, opened on first use; None without DAMAGE."""
        if self._watch is _UNKNOWN:
            with self._grabbers_lock:
                if self._watch is _UNKNOWN:
                    try:
                        self._watch = DamageWatch(self.display)
                    except DesktopError:
                        self._watch = None
        return self._watch  # type: ignore[return-value]  # _UNKNOWN replaced above

    def _take_early(self, watch: DamageWatch) -> None:
        """Take the settling screen's frame and hand it to the frame listeners."""
        count = watch.changes
        frame = self._grab()
        self._early = (frame, count)
        for listener in list(self._frame_listeners):
            listener(frame)

    def _grabber(self) -> Any:
        """This thread's mss instance: mss keeps per-thread X state, so one per thread."""
        self._check_open()
        grabber = getattr(self._local, "grabber", None)
        if grabber is None:
            with _translate_errors(self.display):
                grabber = _new_grabber(self.display)
            with self._grabbers_lock:
                self._grabbers.append(grabber)
            self._local.grabber = grabber
        return grabber


def _new_grabber(display: str) -> Any:
    # mss 10.2 deprecated the mss.mss() factory in favour of mss.MSS; 9.x only has the factory.
    factory = getattr(mss, "MSS", None) or mss.mss
    return factory(display=display)


@contextmanager
def _translate_errors(display: str) -> Iterator[None]:
    """The one place X11 and mss failures become DesktopError."""
    try:
        yield
    except (Xlib.error.DisplayError, Xlib.error.ConnectionClosedError) as exc:
        raise DesktopError(f"X display {display!r} is not reachable: {exc}") from exc
    except Xlib.error.XError as exc:
        raise DesktopError(f"X display {display!r} refused a request: {exc}") from exc
    except mss.exception.ScreenShotError as exc:
        raise DesktopError(f"cannot capture X display {display!r}: {exc}") from exc
