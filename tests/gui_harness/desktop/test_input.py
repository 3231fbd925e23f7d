"""X11Desktop's input on a real Xvfb: every button, multi-clicks, held modifiers, press,
hold and release, paced drags, keypad and lock keys, refusals. An xev-like probe window
(tests/support/xprobe.py) records what the X server delivers; tests wait on its events."""

from __future__ import annotations

import shutil
from collections.abc import Iterator

import pytest

from gui_harness.actions import (
    Click,
    Drag,
    KeyDown,
    Keypress,
    KeyUp,
    MouseDown,
    MouseUp,
    Move,
    Scroll,
    TripleClick,
    Type,
)
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.desktop.x11 import X11Desktop
from gui_harness.errors import InvalidAction
from tests.support.xprobe import EventProbe

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]


@pytest.fixture(scope="module")
def screen() -> Iterator[VirtualDesktop]:
    with VirtualDesktop((640, 480), accessibility=False, window_manager=False) as desktop:
        yield desktop


@pytest.fixture
def probe(screen: VirtualDesktop) -> Iterator[EventProbe]:
    with EventProbe(screen.display or "") as probe:
        yield probe
    screen.desktop.release_held()


def keys_of(probe: EventProbe, kind: str = "key_down") -> list[str | None]:
    return [event.key for event in probe.of(kind)]


@pytest.mark.parametrize(
    ("name", "keysym"),
    [
        ("kp_enter", "KP_Enter"), ("KP_Add", "KP_Add"), ("NumpadSubtract", "KP_Subtract"),
        ("kp_7", "KP_7"), ("kp_multiply", "KP_Multiply"), ("menu", "Menu"),
        ("Caps_Lock", "Caps_Lock"), ("num_lock", "Num_Lock"), ("Control_R", "Control_R"),
        ("f13", "F13"), ("XF86AudioMute", "XF86_AudioMute"), ("print", "Print"),
    ],
)  # fmt: skip
def test_a_key_arrives_as_the_key_named(screen: VirtualDesktop, probe: EventProbe, name, keysym):
    # kp_enter used to be sent as Return, and reported as done (issue 40)
    screen.desktop.execute(Keypress(keys=[name]))
    probe.until(lambda events: any(e.kind == "key_up" and e.key != "Shift_L" for e in events))
    # (KP_7 is Shift+KP_Home on Xvfb's map, with Num Lock off: Shift is held for it)
    assert [key for key in keys_of(probe) if key != "Shift_L"] == [keysym]
    assert [key for key in keys_of(probe, "key_up") if key != "Shift_L"] == [keysym]
    if name in ("Caps_Lock", "num_lock"):  # a lock key: a second press turns it off again
        screen.desktop.execute(Keypress(keys=[name]))
        probe.settled(("key_up",), 2)


@pytest.mark.parametrize("name", ["shift_lock", "hyper_r"])
def test_a_key_the_keyboard_cannot_send_as_asked_is_refused_and_nothing_is_sent(
    screen: VirtualDesktop, probe: EventProbe, name: str
) -> None:
    # Xvfb's keyboard map binds neither to a modifier: a borrowed keycode would press a key
    # that modifies nothing, so the executor refuses instead of sending something else
    with pytest.raises(InvalidAction, match=r"not on the keyboard map .* as a modifier"):
        screen.desktop.execute(Keypress(keys=["ctrl", name]))
    screen.desktop.execute(Keypress(keys=["z"]))  # a marker: the first key to arrive
    probe.settled(("key_up",), 1)
    assert keys_of(probe) == ["z"]


def test_caps_lock_changes_the_letters_typed_until_pressed_again(
    screen: VirtualDesktop, probe: EventProbe
) -> None:
    desktop = screen.desktop
    for action in (Keypress(keys=["caps_lock"]), Type(text="a"), Keypress(keys=["caps_lock"])):
        desktop.execute(action)
    desktop.execute(Type(text="b"))
    downs = probe.settled(("key_down",), 4)
    assert [(e.key, "lock" in e.held) for e in downs] == [
        ("Caps_Lock", False), ("a", True), ("Caps_Lock", True), ("b", False),
    ]  # fmt: skip


def test_clicks_with_any_button_count_and_held_modifiers(
    screen: VirtualDesktop, probe: EventProbe
) -> None:
    desktop = screen.desktop
    desktop.execute(TripleClick(x=100, y=120, button="back", modifiers=["ctrl", "shift"]))
    desktop.execute(Click(x=200, y=50, button="forward", modifiers=["alt"]))
    desktop.execute(Click(x=300, y=60, button="right"))
    ups = probe.settled(("button_up",), 5)
    downs = probe.of("button_down")
    assert [(e.button, e.x, e.y, set(e.held)) for e in downs] == [
        *[(8, 100, 120, {"ctrl", "shift"})] * 3, (9, 200, 50, {"alt"}), (3, 300, 60, set()),
    ]  # fmt: skip
    assert [e.button for e in ups] == [8, 8, 8, 9, 3]
    probe.settled(("key_up",), 3)  # the modifiers are released after their clicks
    assert sorted(keys_of(probe, "key_up")) == ["Alt_L", "Control_L", "Shift_L"]


def test_press_hold_and_release_of_buttons_and_keys(
    screen: VirtualDesktop, probe: EventProbe
) -> None:
    desktop = screen.desktop
    desktop.execute(KeyDown(keys=["shift"]))
    desktop.execute(MouseDown(x=50, y=60, button="right"))
    assert (desktop.held_keys, desktop.held_buttons) == (["shift"], ["right"])
    desktop.execute(Move(x=150, y=160))
    desktop.execute(MouseUp(x=200, y=210, button="right"))
    desktop.execute(Click(x=10, y=10))
    desktop.execute(KeyUp(keys=["shift"]))
    assert (desktop.held_keys, desktop.held_buttons) == ([], [])
    probe.settled(("key_up",), 1)
    pointer = [
        (e.kind, e.button, e.x, e.y, set(e.held)) for e in probe.of("button_down", "button_up")
    ]
    assert pointer == [
        ("button_down", 3, 50, 60, {"shift"}), ("button_up", 3, 200, 210, {"shift"}),
        ("button_down", 1, 10, 10, {"shift"}), ("button_up", 1, 10, 10, {"shift"}),
    ]  # fmt: skip
    assert keys_of(probe) == ["Shift_L"] and keys_of(probe, "key_up") == ["Shift_L"]


def test_releasing_what_is_not_held_or_pressing_what_is_is_refused(screen: VirtualDesktop) -> None:
    desktop = screen.desktop
    with pytest.raises(InvalidAction, match="which key_down did not press"):
        desktop.execute(KeyUp(keys=["ctrl"]))
    with pytest.raises(InvalidAction, match="not held"):
        desktop.execute(MouseUp(button="middle"))
    desktop.execute(MouseDown(x=5, y=5))
    with pytest.raises(InvalidAction, match="held"):
        desktop.execute(Click(x=5, y=5))
    desktop.release_held()
    assert desktop.held_buttons == []


def test_drags_with_any_button_held_modifiers_and_a_pace(
    screen: VirtualDesktop, probe: EventProbe
) -> None:
    desktop = screen.desktop
    desktop.execute(
        Drag(
            path=[(40, 40), (140, 90), (140, 200)],
            button="middle",
            modifiers=["ctrl"],
            duration_ms=600,
        )
    )
    probe.settled(("button_up",), 1)
    (down,), (up,) = probe.of("button_down"), probe.of("button_up")
    assert (down.button, down.x, down.y, set(down.held)) == (2, 40, 40, {"ctrl"})
    assert (up.button, up.x, up.y, set(up.held)) == (2, 140, 200, {"ctrl"})
    moved = [e for e in probe.of("motion") if down.time <= e.time <= up.time]
    assert len(moved) >= 5 and (140, 90) in [(e.x, e.y) for e in moved]
    # the X server's own clock: paced from press to release (a slow machine only adds)
    assert up.time - down.time >= 600 * 0.9


def test_scrolls_with_held_modifiers(screen: VirtualDesktop, probe: EventProbe) -> None:
    screen.desktop.execute(Scroll(x=80, y=90, scroll_y=-2, scroll_x=1, modifiers=["shift", "ctrl"]))
    downs = probe.settled(("button_down",), 3)
    assert [(e.button, set(e.held)) for e in downs] == [(4, {"ctrl", "shift"})] * 2 + [
        (7, {"ctrl", "shift"})
    ]


def test_closing_the_desktop_releases_what_is_held(
    screen: VirtualDesktop, probe: EventProbe
) -> None:
    other = X11Desktop(screen.display)
    other.execute(KeyDown(keys=["ctrl", "kp_5"]))
    other.execute(MouseDown(x=30, y=30, button="left"))
    other.close()
    probe.settled(("key_up",), 3)
    assert keys_of(probe, "key_up") == ["KP_5", "Shift_L", "Control_L"]
    assert [e.button for e in probe.of("button_up")] == [1]


def test_typing_with_shift_held_by_key_down_never_releases_it(
    screen: VirtualDesktop, probe: EventProbe
) -> None:
    desktop = screen.desktop
    desktop.execute(KeyDown(keys=["shift"]))
    desktop.execute(Type(text="A!"))  # both on the shift level: Shift is down already
    desktop.execute(Click(x=20, y=20))
    desktop.execute(KeyUp(keys=["shift"]))
    probe.settled(("button_up",), 1)
    probe.until(lambda events: any(e.key == "Shift_L" for e in probe.of("key_up")))
    assert (
        keys_of(probe, "key_up")[-1] == "Shift_L" and keys_of(probe, "key_up").count("Shift_L") == 1
    )
    assert "shift" in probe.of("button_down")[0].held
