"""Key names: one canonical spelling per key, never another key's."""

from __future__ import annotations

import pytest

from gui_harness.errors import InvalidAction
from gui_harness.keys import KEY_NAMES, canonical_key, key_family, keysym_name


@pytest.mark.parametrize(
    ("name", "key"),
    [
        # the keypad's keys are their own: kp_enter used to become enter (Return)
        ("kp_enter", "kp_enter"), ("KP_Enter", "kp_enter"), ("kpenter", "kp_enter"),
        ("NumpadEnter", "kp_enter"), ("KP_Add", "kp_add"), ("Numpad7", "kp_7"),
        ("keypad-decimal", "kp_decimal"), ("KP_Prior", "kp_pageup"),
        ("Caps_Lock", "caps_lock"), ("CapsLock", "caps_lock"), ("NumLock", "num_lock"),
        ("Menu", "menu"), ("ContextMenu", "menu"), ("apps", "menu"), ("PrintScreen", "print"),
        ("Control_R", "ctrl_r"), ("ControlRight", "ctrl_r"), ("Shift_L", "shift"),
        ("AltGr", "altgr"), ("Multi_key", "compose"), ("F24", "f24"),
        ("minus", "-"), ("bracketleft", "["), ("eacute", "é"), ("€", "€"),
        ("XF86AudioMute", "xf86audiomute"), ("XF86_AudioMute", "xf86audiomute"),
        ("Return", "enter"), ("ESC", "escape"), ("cmd", "super"), ("Page_Down", "pagedown"),
    ],
)  # fmt: skip
def test_a_name_is_read_as_the_key_it_names(name: str, key: str) -> None:
    assert canonical_key(name) == key


def test_every_named_key_has_its_x_keysym_and_keeps_its_name() -> None:
    assert keysym_name("kp_enter") == "KP_Enter" and keysym_name("enter") == "Return"
    assert keysym_name("xf86audiomute") == "XF86_AudioMute"
    assert all(canonical_key(name) == name for name in KEY_NAMES)
    assert all(keysym_name(name) for name in KEY_NAMES)


def test_a_name_that_is_no_key_is_refused_saying_what_keys_are() -> None:
    with pytest.raises(InvalidAction, match=r"'sparkle' is not a key name.*kp_enter"):
        canonical_key("sparkle")


def test_a_side_of_a_modifier_belongs_to_its_family() -> None:
    assert [key_family(k) for k in ("ctrl_r", "super_r", "ctrl", "kp_enter")] == [
        "ctrl", "super", "ctrl", "kp_enter",
    ]  # fmt: skip
