"""Key names: what a keypress may name, in one canonical spelling, and X's keysym for each.

Owns canonical_key (model spellings such as "Return", "NumpadEnter", "CapsLock" → one
name), the named keys of a keyboard (KEY_NAMES), any other key X names (looked up in
python-xlib's keysym tables), and the X keysym each name is sent as. A name is never
turned into a different key: "kp_enter" is the keypad's Enter, "ctrl_r" the right Ctrl.
"""

from __future__ import annotations

import functools
import re

from gui_harness.errors import InvalidAction
from openprogram.echo import echo

__all__ = ["KEY_NAMES", "MODIFIERS", "canonical_key", "key_family", "keysym_name"]

MODIFIERS = ("ctrl", "alt", "shift", "super")
"""The modifiers a chord or a click may hold, by their left keys."""

_KEYPAD = {
    **{f"kp_{n}": f"KP_{n}" for n in range(10)},
    **{f"kp_{name}": f"KP_{name.capitalize()}" for name in (
        "enter", "add", "subtract", "multiply", "divide", "decimal", "separator", "equal",
        "space", "tab", "home", "end", "up", "down", "left", "right", "begin", "insert",
        "delete",
    )},
    "kp_pageup": "KP_Prior", "kp_pagedown": "KP_Next",
}  # fmt: skip
_KEYSYMS: dict[str, str] = {
    "ctrl": "Control_L", "alt": "Alt_L", "shift": "Shift_L", "super": "Super_L",
    "ctrl_r": "Control_R", "alt_r": "Alt_R", "shift_r": "Shift_R", "super_r": "Super_R",
    "enter": "Return", "tab": "Tab", "escape": "Escape", "backspace": "BackSpace",
    "delete": "Delete", "insert": "Insert", "up": "Up", "down": "Down", "left": "Left",
    "right": "Right", "home": "Home", "end": "End", "pageup": "Prior", "pagedown": "Next",
    "space": "space",
    **{f"f{n}": f"F{n}" for n in range(1, 36)},
    **_KEYPAD,
    "caps_lock": "Caps_Lock", "num_lock": "Num_Lock", "scroll_lock": "Scroll_Lock",
    "menu": "Menu", "print": "Print", "pause": "Pause", "break": "Break",
    "sys_req": "Sys_Req", "compose": "Multi_key", "altgr": "ISO_Level3_Shift",
    "hyper": "Hyper_L", "hyper_r": "Hyper_R",
}  # fmt: skip
KEY_NAMES: frozenset[str] = frozenset(_KEYSYMS)
"""The canonical names of a keyboard's named keys. Any single character is a key too, and
so is any other key X names (lowercased, without underscores: XF86AudioMute →
"xf86audiomute")."""

_SIDES = {"ctrl_r": "ctrl", "alt_r": "alt", "shift_r": "shift", "super_r": "super"}
_SIDES["hyper_r"] = "hyper"
_ALIASES = {
    "return": "enter", "ret": "enter", "newline": "enter", "esc": "escape",
    "control": "ctrl", "ctl": "ctrl", "option": "alt", "opt": "alt", "cmd": "super",
    "command": "super", "meta": "super", "win": "super", "windows": "super", "os": "super",
    "del": "delete", "bksp": "backspace", "bs": "backspace", "pgup": "pageup",
    "prior": "pageup", "pgdn": "pagedown", "pgdown": "pagedown", "next": "pagedown",
    "spacebar": "space", "arrowup": "up", "arrowdown": "down", "arrowleft": "left",
    "arrowright": "right", "caps": "caps_lock", "apps": "menu", "contextmenu": "menu",
    "application": "menu", "printscreen": "print", "prtsc": "print", "prtscr": "print",
    "snapshot": "print", "sysrq": "sys_req", "altgraph": "altgr", "multikey": "compose",
    # punctuation by name (X's names, also a common schema's): the character itself
    "minus": "-", "equal": "=", "plus": "+", "grave": "`", "backslash": "\\", "slash": "/",
    "semicolon": ";", "apostrophe": "'", "quote": "'", "comma": ",", "period": ".",
    "bracketleft": "[", "bracketright": "]", "asterisk": "*",
}  # fmt: skip
for _name in KEY_NAMES:
    _ALIASES.setdefault(_name.replace("_", ""), _name)
for _name in _KEYPAD:  # NumpadEnter, Keypad0: a browser's and a model's names for the keypad
    for _prefix in ("numpad", "keypad"):
        _ALIASES[_prefix + _name[3:].replace("_", "")] = _name
_ALIASES |= {"kpprior": "kp_pageup", "kpnext": "kp_pagedown", "isolevel3shift": "altgr"}
_BY_KEYSYM = {keysym: key for key, keysym in _KEYSYMS.items()}
_CHARACTER_KEYS = {" ": "space", "\n": "enter", "\t": "tab"}
_SIDED = re.compile(r"(\w+?)_?(l|r|left|right)")


def canonical_key(name: str) -> str:
    """The canonical lowercase name of one key ("Return" → "enter", "Control_L" → "ctrl",
    "Control_R" → "ctrl_r", "KP_Enter" → "kp_enter", "minus" → "-").

    Raises InvalidAction for a name that is none of KEY_NAMES, a single character or a
    key X names.
    """
    if len(name) == 1:
        return _CHARACTER_KEYS.get(name, name.lower())
    key = name.strip().lower().replace("-", "_").replace(" ", "_")
    if len(key) == 1:
        return key
    sided = _SIDED.fullmatch(key)
    if sided:
        base = _ALIASES.get(sided[1].replace("_", ""), sided[1])
        if base in (*MODIFIERS, "hyper"):
            return base if sided[2].startswith("l") else f"{base}_r"
    compact = key.replace("_", "")
    if compact in _ALIASES:
        return _ALIASES[compact]
    found = _x_names().get(compact)
    if found is not None:
        return found[0]
    raise InvalidAction(
        f"key {echo(name, 40)} is not a key name; use a single character, one of"
        f" {', '.join(sorted(n for n in KEY_NAMES if not n.startswith(('f', 'kp_'))))},"
        " f1…f35, kp_0…kp_9, kp_enter, kp_add (the keypad), or any key X names"
    )


def key_family(key: str) -> str:
    """The key a canonical name is a side of ("ctrl_r" → "ctrl"); other keys unchanged."""
    return _SIDES.get(key, key)


def keysym_name(key: str) -> str | None:
    """X's keysym name for a canonical multi-character key name; None for a name X does
    not know (a single character is sent as its own keysym, not through this)."""
    found = _x_names().get(key)  # also loads python-xlib's keysym groups for XK's lookups
    if key in _KEYSYMS:
        return _KEYSYMS[key]
    return found[1] if found is not None else None


@functools.cache
def _x_names() -> dict[str, tuple[str, str]]:
    """Every keysym name python-xlib knows, by its lowercased compact spelling: (canonical
    key, X name). A character's name ("minus", "eacute") is that character; of names that
    differ only in case (Greek_ALPHA, Greek_alpha) the lower-case letter's. Empty without
    python-xlib (the gui extra), which leaves only KEY_NAMES and single characters."""
    try:
        from Xlib import XK
    except ImportError:
        return {}
    for group in ("xf86", "xkb", "latin2", "latin3", "latin4", "greek", "cyrillic", "arabic",
                  "hebrew", "thai", "korean", "katakana", "publishing", "technical",
                  "special", "apl"):  # fmt: skip
        XK.load_keysym_group(group)
    names: dict[str, tuple[str, str]] = {}
    for attribute, keysym in sorted(vars(XK).items()):
        if not attribute.startswith("XK_") or not isinstance(keysym, int):
            continue
        x_name = attribute[3:]
        compact = x_name.lower().replace("_", "")
        held = names.get(compact)
        if held is not None and sum(c.islower() for c in held[1]) >= sum(map(str.islower, x_name)):
            continue
        char = _keysym_char(keysym)
        key = _BY_KEYSYM.get(x_name) or (char.lower() if char else compact)
        names[compact] = (key, x_name)
    return names


def _keysym_char(keysym: int) -> str:
    if 0x20 < keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if 0x1000100 <= keysym <= 0x110FFFF:
        return chr(keysym - 0x1000000)
    return ""
