"""An xev-like probe for input tests: a window covering an X screen that records the key,
button and motion events the X server delivers to it (keysym names, X button numbers,
modifier state, server time), read by waiting on its connection, never by sleeping."""

from __future__ import annotations

import select
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import Xlib.display
from Xlib import XK, X

__all__ = ["MODIFIER_MASKS", "Event", "EventProbe"]

MODIFIER_MASKS = {
    "shift": X.ShiftMask, "lock": X.LockMask, "ctrl": X.ControlMask, "alt": X.Mod1Mask,
    "num_lock": X.Mod2Mask, "hyper": X.Mod3Mask, "super": X.Mod4Mask, "mod5": X.Mod5Mask,
}  # fmt: skip
_KINDS = {
    X.KeyPress: "key_down", X.KeyRelease: "key_up", X.ButtonPress: "button_down",
    X.ButtonRelease: "button_up", X.MotionNotify: "motion",
}  # fmt: skip
XK.load_keysym_group("xf86")
_NAMES = {keysym: name[3:] for name, keysym in sorted(vars(XK).items(), reverse=True)
          if name.startswith("XK_") and isinstance(keysym, int)}  # fmt: skip


@dataclass(frozen=True)
class Event:
    """One delivered event: kind, keysym name (keys) or button number, root point, the
    modifiers held before it (names of MODIFIER_MASKS) and the server's time in ms."""

    kind: str
    key: str | None
    button: int | None
    x: int
    y: int
    held: frozenset[str]
    time: int


class EventProbe:
    """An override-redirect window over the whole screen of `display`, with the input
    focus, recording what it receives. Use as a context manager."""

    def __init__(self, display: str) -> None:
        self._x = Xlib.display.Display(display)
        screen = self._x.screen()
        mask = X.KeyPressMask | X.KeyReleaseMask | X.ButtonPressMask | X.ButtonReleaseMask
        mask |= X.PointerMotionMask | X.StructureNotifyMask | X.FocusChangeMask
        self._window = screen.root.create_window(
            0, 0, screen.width_in_pixels, screen.height_in_pixels, 0, screen.root_depth,
            background_pixel=screen.black_pixel, override_redirect=1, event_mask=mask,
        )  # fmt: skip
        self._window.map()
        self._x.sync()
        self.events: list[Event] = []
        self._wait(lambda e: e is not None and e.type == X.MapNotify, "the probe window to map")
        self._window.set_input_focus(X.RevertToParent, X.CurrentTime)
        self._x.sync()
        self._wait(
            lambda e: e is not None and e.type == X.FocusIn, "the probe window to get the focus"
        )

    def __enter__(self) -> EventProbe:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._window.destroy()
        self._x.close()

    def clear(self) -> None:
        """Forget the events recorded so far."""
        self.events.clear()

    def until(self, done: Callable[[list[Event]], bool], timeout: float = 20.0) -> list[Event]:
        """Record events until `done(events)` holds; returns the events. Raises
        AssertionError, listing them, when `timeout` seconds pass first."""
        self._wait(lambda _: done(self.events), "the events", timeout=timeout)
        return self.events

    def settled(self, kinds: tuple[str, ...], count: int, timeout: float = 20.0) -> list[Event]:
        """Record until `count` events of `kinds` have arrived; returns those."""
        self.until(lambda events: len(self.of(*kinds)) >= count, timeout)
        return self.of(*kinds)

    def of(self, *kinds: str) -> list[Event]:
        """The recorded events of these kinds."""
        return [event for event in self.events if event.kind in kinds]

    def _wait(self, done: Callable[[Any], bool], what: str, timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            while self._x.pending_events():
                raw = self._x.next_event()
                self._record(raw)
                if done(raw):
                    return
            if done(None):
                return
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"waited {timeout}s for {what}; got {self.events!r}")
            select.select([self._x.fileno()], [], [], left)

    def _record(self, raw: Any) -> None:
        if raw.type == X.MappingNotify:  # a borrowed keycode: read keys with the new map
            self._x.refresh_keyboard_mapping(raw)
        kind = _KINDS.get(raw.type)
        if kind is None:
            return
        key = button = None
        if kind.startswith("key"):
            # the keysym a client reads: the shifted level while Shift is held (KP_7 is
            # Shift+KP_Home with Num Lock off)
            level = 1 if raw.state & X.ShiftMask else 0
            keysym = self._x.keycode_to_keysym(raw.detail, level)
            keysym = keysym or self._x.keycode_to_keysym(raw.detail, 0)
            key = _NAMES.get(keysym, f"{keysym:#x}")
        elif kind.startswith("button"):
            button = raw.detail
        held = frozenset(name for name, mask in MODIFIER_MASKS.items() if raw.state & mask)
        event = Event(kind, key, button, raw.root_x, raw.root_y, held, raw.time)
        self.events.append(event)
