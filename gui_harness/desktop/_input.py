"""XTest input: X11Desktop's actions as device events, and what they leave held down.

Owns the translation of resolved actions into XTest motion, button and key events, the
keyboard map's borrowed keycodes (characters and keys the map lacks, restored on close)
and the keys and buttons held between actions (key_down, mouse_down). A key or button
that cannot be sent as asked is refused with InvalidAction, never replaced by another.
Start at XInput.perform().
"""

from __future__ import annotations

import contextlib
import itertools
import math
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from typing import Any, ClassVar

import Xlib.display
from Xlib import XK, X

from gui_harness.errors import DesktopError, InvalidAction
from gui_harness.keys import keysym_name
from openprogram.echo import echo

__all__ = ["BUTTONS", "XInput"]

BUTTONS = {"left": 1, "middle": 2, "right": 3, "back": 8, "forward": 9}
"""X's number of each MouseButton."""
_CHAR_KEYSYMS = {"\n": "Return", "\r": "Return", "\t": "Tab", " ": "space"}
_SCROLL_BUTTONS = {(0, -1): 4, (0, 1): 5, (-1, 0): 6, (1, 0): 7}
_CLICKS = {"click": 1, "double_click": 2, "triple_click": 3}
# keys whose meaning is the modifier (or lock) state they set: sent only from a keycode the
# keyboard map binds to a modifier, since a borrowed keycode would press a key that
# modifies nothing
_MODIFIER_KEYSYMS = frozenset(
    XK.string_to_keysym(name)
    for name in (
        *("Shift_L", "Shift_R", "Control_L", "Control_R", "Alt_L", "Alt_R", "Meta_L"),
        *("Meta_R", "Super_L", "Super_R", "Hyper_L", "Hyper_R", "Caps_Lock", "Shift_Lock"),
        *("Num_Lock", "ISO_Level3_Shift", "ISO_Level5_Shift", "Mode_switch"),
    )
)
_DRAG_STEP_PIXELS = 20
_DRAG_STEP_PAUSE_S = 0.005
_THAW_TIMEOUT_S = 0.25
_THAW_POLL_S = 0.002
_REMAP_PAUSE_S = 0.05
_EVICT_PAUSE_S = 0.25


class XInput:
    """Sends actions to the X display `x` (a python-xlib Display with XTEST) and keeps
    account of what they hold down. Not thread-safe: X11Desktop calls it under its lock."""

    def __init__(self, x: Xlib.display.Display, display: str) -> None:
        self._x = x
        self._display = display
        self._root = x.screen().root
        # keysym -> (keycode, needs_shift) on borrowed keycodes, least recently used first
        self._borrowed: dict[int, tuple[int, bool]] = {}
        self._spare: list[int] | None = None
        self._keys_sent = False
        self._modifier_codes: frozenset[int] | None = None
        # canonical key -> the keycodes pressed for it (Shift first for a key on the shift
        # level), and the buttons, held down by key_down / mouse_down
        self._held_keys: dict[str, list[int]] = {}
        self._held_buttons: list[str] = []

    @property
    def held_keys(self) -> list[str]:
        """The keys key_down pressed and no key_up has released yet, in press order."""
        return list(self._held_keys)

    @property
    def held_buttons(self) -> list[str]:
        """The mouse buttons mouse_down pressed and no mouse_up has released yet."""
        return list(self._held_buttons)

    def perform(self, action: Any) -> None:
        """Send one resolved action (screen pixels); raises InvalidAction for one that
        cannot be sent as asked, before any of its events is sent."""
        handler = self._HANDLERS.get(action.type)
        if handler is None:
            raise InvalidAction(f"action type {action.type!r} is not one X11Desktop can perform")
        handler(self, action)

    def release_held(self) -> None:
        """Release every key and button held by key_down and mouse_down."""
        for button in reversed(self._held_buttons):
            self._button(BUTTONS[button], press=False)
        self._held_buttons.clear()
        for codes in reversed(list(self._held_keys.values())):
            for code in reversed(codes):
                self._key(code, press=False)
        self._held_keys.clear()

    def close(self) -> None:
        """Release what is held and give the borrowed keycodes back (no symbols)."""
        self.release_held()
        for code in {code for code, _ in self._borrowed.values()}:
            self._x.change_keyboard_mapping(code, [(X.NoSymbol, X.NoSymbol)])
        self._x.sync()

    # -- pointer -----------------------------------------------------------------------

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

    def _free_button(self, action: Any) -> int:
        """The X button of `action`, refused while mouse_down holds it."""
        if action.button in self._held_buttons:
            raise InvalidAction(
                f"the {action.button} button is held (by mouse_down); release it with"
                f" mouse_up before a {action.type} with it"
            )
        return BUTTONS[action.button]

    def _click(self, action: Any) -> None:
        button = self._free_button(action)
        with self._holding(action.modifiers):
            self._motion(action.x, action.y)
            for _ in range(_CLICKS[action.type]):
                self._button(button, press=True)
                self._button(button, press=False)

    def _mouse_down(self, action: Any) -> None:
        button = self._free_button(action)
        if action.x is not None:
            self._motion(action.x, action.y)
        self._button(button, press=True)
        self._held_buttons.append(action.button)

    def _mouse_up(self, action: Any) -> None:
        if action.button not in self._held_buttons:
            held = ", ".join(self._held_buttons) or "none"
            raise InvalidAction(
                f"mouse_up of the {action.button} button, which is not held (held: {held});"
                " mouse_up releases a button pressed by mouse_down"
            )
        if action.x is not None:
            self._motion(action.x, action.y)
        self._held_buttons.remove(action.button)
        self._button(BUTTONS[action.button], press=False)

    def _move(self, action: Any) -> None:
        self._motion(action.x, action.y)

    def _drag(self, action: Any) -> None:
        button = self._free_button(action)
        path = [(int(x), int(y)) for x, y in action.path]
        segments = list(itertools.pairwise(path))
        steps = [max(1, math.ceil(math.dist(a, b) / _DRAG_STEP_PIXELS)) for a, b in segments]
        pause = _DRAG_STEP_PAUSE_S
        if action.duration_ms is not None:
            pause = action.duration_ms / 1000 / sum(steps)
        with self._holding(action.modifiers):
            self._motion(*path[0])
            self._button(button, press=True)
            self._x.sync()
            started = time.monotonic()
            done = 0
            for ((x0, y0), (x1, y1)), count in zip(segments, steps, strict=True):
                for step in range(1, count + 1):
                    fraction = step / count
                    self._motion(round(x0 + (x1 - x0) * fraction), round(y0 + (y1 - y0) * fraction))
                    self._x.sync()
                    done += 1
                    # paced from the start, so a late step is not made later still
                    time.sleep(max(0.0, started + done * pause - time.monotonic()))
            self._button(button, press=False)

    def _scroll(self, action: Any) -> None:
        with self._holding(action.modifiers):
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

    # -- keys --------------------------------------------------------------------------

    def _key(self, keycode: int, *, press: bool) -> None:
        self._keys_sent = True
        self._x.xtest_fake_input(X.KeyPress if press else X.KeyRelease, keycode)

    def _holding(self, keys: list[str] | None) -> AbstractContextManager[None]:
        """A context that presses `keys` not already held and releases them after."""
        fresh = [key for key in keys or () if key not in self._held_keys]
        return self._pressed([code for codes in self._press_codes(fresh) for code in codes])

    @contextlib.contextmanager
    def _pressed(self, codes: list[int]) -> Iterator[None]:
        """Presses keycodes on entry and releases them, in reverse, on exit."""
        for code in codes:
            self._key(code, press=True)
        try:
            yield
        finally:
            for code in reversed(codes):
                self._key(code, press=False)

    def _press_codes(self, keys: list[str]) -> list[list[int]]:
        """The keycodes to press for each key, in order: Shift first for a key on the
        shift level (KP_7 is Shift+KP_Home), unless Shift is held or pressed before it."""
        shift = self._keycode("shift")[0]
        shifted = "shift" in self._held_keys
        out = []
        for key in keys:
            code, needs_shift = self._keycode(key)
            out.append([shift, code] if needs_shift and not shifted else [code])
            shifted = shifted or code == shift or needs_shift
        return out

    def _keypress(self, action: Any) -> None:
        keys = [(key, *self._keycode(key)) for key in action.keys]
        shift = self._keycode("shift")[0]
        wants_shift = any(needs_shift for _, _, needs_shift in keys)
        pressed = [code for key, code, _ in keys if key not in self._held_keys]
        chorded = shift in (code for _, code, _ in keys) or "shift" in self._held_keys
        if wants_shift and not chorded:
            pressed.insert(0, shift)
        for code in pressed:
            self._key(code, press=True)
        if action.hold_ms:
            self._x.sync()
            time.sleep(action.hold_ms / 1000)
        for code in reversed(pressed):
            self._key(code, press=False)

    def _key_down(self, action: Any) -> None:
        already = [key for key in action.keys if key in self._held_keys]
        if already:
            raise InvalidAction(
                f"key_down of {', '.join(already)}, already held; release it with key_up first"
            )
        for key, codes in zip(action.keys, self._press_codes(action.keys), strict=True):
            for code in codes:
                self._key(code, press=True)
            self._held_keys[key] = codes

    def _key_up(self, action: Any) -> None:
        loose = [key for key in action.keys if key not in self._held_keys]
        if loose:
            held = ", ".join(self._held_keys) or "none"
            raise InvalidAction(
                f"key_up of {', '.join(loose)}, which key_down did not press (held: {held});"
                " key_up releases keys pressed by key_down"
            )
        for key in reversed(action.keys):
            for code in reversed(self._held_keys.pop(key)):
                self._key(code, press=False)

    def _type(self, action: Any) -> None:
        shift = self._keycode("shift")[0]
        held = "shift" in self._held_keys  # held by key_down: never released here
        text, start = action.text, 0
        while start < len(text):
            keys = self._prepare(text, start)
            for code, needs_shift in keys:
                if needs_shift and not held:
                    self._key(shift, press=True)
                self._key(code, press=True)
                self._key(code, press=False)
                if needs_shift and not held:
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

    def _keycode(self, key: str) -> tuple[int, bool]:
        """The keycode for a canonical key name and whether Shift must be held to get it.

        A key X has no keysym for, and a modifier or lock key the keyboard map binds to
        no modifier, is refused (InvalidAction): it cannot be sent as asked."""
        if len(key) == 1:
            keysym = _char_keysym(key)
        else:
            name = keysym_name(key)
            keysym = XK.string_to_keysym(name) if name is not None else 0
            if not keysym:
                raise InvalidAction(f"key {echo(key)} is not a key X knows; it cannot be sent")
        if keysym in _MODIFIER_KEYSYMS:
            code = self._x.keysym_to_keycode(keysym)
            if not code or code not in self._modifiers():
                raise InvalidAction(
                    f"key {echo(key)} is not on the keyboard map of {self._display} as a"
                    " modifier, so it cannot be sent as asked; use another key"
                )
            return code, False
        return self._lookup(keysym)

    def _modifiers(self) -> frozenset[int]:
        """The keycodes the keyboard map binds to a modifier (read once)."""
        if self._modifier_codes is None:
            mapping = self._x.get_modifier_mapping()
            self._modifier_codes = frozenset(code for row in mapping for code in row if code)
        return self._modifier_codes

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
        in `keep` or held down; returns None when every candidate is kept. Borrowed
        keycodes stay mapped until close(): restoring right after typing, as `xdotool
        type` does, loses keys in clients that read the new map late.
        """
        if self._spare is None:
            info = self._x.display.info
            first, count = info.min_keycode, info.max_keycode - info.min_keycode + 1
            rows = self._x.get_keyboard_mapping(first, count)
            self._spare = [first + i for i, row in enumerate(rows) if not any(row)]
        if self._spare:
            code = self._spare.pop()
        else:
            keep = keep | {code for codes in self._held_keys.values() for code in codes}
            codes = [code for code, _ in self._borrowed.values()]
            if not codes:
                raise DesktopError(
                    f"cannot type keysym {keysym:#x}: the keyboard map of {self._display} has "
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

    # each action type's method (functions of the class body: called with the instance)
    _HANDLERS: ClassVar[dict[str, Callable[[XInput, Any], None]]] = {
        "click": _click,
        "double_click": _click,
        "triple_click": _click,
        "mouse_down": _mouse_down,
        "mouse_up": _mouse_up,
        "move": _move,
        "drag": _drag,
        "scroll": _scroll,
        "keypress": _keypress,
        "key_down": _key_down,
        "key_up": _key_up,
        "type": _type,
    }


def _char_keysym(char: str) -> int:
    if char in _CHAR_KEYSYMS:
        keysym: int = XK.string_to_keysym(_CHAR_KEYSYMS[char])
        return keysym
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
