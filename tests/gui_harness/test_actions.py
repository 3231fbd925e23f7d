"""gui_harness.actions: schema, normaliser aliases, transform, resolve and policy."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from gui_harness.actions import (
    ACTION_TYPES,
    DEFAULT_DENY_KEYS,
    MAX_KEYS,
    Click,
    Done,
    DoubleClick,
    Drag,
    Fail,
    KeyDown,
    Keypress,
    KeyUp,
    MouseDown,
    MouseUp,
    Move,
    Policy,
    Scroll,
    Transform,
    TripleClick,
    Type,
    Wait,
    action_adapter,
    canonical_key,
    held_after,
    resolve,
)
from gui_harness.errors import ActionRejected, InvalidAction
from gui_harness.normalize import normalize_action
from openprogram.errors import RunError, UsageError

# --- schema -----------------------------------------------------------------------------


def test_pointer_action_needs_both_coordinates_or_an_element():
    with pytest.raises(ValidationError, match="needs both x and y"):
        Click(x=3)
    with pytest.raises(ValidationError, match="needs a target"):
        Move()
    with pytest.raises(ValidationError, match="not both"):
        DoubleClick(x=1, y=2, element=4)
    assert Click(element=4).element == 4


def test_actions_are_frozen_and_forbid_unknown_fields():
    click = Click(x=1, y=2)
    with pytest.raises(ValidationError):
        click.x = 5  # type: ignore[misc]  # assigning to a frozen model is the point
    with pytest.raises(ValidationError, match="extra"):
        Click(x=1, y=2, colour="red")  # type: ignore[call-arg]  # the point of the test


def test_schema_bounds_drag_path_wait_and_scroll():
    with pytest.raises(ValidationError):
        Drag(path=[(1, 1)])
    with pytest.raises(ValidationError):
        Wait(ms=60_001)
    with pytest.raises(ValidationError, match="non-zero"):
        Scroll(x=1, y=1)
    assert Scroll(scroll_y=2).x is None


def test_keypress_model_canonicalises_key_names():
    assert Keypress(keys=["Control_L", "Return"]).keys == ["ctrl", "enter"]
    with pytest.raises(ValidationError, match="not a key name"):
        Keypress(keys=["sparkle"])


def test_adapter_dispatches_on_type_and_dumps_type_first():
    action = action_adapter.validate_python({"type": "keypress", "keys": ["ctrl", "s"]})
    assert action == Keypress(keys=["ctrl", "s"])
    assert next(iter(Click(x=1, y=2).model_dump())) == "type"


def test_invalid_action_is_a_run_error_and_a_value_error():
    assert issubclass(InvalidAction, RunError)
    assert issubclass(InvalidAction, ValueError)


# --- normalize_action --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"action": "left_click", "coordinate": [10, 20]}, Click(x=10, y=20)),
        ({"action": "right_click", "coordinate": "10, 20"}, Click(x=10, y=20, button="right")),
        ({"name": "middle_click", "x": 1, "y": 2}, Click(x=1, y=2, button="middle")),
        ({"type": "click", "x": 10.6, "y": "20"}, Click(x=11, y=20)),
        ({"type": "click", "element": "#3"}, Click(element=3)),
        ({"type": "click", "element": "3"}, Click(element=3)),
        ({"type": "click", "element": 3, "thought": "the OK button"}, Click(element=3)),
        ({"type": "click", "x": 1, "y": 2, "button": "Right"}, Click(x=1, y=2, button="right")),
        ({"action": "dblclick", "coordinate": [5, 6]}, DoubleClick(x=5, y=6)),
        ({"action": "doubleclick", "element": 2}, DoubleClick(element=2)),
        ({"action": "mouse_move", "coordinate": [5, 6]}, Move(x=5, y=6)),
        ({"action": "hover", "element": 1}, Move(element=1)),
        (
            {"action": "left_click_drag", "start_coordinate": [1, 2], "coordinate": [3, 4]},
            Drag(path=[(1, 2), (3, 4)]),
        ),
        ({"type": "drag", "path": [{"x": 1, "y": 2}, [3, 4]]}, Drag(path=[(1, 2), (3, 4)])),
        (
            {"action": "scroll", "coordinate": [1, 2], "direction": "up", "amount": 5},
            Scroll(x=1, y=2, scroll_y=-5),
        ),
        ({"type": "scroll", "scroll_direction": "right"}, Scroll(scroll_x=3)),
        ({"type": "scroll", "x": 1, "y": 2, "scroll_y": 4}, Scroll(x=1, y=2, scroll_y=4)),
        ({"type": "hotkey", "keys": "ctrl+s"}, Keypress(keys=["ctrl", "s"])),
        ({"type": "key", "keys": "Ctrl+S"}, Keypress(keys=["ctrl", "s"])),
        ({"action": "key", "text": "Return"}, Keypress(keys=["enter"])),
        ({"type": "key_press", "key": "esc"}, Keypress(keys=["escape"])),
        ({"type": "press", "keys": ["control", "Del"]}, Keypress(keys=["ctrl", "delete"])),
        ({"type": "keypress", "keys": ["cmd", "pgup"]}, Keypress(keys=["super", "pageup"])),
        ({"type": "keypress", "keys": "ctrl++"}, Keypress(keys=["ctrl", "+"])),
        ({"type": "type_text", "text": "hi"}, Type(text="hi")),
        ({"type": "input_text", "content": "hi"}, Type(text="hi")),
        ({"action": "write", "value": "hi"}, Type(text="hi")),
        ({"type": "wait"}, Wait()),
        ({"type": "sleep", "seconds": 2}, Wait(ms=2000)),
        ({"type": "wait", "duration": 0.25}, Wait(ms=250)),
        ({"type": "wait", "ms": 40}, Wait(ms=40)),
        ({"type": "finish", "reason": "saved"}, Done(reason="saved")),
        ({"action": "terminate", "status": "success"}, Done()),
        ({"action": "terminate", "status": "failure"}, Fail()),
        ({"type": "stop"}, Done()),
        ({"type": "give_up", "reason": "no form"}, Fail(reason="no form")),
        ({"type": "computer_call", "action": {"type": "click", "x": 1, "y": 2}}, Click(x=1, y=2)),
        ({"name": "click", "arguments": '{"element": 7}'}, Click(element=7)),
        (
            {"type": "tool_use", "name": "computer", "input": {"action": "key", "text": "tab"}},
            Keypress(keys=["tab"]),
        ),
    ],
)
def test_normalize_accepts_common_aliases(raw, expected):
    assert normalize_action(raw) == expected


def test_normalize_reads_json_text_and_fenced_blocks():
    assert normalize_action('{"type": "click", "x": 1, "y": 2}') == Click(x=1, y=2)
    fenced = 'Next I save.\n```json\n{"type": "hotkey", "keys": "ctrl+s"}\n```'
    assert normalize_action(fenced) == Keypress(keys=["ctrl", "s"])
    assert normalize_action('I click: {"type": "done"} now') == Done()


def test_normalize_passes_an_action_through():
    click = Click(x=1, y=2)
    assert normalize_action(click) is click


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"type": "jump"}, r"unknown action kind 'jump'; valid kinds: click, double_click"),
        ({"x": 1}, "has no 'type'"),
        ("not json at all", "could not read an action"),
        ("[1, 2]", "must be a JSON object"),
        ({"type": "click"}, "needs a target"),
        ({"type": "click", "x": 1, "y": 2, "colour": "red"}, r"does not take 'colour'.*takes x"),
        ({"type": "click", "element": "abc"}, "element='abc' is not an element number"),
        ({"type": "click", "coordinate": [1]}, r"coordinate=\[1\] is not a point"),
        ({"type": "click", "x": "left", "y": 2}, "x='left' is not a number"),
        ({"type": "click", "x": 1, "y": 2, "button": "side"}, "button='side' is not one of"),
        ({"type": "keypress", "keys": "ctrl s"}, "one chord per keypress"),
        ({"type": "keypress", "keys": ["sparkle"]}, "key 'sparkle' is not a key name"),
        ({"type": "keypress"}, "keypress needs keys"),
        ({"type": "drag", "start": [1, 2]}, "drag needs a path"),
        ({"type": "scroll", "direction": "sideways"}, "direction='sideways'"),
        ({"type": "wait", "ms": 99_999}, "less than or equal to 60000"),
        ({"type": "type"}, "text"),
    ],
)
def test_normalize_rejects_what_it_cannot_understand(raw, message):
    with pytest.raises(InvalidAction, match=message):
        normalize_action(raw)


def test_every_kind_is_listed_in_the_unknown_kind_message():
    with pytest.raises(InvalidAction) as info:
        normalize_action({"type": "teleport"})
    assert all(kind in str(info.value) for kind in ACTION_TYPES)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        *[("Return", "enter"), ("ESC", "escape"), ("Control_R", "ctrl_r"), ("super_l", "super")],
        *[("win", "super"), ("Page_Down", "pagedown"), ("F12", "f12"), ("A", "a"), (" ", "space")],
    ],
)
def test_canonical_key_maps_aliases(name, key):
    assert canonical_key(name) == key


coordinate = st.integers(min_value=-5000, max_value=5000)
element = st.integers(min_value=0, max_value=500)
key = st.sampled_from(
    ["ctrl", "alt", "shift", "super", "enter", "f5", "a", "7", "+", "/", "kp_enter", "ctrl_r"]
)


@st.composite
def pointer(draw, model, **extra):
    if draw(st.booleans()):
        return model(x=draw(coordinate), y=draw(coordinate), **extra)
    return model(element=draw(element), **extra)


@st.composite
def scroll(draw):
    amounts = st.tuples(coordinate, coordinate).filter(lambda a: a != (0, 0))
    scroll_x, scroll_y = draw(amounts)
    target = draw(st.sampled_from(["xy", "element", "none"]))
    if target == "xy":
        return Scroll(x=draw(coordinate), y=draw(coordinate), scroll_x=scroll_x, scroll_y=scroll_y)
    if target == "element":
        return Scroll(element=draw(element), scroll_x=scroll_x, scroll_y=scroll_y)
    return Scroll(scroll_x=scroll_x, scroll_y=scroll_y)


buttons = st.sampled_from(["left", "right", "middle", "back", "forward"])
held = st.one_of(st.none(), st.lists(key, min_size=1, max_size=3))
actions = st.one_of(
    st.tuples(buttons, held).flatmap(lambda b: pointer(Click, button=b[0], modifiers=b[1])),
    buttons.flatmap(lambda b: pointer(DoubleClick, button=b)),
    st.tuples(buttons, held).flatmap(lambda b: pointer(TripleClick, button=b[0], modifiers=b[1])),
    buttons.flatmap(lambda b: pointer(MouseDown, button=b)),
    buttons.flatmap(lambda b: pointer(MouseUp, button=b)),
    pointer(Move),
    scroll(),
    st.builds(
        Drag,
        path=st.lists(st.tuples(coordinate, coordinate), min_size=2, max_size=6),
        button=buttons,
        modifiers=held,
        duration_ms=st.one_of(st.none(), st.integers(min_value=0, max_value=60_000)),
    ),
    st.text().map(lambda text: Type(text=text)),
    st.lists(key, min_size=1, max_size=4).map(lambda keys: Keypress(keys=keys)),
    st.lists(key, min_size=1, max_size=4).map(lambda keys: Keypress(keys=keys, hold_ms=300)),
    st.lists(key, min_size=1, max_size=4).map(lambda keys: KeyDown(keys=keys)),
    st.lists(key, min_size=1, max_size=4).map(lambda keys: KeyUp(keys=keys)),
    st.integers(min_value=0, max_value=60_000).map(lambda ms: Wait(ms=ms)),
    st.text().map(lambda reason: Done(reason=reason)),
    st.text().map(lambda reason: Fail(reason=reason)),
)


@given(actions)
def test_normalizing_a_dumped_action_returns_an_equal_action(action):
    assert normalize_action(action.model_dump()) == action
    assert normalize_action(action.model_dump_json()) == action


# --- Transform and resolve ------------------------------------------------------------------


def test_transform_maps_image_to_screen_with_scale_and_origin():
    transform = Transform(scale=2.0, origin=(100, 50))
    assert transform.to_screen(10, 20) == (120, 90)
    assert transform.to_image(120, 90) == (10, 20)
    assert transform.apply(Click(x=10, y=20, button="right")) == Click(x=120, y=90, button="right")
    assert transform.apply(Drag(path=[(0, 0), (5, 5)])) == Drag(path=[(100, 50), (110, 60)])
    assert transform.apply(Scroll(x=1, y=1, scroll_y=3)) == Scroll(x=102, y=52, scroll_y=3)
    assert transform.apply(Type(text="a")) == Type(text="a")


def test_transform_rounds_half_up_and_refuses_a_bad_scale():
    assert Transform(scale=1.5).to_screen(1, 3) == (2, 5)
    assert Transform(scale=0.5).to_image(3, 5) == (6, 10)
    with pytest.raises(UsageError, match="scale=0"):
        Transform(scale=0)


@given(coordinate, coordinate, st.sampled_from([1.0, 1.25, 2.0, 3.7]))
def test_to_image_inverts_to_screen_when_scaling_up(x, y, scale):
    transform = Transform(scale=scale, origin=(7, -3))
    assert transform.to_image(*transform.to_screen(x, y)) == (x, y)


@dataclass
class Component:
    index: int
    box: tuple[int, int, int, int]


def test_resolve_replaces_an_element_by_its_centre_then_transforms():
    components = [Component(1, (10, 10, 20, 10)), {"index": 2, "box": (100, 40, 30, 30)}]
    transform = Transform(scale=2.0, origin=(5, 5))
    assert resolve(Click(element=1), components, transform) == Click(x=45, y=35)
    assert resolve(DoubleClick(element=2), components) == DoubleClick(x=115, y=55)
    assert resolve(Click(x=3, y=4), components, transform) == Click(x=11, y=13)
    assert resolve(Wait(), components, transform) == Wait()


def test_resolve_names_the_valid_elements_for_an_unknown_one():
    with pytest.raises(InvalidAction, match=r"element=9 is not on the latest screen.*1, 2"):
        resolve(Click(element=9), [{"index": 2, "box": (0, 0, 1, 1)}, Component(1, (0, 0, 1, 1))])
    with pytest.raises(InvalidAction, match="none are on screen"):
        resolve(Move(element=0), [])


def test_a_cell_of_a_grid_element_resolves_to_the_middle_of_that_cell():
    from gui_harness.perception import Component as Found
    from gui_harness.perception.cells import Grid

    cells = Grid(columns=(40, 120, 200), rows=(180, 200, 220), first_column=1, first_row=3)
    sheet = Found(7, "grid", (40, 180, 160, 40), "Sheet1", 1.0, (), "accessibility", cells)
    transform = Transform(scale=2.0)
    assert resolve(Click(element=7, cell="C4"), [sheet], transform) == Click(x=320, y=420)
    assert resolve(Click(element=7, cell="b3"), [sheet]) == Click(x=80, y=190)
    assert action_adapter.validate_python(
        {"type": "double_click", "element": 7, "cell": "R2C1"}
    ) == DoubleClick(element=7, cell="R2C1")
    with pytest.raises(InvalidAction, match=r"cell='D9' is not on screen; the grid shows B3:C4"):
        resolve(Click(element=7, cell="D9"), [sheet])
    with pytest.raises(InvalidAction, match="has no cells to address"):
        resolve(Click(element=1, cell="A1"), [Component(1, (0, 0, 5, 5))])
    with pytest.raises(ValidationError, match="needs the grid's element"):
        Click(x=1, y=2, cell="A1")
    with pytest.raises(ActionRejected, match="unresolved"):
        Policy().check(Click(element=7, cell="B3"), SCREEN)
    # what a model writes: the usual click aliases with a cell name, or [row, column]
    assert normalize_action({"action": "left_click", "element": "#7", "cell": " B3 "}) == Click(
        element=7, cell="B3"
    )
    assert normalize_action({"type": "click", "element": 7, "cell": [3, 2]}) == Click(
        element=7, cell="R3C2"
    )


# --- Policy ---------------------------------------------------------------------------------

SCREEN = (800, 600)


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (Click(x=800, y=10), r"click at \(800, 10\) is outside the 800x600 screen"),
        (Move(x=-1, y=10), r"outside the 800x600 screen; pick a point with 0 <= x < 800"),
        (Drag(path=[(1, 1), (5, 600)]), r"drag at \(5, 600\) is outside"),
        (Scroll(x=900, y=1, scroll_y=1), "outside"),
        (Keypress(keys=["ctrl", "alt", "delete"]), "'ctrl\\+alt\\+delete' is not allowed"),
        (Keypress(keys=["delete", "alt", "ctrl"]), "on the deny list"),
        (Keypress(keys=["l", "super"]), "on the deny list"),
        (Keypress(keys=["alt", "f4"]), "on the deny list"),
        (Keypress(keys=["ctrl", "alt", "backspace"]), "on the deny list"),
        (Keypress(keys=["shift", "ctrl", "alt", "delete"]), "on the deny list"),
        (Keypress(keys=["ctrl", "alt", "t"]), "'alt\\+ctrl\\+t' is on the deny list"),
        (Keypress(keys=["alt", "F2"]), "on the deny list"),
        (Keypress(keys=["Super_L"]), "'super' is on the deny list"),
        (Keypress(keys=["meta", "r"]), "'super' is on the deny list"),
        (Keypress(keys=["ctrl", "alt", "F7"]), "on the deny list"),
        (Keypress(keys=["ctrl", "escape"]), "on the deny list"),
        (Keypress(keys=["F12"]), "'f12' is on the deny list"),
        (Keypress(keys=["ctrl", "shift", "f12"]), "'f12' is on the deny list"),
        (Keypress(keys=["alt", "Return"]), "'alt\\+enter' is on the deny list"),
        (Keypress(keys=["alt", "shift", "enter"]), "'alt\\+enter' is on the deny list"),
        (Keypress(keys=["shift", "F10"]), "'f10\\+shift' is on the deny list"),
        (Keypress(keys=["ctrl", "`"]), "on the deny list"),
        (Keypress(keys=["alt", "p"]), "on the deny list"),
        (Keypress(keys=["alt", "shift", "q"]), "on the deny list"),
        (Type(text=""), "empty text"),
        (Type(text="x" * 10_001), "10001 characters is over the 10000-character limit"),
        (Click(element=3), r"unresolved; call gui_harness.actions.resolve\(\)"),
    ],
)
def test_policy_rejects_with_a_reason(action, reason):
    with pytest.raises(ActionRejected, match=reason) as info:
        Policy().check(action, SCREEN)
    assert info.value.action == action
    assert info.value.reason == str(info.value)


@pytest.mark.parametrize(
    "action",
    [
        Click(x=0, y=0),
        Click(x=799, y=599),
        Scroll(scroll_y=3),
        Keypress(keys=["ctrl", "s"]),
        Keypress(keys=["alt", "tab"]),
        Keypress(keys=["ctrl", "t"]),
        Keypress(keys=["ctrl", "alt", "left"]),
        Keypress(keys=["alt", "f"]),
        Type(text="hello"),
        Wait(),
        Done(),
        Fail(reason="stuck"),
    ],
)
def test_policy_allows_ordinary_actions(action):
    Policy().check(action, SCREEN)


def test_a_chord_has_at_most_max_keys_and_a_huge_one_is_refused_in_a_bounded_message():
    Keypress(keys=["ctrl", "alt", "shift", "super", "a", "b", "c", "d"])
    with pytest.raises(ValidationError, match=f"at most {MAX_KEYS} items"):
        Keypress(keys=["a"] * (MAX_KEYS + 1))
    for raw in (
        {"type": "keypress", "keys": ["a"] * 40_000},
        {"type": "keypress", "keys": "+".join(["a"] * 40_000)},
        {"type": "keypress", "keys": ["x" * 40_000]},
        {"type": "hotkey", "keys": "ctrl+" + "q" * 40_000},
    ):
        with pytest.raises(InvalidAction) as refused:
            normalize_action(raw)
        assert len(str(refused.value)) < 1_500, str(refused.value)[:3000]


def test_a_huge_model_reply_is_quoted_in_a_bounded_invalid_action():
    for raw in (
        {"type": "type", "text": "t", "extra": "e" * 1_000_000},
        {"type": "click", "x": "y" * 1_000_000, "y": 2},
        {"type": "c" * 1_000_000},
        '{"type": "click", "x": ' + "9" * 1_000_000,
        {"type": "drag", "path": [[1, "p"]] * 50_000},
    ):
        with pytest.raises(InvalidAction) as refused:
            normalize_action(raw)
        assert len(str(refused.value)) < 1_500, str(refused.value)[:3000]
    with pytest.raises(ActionRejected, match="over the 10000-character limit") as refused:
        Policy().check(normalize_action({"type": "type", "text": "t" * 40_000}), SCREEN)
    assert len(str(refused.value)) < 300


def test_policy_deny_keys_are_configurable_and_canonicalised():
    policy = Policy(deny_keys=[("Control", "Q")])
    with pytest.raises(ActionRejected, match="'ctrl\\+q'"):
        policy.check(Keypress(keys=["q", "ctrl"]), SCREEN)
    policy.check(Keypress(keys=["alt", "f4"]), SCREEN)
    fewer = Policy(deny_keys=DEFAULT_DENY_KEYS - {frozenset({"super"})})
    fewer.check(Keypress(keys=["super"]), SCREEN)
    with pytest.raises(ActionRejected):
        fewer.check(Keypress(keys=["ctrl", "alt", "t"]), SCREEN)


def test_policy_confirm_hook_can_refuse_screen_actions_only():
    asked = []

    def confirm(action):
        asked.append(action)
        return not isinstance(action, Type)

    policy = Policy(confirm=confirm)
    policy.check(Click(x=1, y=1), SCREEN)
    with pytest.raises(ActionRejected, match="declined by the confirm hook"):
        policy.check(Type(text="rm -rf"), SCREEN)
    policy.check(Done(), SCREEN)
    assert asked == [Click(x=1, y=1), Type(text="rm -rf")]


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"action": "triple_click", "coordinate": [5, 6]}, TripleClick(x=5, y=6)),
        ({"type": "click", "x": 5, "y": 6, "count": 3}, TripleClick(x=5, y=6)),
        ({"type": "click", "x": 5, "y": 6, "clicks": 2, "button": "right"},
         DoubleClick(x=5, y=6, button="right")),
        ({"action": "left_click", "coordinate": [5, 6], "text": "ctrl+shift"},
         Click(x=5, y=6, modifiers=["ctrl", "shift"])),
        ({"type": "click", "x": 5, "y": 6, "button": "x1"}, Click(x=5, y=6, button="back")),
        ({"type": "click", "x": 5, "y": 6, "button": 9}, Click(x=5, y=6, button="forward")),
        ({"action": "left_mouse_down", "coordinate": [5, 6]}, MouseDown(x=5, y=6)),
        ({"action": "right_mouse_down"}, MouseDown(button="right")),
        ({"action": "left_mouse_up"}, MouseUp()),
        ({"action": "hold_key", "text": "shift", "duration": 1.5},
         Keypress(keys=["shift"], hold_ms=1500)),
        ({"type": "key_down", "keys": "ctrl+Control_R"}, KeyDown(keys=["ctrl", "ctrl_r"])),
        ({"type": "keyup", "key": "KP_Enter"}, KeyUp(keys=["kp_enter"])),
        ({"type": "keypress", "keys": ["kp_enter"]}, Keypress(keys=["kp_enter"])),
        ({"type": "right_drag", "path": [[1, 2], [3, 4]], "modifiers": ["alt"], "duration": 2},
         Drag(path=[(1, 2), (3, 4)], button="right", modifiers=["alt"], duration_ms=2000)),
        ({"action": "scroll", "coordinate": [5, 6], "scroll_direction": "down",
          "scroll_amount": 2, "text": "ctrl"},
         Scroll(x=5, y=6, scroll_y=2, modifiers=["ctrl"])),
    ],
)  # fmt: skip
def test_normalize_reads_the_whole_vocabulary(raw, expected):
    assert normalize_action(raw) == expected


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"type": "click", "x": 1, "y": 1, "count": 4}, "count=4 is not 1, 2 or 3"),
        ({"type": "click", "x": 1, "y": 1, "button": "4"}, "'back', 'forward'"),
        ({"type": "click", "x": 1, "y": 1, "modifiers": ["sparkle"]}, "not a key name"),
        ({"type": "keypress", "keys": ["kp_enter"], "hold_ms": 20_000}, "less than or equal"),
    ],
)
def test_normalize_refuses_what_the_vocabulary_cannot_say(raw, message):
    with pytest.raises(InvalidAction, match=message):
        normalize_action(raw)


@pytest.mark.parametrize(
    ("action", "held", "reason"),
    [
        (Keypress(keys=["t"]), ["ctrl", "alt"], "keypress 'ctrl\\+alt\\+t' is not allowed"),
        (KeyDown(keys=["delete"]), ["ctrl_r", "alt"], "'ctrl_r\\+alt\\+delete'"),
        (KeyDown(keys=["super_r"]), [], "'super' is on the deny list"),
        (Type(text="at"), ["ctrl", "alt"], "type 'ctrl\\+alt\\+t'"),
        (Click(x=1, y=1, modifiers=["super"]), [], "click 'super'"),
        (Drag(path=[(1, 1), (2, 2)], modifiers=["Super_R"]), [], "drag 'super_r'"),
        (Keypress(keys=["XF86PowerOff"]), [], "'xf86poweroff' is on the deny list"),
        (Keypress(keys=["XF86_Switch_VT_2"]), [], "on the deny list"),
        (MouseDown(x=900, y=1), [], "outside the 800x600 screen"),
    ],
)
def test_policy_counts_held_keys_and_modifiers_into_the_chord(action, held, reason):
    with pytest.raises(ActionRejected, match=reason):
        Policy().check(action, SCREEN, held=held)


def test_policy_lets_held_keys_be_released_and_ordinary_holds_run():
    policy = Policy()
    policy.check(KeyUp(keys=["ctrl", "alt"]), SCREEN, held=["ctrl", "alt"])
    policy.check(KeyDown(keys=["shift"]), SCREEN, held=["ctrl"])
    policy.check(Type(text="abc"), SCREEN, held=["shift"])
    policy.check(Click(x=1, y=1, button="back", modifiers=["ctrl", "shift"]), SCREEN)
    Policy(deny_keys=()).check(Keypress(keys=["XF86PowerOff"]), SCREEN)


def test_held_after_keeps_the_account_of_keys_and_buttons():
    steps = [KeyDown(keys=["ctrl", "shift"]), MouseDown(button="right"), KeyUp(keys=["ctrl"])]
    state: tuple[list[str], list[str]] = ([], [])
    for step in steps:
        state = held_after(state, step)
    assert state == (["shift"], ["right"])
    assert held_after(state, MouseUp(button="right")) == (["shift"], [])


def test_a_key_named_twice_is_pressed_once():
    assert Keypress(keys=["ctrl", "Control_L", "s"]).keys == ["ctrl", "s"]
    assert Click(x=1, y=1, modifiers=["shift", "Shift_L"]).modifiers == ["shift"]
    assert KeyDown(keys=["a", "A"]).keys == ["a"]
