"""X11Desktop: a real X display, captured with mss and driven with XTest input events.

Owns the translation of actions (already in screen pixels) into XTest events and of X11
and mss errors into DesktopError. Starting a private display is virtual.py's job; when
the screen settles after input, _damage.py's (asked through settle.py). Start at
X11Desktop.execute().
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from gui_harness.errors import DesktopError, InvalidAction
from openprogram.echo import echo
from openprogram.errors import UsageError

try:
    import mss
    import mss.exception
    import Xlib.display
    import Xlib.error
    from PIL import Image
    from Xlib import XK, X

    from gui_harness.desktop._damage import DamageWatch
    from gui_harness.desktop._windows import Window
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError(
        f'X11Desktop needs the gui extra ({exc.name} is missing): pip install "openprogram[gui]"'
    ) from exc

if TYPE_CHECKING:
    from gui_harness.actions import Action

__all__ = ["Window", "X11Desktop"]

_KEYSYM_NAMES = {
    "ctrl": "Control_L",
    "alt": "Alt_L",
    "shift": "Shift_L",
    "super": "Super_L",
    "enter": "Return",
    "tab": "Tab",
    "escape": "Escape",
    "backspace": "BackSpace",
    "delete": "Delete",
    "insert": "Insert",
    "up": "Up",
    "down": "Down",
    "left": "Left",
    "right": "Right",
    "home": "Home",
    "end": "End",
    "pageup": "Prior",
    "pagedown": "Next",
    "space": "space",
    **{f"f{n}": f"F{n}" for n in range(1, 13)},
}
_CHAR_KEYSYMS = {"\n": "Return", "\r": "Return", "\t": "Tab", " ": "space"}
_BUTTONS = {"left": 1, "middle": 2, "right": 3}
_SCROLL_BUTTONS = {(0, -1): 4, (0, 1): 5, (-1, 0): 6, (1, 0): 7}
_DRAG_STEP_PIXELS = 20
_DRAG_STEP_PAUSE_S = 0.005
_THAW_TIMEOUT_S = 0.25
_THAW_POLL_S = 0.002
_REMAP_PAUSE_S = 0.05
_EVICT_PAUSE_S = 0.25
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
        self._grabbers_lock = threading.Lock()
        self._grabbers: list[Any] = []
        self._local = threading.local()
        # keysym -> (keycode, needs_shift) on borrowed keycodes, least recently used first
        self._borrowed: dict[int, tuple[int, bool]] = {}
        self._spare: list[int] | None = None
        self._keys_sent = False
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
        handler = _HANDLERS.get(kind)
        if handler is None:
            raise InvalidAction(f"action type {kind!r} is not one X11Desktop can perform")
        self._check_open()
        self._early = None
        watch = self._damage()
        if watch is not None:
            watch.mark()
        with self._input_lock, _translate_errors(self.display):
            handler(self, action)
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
        with contextlib.suppress(Xlib.error.XError, Xlib.error.ConnectionClosedError, OSError):
            for code in {code for code, _ in self._borrowed.values()}:
                self._x.change_keyboard_mapping(code, [(X.NoSymbol, X.NoSymbol)])
            self._x.sync()
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

    def _motion(self, x: int, y: int) -> None:
        self._x.xtest_fake_input(X.MotionNotify, x=int(x), y=int(y))

    def _button(self, button: int, *, press: bool) -> None:
        self._x.xtest_fake_input(X.ButtonPress if press else X.ButtonRelease, button)
        if not press:
            self._await_pointer_thawed()

    def _await_pointer_thawed(self) -> None:
        """Wait, bounded, until no client holds the pointer grabbed. A window manager grabs
        clicks on its clients (to focus and raise on click) and replays them once it has
        looked: keys sent before that would reach the app before the click that focuses
        its field. The protocol says only that someone holds a grab, not who: an app's own
        (an open menu) costs this wait's bound once."""
        deadline = time.monotonic() + _THAW_TIMEOUT_S
        while True:
            status = self._root.grab_pointer(
                False, 0, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime
            )
            if status == X.GrabSuccess:
                self._x.ungrab_pointer(X.CurrentTime)
                self._x.sync()
                return
            if time.monotonic() > deadline:
                return
            time.sleep(_THAW_POLL_S)  # the server sends no event when a grab ends

    def _key(self, keycode: int, *, press: bool) -> None:
        self._keys_sent = True
        self._x.xtest_fake_input(X.KeyPress if press else X.KeyRelease, keycode)

    def _click(self, action: Any) -> None:
        button = _BUTTONS.get(getattr(action, "button", "left") or "left")
        if button is None:
            raise InvalidAction(f"button={action.button!r} is not one of 'left', 'right', 'middle'")
        self._motion(action.x, action.y)
        self._button(button, press=True)
        self._button(button, press=False)

    def _double_click(self, action: Any) -> None:
        self._motion(action.x, action.y)
        for _ in range(2):
            self._button(1, press=True)
            self._button(1, press=False)

    def _move(self, action: Any) -> None:
        self._motion(action.x, action.y)

    def _drag(self, action: Any) -> None:
        path = [(int(x), int(y)) for x, y in action.path]
        if len(path) < 2:
            raise InvalidAction(f"a drag needs at least two points, got path={action.path!r}")
        self._motion(*path[0])
        self._button(1, press=True)
        self._x.sync()
        for (x0, y0), (x1, y1) in itertools.pairwise(path):
            steps = max(1, math.ceil(math.dist((x0, y0), (x1, y1)) / _DRAG_STEP_PIXELS))
            for step in range(1, steps + 1):
                fraction = step / steps
                self._motion(round(x0 + (x1 - x0) * fraction), round(y0 + (y1 - y0) * fraction))
                self._x.sync()
                time.sleep(_DRAG_STEP_PAUSE_S)
        self._button(1, press=False)

    def _scroll(self, action: Any) -> None:
        if action.x is not None and action.y is not None:
            self._motion(action.x, action.y)
        for axis, amount in (((0, 1), action.scroll_y), ((1, 0), action.scroll_x)):
            if not amount:
                continue
            sign = 1 if amount > 0 else -1
            button = _SCROLL_BUTTONS[(axis[0] * sign, axis[1] * sign)]
            for _ in range(abs(int(amount))):
                self._button(button, press=True)
                self._button(button, press=False)

    def _keypress(self, action: Any) -> None:
        keys = [self._keycode(name) for name in action.keys]
        if not keys:
            raise InvalidAction("a keypress needs at least one key, got keys=[]")
        shift = self._keycode("shift")[0]
        wants_shift = any(needs_shift for _, needs_shift in keys)
        pressed = [shift] if wants_shift and shift not in (code for code, _ in keys) else []
        pressed += [code for code, _ in keys]
        for code in pressed:
            self._key(code, press=True)
        for code in reversed(pressed):
            self._key(code, press=False)

    def _type(self, action: Any) -> None:
        shift = self._keycode("shift")[0]
        text, start = action.text, 0
        while start < len(text):
            keys = self._prepare(text, start)
            for code, needs_shift in keys:
                if needs_shift:
                    self._key(shift, press=True)
                self._key(code, press=True)
                self._key(code, press=False)
                if needs_shift:
                    self._key(shift, press=False)
            start += len(keys)

    def _prepare(self, text: str, start: int) -> list[tuple[int, bool]]:
        """Keys for text[start:], as far as borrowing never evicts a key already chosen."""
        keys: list[tuple[int, bool]] = []
        borrowed = False
        for char in text[start:]:
            keysym = _char_keysym(char)
            key = self._mapped(keysym)
            if key is None:
                key = self._borrow(keysym, char, keep={code for code, _ in keys})
                if key is None:
                    break
                borrowed = True
            keys.append(key)
        if borrowed:
            self._let_clients_remap()
        return keys

    def _keycode(self, name: str) -> tuple[int, bool]:
        """The keycode for a key name and whether Shift must be held to get it."""
        key = name if len(name) == 1 else name.lower()
        if key in _KEYSYM_NAMES:
            keysym = XK.string_to_keysym(_KEYSYM_NAMES[key])
        elif len(key) == 1:
            keysym = _char_keysym(key)
        else:
            keysym = XK.string_to_keysym(name)  # an X keysym name such as "Caps_Lock"
        if not keysym:
            raise InvalidAction(
                f"key {name!r} is not a key name; use a single character or one of "
                f"{', '.join(sorted(_KEYSYM_NAMES))}"
            )
        return self._lookup(keysym)

    def _lookup(self, keysym: int) -> tuple[int, bool]:
        """(keycode, needs_shift) for a keysym, borrowing a spare keycode if it has none."""
        key = self._mapped(keysym)
        if key is None:
            key = self._borrow(keysym, None, keep=set())
            assert key is not None  # with nothing to keep, something can always be evicted
            self._let_clients_remap()
        return key

    def _mapped(self, keysym: int) -> tuple[int, bool] | None:
        """(keycode, needs_shift) if the keyboard map has the keysym on its first two levels."""
        if keysym in self._borrowed:
            self._borrowed[keysym] = self._borrowed.pop(keysym)  # most recently used last
            return self._borrowed[keysym]
        code = self._x.keysym_to_keycode(keysym)
        if code:
            if self._x.keycode_to_keysym(code, 0) == keysym:
                return code, False
            if self._x.keycode_to_keysym(code, 1) == keysym:
                return code, True
        return None

    def _borrow(self, keysym: int, char: str | None, *, keep: set[int]) -> tuple[int, bool] | None:
        """Map `keysym` (with its other case on the shift level) onto a keycode with no symbols.

        Takes a never-used spare, else evicts the least recently used borrowed keycode not
        in `keep`; returns None when every candidate is kept. Borrowed keycodes stay mapped
        until close(): restoring right after typing, as `xdotool type` does, loses keys in
        clients that read the new map late.
        """
        if self._spare is None:
            info = self._x.display.info
            first, count = info.min_keycode, info.max_keycode - info.min_keycode + 1
            rows = self._x.get_keyboard_mapping(first, count)
            self._spare = [first + i for i, row in enumerate(rows) if not any(row)]
        if self._spare:
            code = self._spare.pop()
        else:
            codes = [code for code, _ in self._borrowed.values()]
            if not codes:
                raise DesktopError(
                    f"cannot type keysym {keysym:#x}: the keyboard map of {self.display} has "
                    "no key for it and no spare keycode to borrow"
                )
            code = next((code for code in codes if code not in keep), 0)
            if not code:
                return None
            self._borrowed = {k: v for k, v in self._borrowed.items() if v[0] != code}
            if self._keys_sent:
                # Clients translate keys with the map they hold when they process them, so
                # keys already sent must be consumed before a keycode changes meaning.
                self._x.sync()
                time.sleep(_EVICT_PAUSE_S)
                self._keys_sent = False
        lower, upper = _case_pair(keysym, char)
        self._x.change_keyboard_mapping(code, [(lower, upper)])
        self._borrowed[lower] = (code, False)
        if upper != lower:
            self._borrowed[upper] = (code, True)
        return self._borrowed[keysym]

    def _let_clients_remap(self) -> None:
        # Clients such as Tk translate key events as they read them, possibly before they
        # handle the MappingNotify queued just ahead; a pause lets them fetch the new map.
        self._x.sync()
        time.sleep(_REMAP_PAUSE_S)


_HANDLERS = {
    "click": X11Desktop._click,
    "double_click": X11Desktop._double_click,
    "move": X11Desktop._move,
    "drag": X11Desktop._drag,
    "scroll": X11Desktop._scroll,
    "keypress": X11Desktop._keypress,
    "type": X11Desktop._type,
}


def _char_keysym(char: str) -> int:
    if char in _CHAR_KEYSYMS:
        return XK.string_to_keysym(_CHAR_KEYSYMS[char])
    code = ord(char)
    if 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xFF:
        return code  # Latin-1 keysyms equal their code points
    return 0x01000000 | code  # the Unicode keysym range


def _case_pair(keysym: int, char: str | None) -> tuple[int, int]:
    """The (unshifted, shifted) keysyms to borrow a key for: a letter's two cases, or twice it."""
    lower, upper = (char.lower(), char.upper()) if char is not None else ("", "")
    if len(lower) == 1 and len(upper) == 1 and lower != upper:
        return _char_keysym(lower), _char_keysym(upper)
    return keysym, keysym


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
