"""What the agent may do to a screen: the Action models, Transform, resolve and Policy.

Owns the wire schema of DESIGN.md §8, the one image↔screen transform (`resolve`) and the
pre-execution policy; model output is read by normalize.py. Desktops only ever see
resolved, checked actions. Start at the models, then resolve() and Policy.check().
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)

from gui_harness._aim import click_point
from gui_harness.errors import ActionRejected, InvalidAction
from gui_harness.keys import KEY_NAMES, canonical_key, key_family
from openprogram.agentic.ask import ask_user
from openprogram.echo import echo
from openprogram.errors import UsageError

__all__ = [
    "ACTION_TYPES",
    "DEFAULT_DENY_KEYS",
    "KEY_NAMES",
    "MAX_KEYS",
    "Action",
    "Click",
    "Done",
    "DoubleClick",
    "Drag",
    "Fail",
    "KeyDown",
    "KeyUp",
    "Keypress",
    "MouseButton",
    "MouseDown",
    "MouseUp",
    "Move",
    "Policy",
    "Scroll",
    "Transform",
    "TripleClick",
    "Type",
    "Wait",
    "action_adapter",
    "canonical_key",
    "held_after",
    "resolve",
]

MouseButton = Literal["left", "right", "middle", "back", "forward"]
"""Which mouse button an action uses; back and forward are X's buttons 8 and 9."""

MAX_KEYS = 8
"""Keys in one keypress chord: the four modifiers and a key, with room for aliases."""


def _canonical_keys(keys: list[str] | None) -> list[str] | None:
    """Each key's canonical name, once (a key named twice is pressed once)."""
    try:
        return list(dict.fromkeys(map(canonical_key, keys))) if keys is not None else None
    except InvalidAction as exc:
        raise ValueError(str(exc)) from None


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str  # narrowed to a Literal by each action; declared here so it dumps first


class _Pointer(_Base):
    """An action aimed at a point: both x and y (image or screen pixels) or an element;
    with an element that is a grid, `cell` names one of its cells ("B3", "R3C2")."""

    x: int | None = None
    y: int | None = None
    element: int | None = Field(default=None, ge=0)
    cell: str | None = Field(default=None, min_length=1, max_length=16)

    _target_optional: ClassVar[bool] = False

    @model_validator(mode="after")
    def _check_target(self) -> _Pointer:
        kind = self.type
        if (self.x is None) != (self.y is None):
            raise ValueError(f"{kind} needs both x and y, got x={self.x!r}, y={self.y!r}")
        if self.x is not None and self.element is not None:
            raise ValueError(f"{kind} takes x, y or element, not both")
        if self.x is None and self.element is None and not self._target_optional:
            raise ValueError(f"{kind} needs a target: both x and y, or element=<number>")
        if self.cell is not None and self.element is None:
            raise ValueError(f"{kind} with cell={self.cell!r} needs the grid's element=<number>")
        return self


class _Held(_Base):
    """An action that may hold keys down while it runs (`modifiers`, e.g. ["ctrl"])."""

    modifiers: list[str] | None = Field(default=None, max_length=MAX_KEYS - 1)

    @field_validator("modifiers")
    @classmethod
    def _canonical_modifiers(cls, keys: list[str] | None) -> list[str] | None:
        return _canonical_keys(keys) or None  # no keys held is None, as when left out


class Click(_Held, _Pointer):
    """Press and release a mouse button once, holding `modifiers` (e.g. ["ctrl"])."""

    type: Literal["click"] = "click"
    button: MouseButton = "left"


class DoubleClick(_Held, _Pointer):
    """Click a button twice in quick succession (the left one by default)."""

    type: Literal["double_click"] = "double_click"
    button: MouseButton = "left"


class TripleClick(_Held, _Pointer):
    """Click a button three times in quick succession: selects a line or paragraph."""

    type: Literal["triple_click"] = "triple_click"
    button: MouseButton = "left"


class MouseDown(_Pointer):
    """Press a mouse button and keep it held (at a point, or where the pointer is); a
    later mouse_up releases it."""

    type: Literal["mouse_down"] = "mouse_down"
    button: MouseButton = "left"

    _target_optional: ClassVar[bool] = True


class MouseUp(_Pointer):
    """Release a held mouse button (after moving to a point, or where the pointer is)."""

    type: Literal["mouse_up"] = "mouse_up"
    button: MouseButton = "left"

    _target_optional: ClassVar[bool] = True


class Move(_Pointer):
    """Move the pointer without pressing anything (hover)."""

    type: Literal["move"] = "move"


class Scroll(_Held, _Pointer):
    """Turn the wheel by (scroll_x, scroll_y) clicks at a point, or where the pointer is,
    holding `modifiers` (ctrl+wheel zooms in many apps).

    Positive scroll_y scrolls down, positive scroll_x scrolls right.
    """

    type: Literal["scroll"] = "scroll"
    scroll_x: int = 0
    scroll_y: int = 0

    _target_optional: ClassVar[bool] = True

    @model_validator(mode="after")
    def _check_amount(self) -> Scroll:
        if self.scroll_x == 0 and self.scroll_y == 0:
            raise ValueError("scroll needs a non-zero scroll_x or scroll_y (wheel clicks)")
        return self


class Drag(_Held):
    """Press `button` at path[0], move through the points, release at path[-1], holding
    `modifiers`; `duration_ms` paces it (press to release), else it moves at its own pace."""

    type: Literal["drag"] = "drag"
    path: list[tuple[int, int]] = Field(min_length=2)
    button: MouseButton = "left"
    duration_ms: int | None = Field(default=None, ge=0, le=60_000)


class Type(_Base):
    """Type text into whatever has the keyboard focus."""

    type: Literal["type"] = "type"
    text: str


class Keypress(_Base):
    """Press keys together as one chord (["ctrl", "s"]) and release them (at most
    MAX_KEYS keys); `hold_ms` holds the chord down that long before releasing it."""

    type: Literal["keypress"] = "keypress"
    keys: list[str] = Field(min_length=1, max_length=MAX_KEYS)
    hold_ms: int | None = Field(default=None, ge=0, le=10_000)

    @field_validator("keys")
    @classmethod
    def _canonical(cls, keys: list[str]) -> list[str]:
        return _canonical_keys(keys) or []


class KeyDown(_Base):
    """Press keys in order and keep them held (actions in between run with them held);
    a later key_up releases them."""

    type: Literal["key_down"] = "key_down"
    keys: list[str] = Field(min_length=1, max_length=MAX_KEYS)

    @field_validator("keys")
    @classmethod
    def _canonical(cls, keys: list[str]) -> list[str]:
        return _canonical_keys(keys) or []


class KeyUp(_Base):
    """Release held keys (pressed by key_down), in reverse order."""

    type: Literal["key_up"] = "key_up"
    keys: list[str] = Field(min_length=1, max_length=MAX_KEYS)

    @field_validator("keys")
    @classmethod
    def _canonical(cls, keys: list[str]) -> list[str]:
        return _canonical_keys(keys) or []


class Wait(_Base):
    """Do nothing for `ms` milliseconds (0..60000)."""

    type: Literal["wait"] = "wait"
    ms: int = Field(default=500, ge=0, le=60_000)


class Done(_Base):
    """Declare the task accomplished; `reason` says what shows it."""

    type: Literal["done"] = "done"
    reason: str = ""


class Fail(_Base):
    """Give up on the task; `reason` says why."""

    type: Literal["fail"] = "fail"
    reason: str = ""


_MODELS = (
    *(Click, DoubleClick, TripleClick, MouseDown, MouseUp, Move, Drag, Scroll, Type),
    *(Keypress, KeyDown, KeyUp, Wait, Done, Fail),
)
Action = Annotated[
    Click
    | DoubleClick
    | TripleClick
    | MouseDown
    | MouseUp
    | Move
    | Drag
    | Scroll
    | Type
    | Keypress
    | KeyDown
    | KeyUp
    | Wait
    | Done
    | Fail,
    Field(discriminator="type"),
]
"""Any action, discriminated on its `type`."""
action_adapter: TypeAdapter[Action] = TypeAdapter(Action)
"""Validates canonical action dicts (the wire format); use normalize_action for model output."""
_BY_TYPE: dict[str, type[_Base]] = {model.model_fields["type"].default: model for model in _MODELS}
ACTION_TYPES: tuple[str, ...] = tuple(_BY_TYPE)
"""The canonical action kinds, the values of `type`."""


def held_after(held: tuple[list[str], list[str]], action: Action) -> tuple[list[str], list[str]]:
    """The (keys, buttons) held down after `action` ran, from those held before it: what
    key_down/key_up and mouse_down/mouse_up change. Desktops that cannot ask the screen
    keep their account with this."""
    keys, buttons = list(held[0]), list(held[1])
    if isinstance(action, KeyDown):
        keys += [key for key in action.keys if key not in keys]
    elif isinstance(action, KeyUp):
        keys = [key for key in keys if key not in action.keys]
    elif isinstance(action, MouseDown) and action.button not in buttons:
        buttons.append(action.button)
    elif isinstance(action, MouseUp):
        buttons = [button for button in buttons if button != action.button]
    return keys, buttons


# --- coordinates -----------------------------------------------------------------------


@dataclass(frozen=True)
class Transform:
    """Maps image pixels to screen pixels: screen = origin + image * scale (rounded)."""

    scale: float = 1.0
    origin: tuple[int, int] = (0, 0)

    def __post_init__(self) -> None:
        if not (math.isfinite(self.scale) and self.scale > 0):
            raise UsageError(f"Transform scale={self.scale!r} must be a positive number")

    def to_screen(self, x: int, y: int) -> tuple[int, int]:
        """Screen pixel of image pixel (x, y)."""
        return (
            math.floor(self.origin[0] + x * self.scale + 0.5),
            math.floor(self.origin[1] + y * self.scale + 0.5),
        )

    def to_image(self, x: int, y: int) -> tuple[int, int]:
        """Image pixel of screen pixel (x, y)."""
        return (
            math.floor((x - self.origin[0]) / self.scale + 0.5),
            math.floor((y - self.origin[1]) / self.scale + 0.5),
        )

    def apply(self, action: Action) -> Action:
        """The same action with every coordinate mapped from image to screen pixels."""
        if isinstance(action, Drag):
            return action.model_copy(update={"path": [self.to_screen(*p) for p in action.path]})
        if isinstance(action, _Pointer) and action.x is not None and action.y is not None:
            x, y = self.to_screen(action.x, action.y)
            return action.model_copy(update={"x": x, "y": y})
        return action


def resolve(
    action: Action,
    components: Iterable[Any] = (),
    transform: Transform | None = None,
    *,
    image: Any = None,
) -> Action:
    """Replace `element=k` by the centre of component k (or, with `cell`, by the middle of
    that cell of grid component k), then map image → screen pixels.

    `components` are the numbered elements of the latest observation: objects or dicts
    with `index` and `box` = (x, y, w, h) in image pixels; a grid's have a
    `cell_point(cell)` method (perception's Component). With `image` (the observation's
    screenshot), a component that acts only on part of its box, a wide control whose
    middle is blank or an expanded expander, is clicked on its label instead
    (_aim.click_point). Returns an action with screen x, y, element=None and cell=None.
    Raises InvalidAction for an element that is not on screen, a cell of a component
    that has no cells, or a cell that is not on screen.
    """
    if isinstance(action, _Pointer) and action.element is not None:
        chosen = {_get(c, "index"): c for c in components}
        component = chosen.get(action.element)
        if component is None:
            valid = ", ".join(map(str, sorted(chosen))) or "none are on screen"
            raise InvalidAction(
                f"element={echo(action.element)} is not on the latest screen; valid elements:"
                f" {valid}. Pick one of those or give x, y"
            )
        if action.cell is not None:
            cell_point = getattr(component, "cell_point", None)
            if cell_point is None:
                raise InvalidAction(
                    f"element={action.element} has no cells to address (cell="
                    f"{echo(action.cell)}); give cell only with a grid's element"
                )
            cx, cy = cell_point(action.cell)
        elif image is not None and not isinstance(component, Mapping):
            cx, cy = click_point(image, component)
        else:
            x, y, w, h = _get(component, "box")
            cx, cy = x + w // 2, y + h // 2
        update = {"x": int(cx), "y": int(cy), "element": None, "cell": None}
        action = action.model_copy(update=update)
    return (transform or Transform()).apply(action)


def _get(component: Any, name: str) -> Any:
    return component[name] if isinstance(component, Mapping) else getattr(component, name)


# --- policy ----------------------------------------------------------------------------

DEFAULT_DENY_KEYS: frozenset[frozenset[str]] = frozenset(
    frozenset(chord)
    for chord in [
        # open a shell or a launcher that runs commands: the terminal (GNOME, Ubuntu, XFCE,
        # Cinnamon, MATE), the run dialog and KRunner, application menus and finders
        ("ctrl", "alt", "t"),
        ("alt", "f1"),
        ("alt", "f2"),
        ("alt", "f3"),
        ("alt", "space"),
        ("ctrl", "escape"),
        # drop-down terminals (Guake, Yakuake, Tilda: f12), terminals and launchers of
        # tiling window managers (dwm, i3 with alt as mod: alt+enter, alt+shift+enter,
        # alt+p/dmenu, alt+shift+q quits), an editor's terminal (ctrl+`), and the
        # keyboard context menu (shift+f10), which offers "Open in Terminal" on a desktop
        ("f12",),
        ("alt", "enter"),
        ("alt", "p"),
        ("alt", "shift", "q"),
        ("alt", "shift", "c"),
        ("ctrl", "`"),
        ("shift", "f10"),
        # the super (meta, windows, cmd) key alone or in any chord: overview, launcher,
        # lock (super+l), run (super+r), session and window-manager shortcuts
        ("super",),
        # lock, log out, shut down, kill the X server or a window (xkill), task managers
        ("ctrl", "alt", "delete"),
        ("ctrl", "alt", "backspace"),
        ("ctrl", "alt", "l"),
        ("ctrl", "alt", "end"),
        ("ctrl", "alt", "escape"),
        ("ctrl", "shift", "escape"),
        ("ctrl", "alt", "shift", "pageup"),
        ("ctrl", "alt", "shift", "pagedown"),
        ("alt", "f4"),
        # switch to a text console
        *(("ctrl", "alt", f"f{n}") for n in range(1, 13)),
        # keys X names whose press alone does the same: power, sleep, log out, lock,
        # a terminal or a configured launcher, kill the X server, switch the console or
        # the video mode, break grabs; and SysRq
        *(
            (f"xf86{name}",)
            for name in (
                "poweroff",
                "powerdown",
                "sleep",
                "suspend",
                "standby",
                "hibernate",
                "logoff",
                "screensaver",
                "terminal",
                "cleargrab",
                "ungrab",
                "nextvmode",
                "prevvmode",
                "loggrabinfo",
                "logwindowtree",
                *(f"switchvt{n}" for n in range(1, 13)),
                *(f"launch{c}" for c in "0123456789abcdef"),
            )
        ),
        ("terminate_server",),
        ("sys_req",),
    ]
)
"""Chords refused by default: those that open a terminal (drop-down ones included), a
run dialog, a launcher or a context menu, any chord with super or f12, those that lock,
end or leave the session or close windows, and the keys that do so alone."""


@dataclass
class Policy:
    """Checks an action before it runs; `check` raises ActionRejected with the reason.

    `deny_keys`: chords refused in any order, also inside a larger chord (default
    DEFAULT_DENY_KEYS; extend it with `DEFAULT_DENY_KEYS | {frozenset({"ctrl", "q"})}`).
    `confirm`: asked about every action that touches the screen (not wait/done/fail);
    False refuses it. `confirm=openprogram.ask_user` asks a person "Allow …?" (yes/no):
    the runtime's asker answers, or the run suspends until the question is answered.
    """

    deny_keys: Iterable[Iterable[str]] = DEFAULT_DENY_KEYS
    confirm: Callable[[Action], bool] | Callable[..., Any] | None = None
    max_text: int = 10_000
    _denied: frozenset[frozenset[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._denied = frozenset(frozenset(map(_deny_key, c)) for c in self.deny_keys)

    def check(
        self, action: Action, screen_size: tuple[int, int], *, held: Iterable[str] = ()
    ) -> None:
        """Raise ActionRejected unless `action` (screen pixels) may run on a screen this size
        with the keys `held` down (the desktop's `held_keys`, from earlier key_downs): keys
        pressed while others are held make one chord with them."""
        reason = self._refusal(action, screen_size, list(held))
        if reason is not None:
            raise ActionRejected(reason, action=action)

    def _refusal(self, action: Action, screen_size: tuple[int, int], held: list[str]) -> str | None:
        width, height = screen_size
        if isinstance(action, _Pointer) and (action.element is not None or action.cell):
            return (
                f"{action.type} at element={action.element} is unresolved; call"
                " gui_harness.actions.resolve() before Policy.check()"
            )
        points = list(action.path) if isinstance(action, Drag) else []
        if isinstance(action, _Pointer) and action.x is not None and action.y is not None:
            points = [(action.x, action.y)]
        for x, y in points:
            if not (0 <= x < width and 0 <= y < height):
                return (
                    f"{action.type} at ({x}, {y}) is outside the {width}x{height} screen;"
                    f" pick a point with 0 <= x < {width} and 0 <= y < {height}"
                )
        for chord in _chords(action, held):
            denied = next((c for c in self._denied if c <= {key_family(k) for k in chord}), None)
            if denied is not None:
                pressed, listed = "+".join(chord), "+".join(sorted(denied))
                return (
                    f"{action.type} {echo(pressed)} is not allowed ({listed!r} is on the deny"
                    " list); reach the goal another way"
                )
        if isinstance(action, Type) and not action.text:
            return "type with empty text does nothing; give the text to type"
        if isinstance(action, Type) and len(action.text) > self.max_text:
            return (
                f"type of {len(action.text)} characters is over the {self.max_text}-character"
                " limit; type it in smaller parts"
            )
        touches_screen = not isinstance(action, (Wait, Done, Fail))
        if touches_screen and self.confirm is not None and not self._confirmed(action):
            return f"{action.type} was declined by the confirm hook; try another way"
        return None

    def _confirmed(self, action: Action) -> bool:
        if self.confirm is ask_user:
            shown = json.dumps(action.model_dump(exclude_none=True), ensure_ascii=False)
            answer = ask_user(f"Allow the GUI agent to do {shown[:500]}?", choices=["yes", "no"])
            return bool(answer == "yes")
        assert self.confirm is not None
        return bool(self.confirm(action))


def _deny_key(name: str) -> str:
    """A deny list's key, canonical; a key X names that this install cannot look up (no
    python-xlib) is kept as X's name spelled compact, as canonical_key would give it."""
    try:
        return canonical_key(name)
    except InvalidAction:
        return name.strip().lower().replace("_", "").replace("-", "")


def _chords(action: Action, held: list[str]) -> list[list[str]]:
    """The key chords `action` makes with the keys `held` down: a keypress's or key_down's
    keys, a pointer action's modifiers, each typed character's key (only while keys are
    held, for ctrl+alt held and then "t" typed is ctrl+alt+t)."""
    if isinstance(action, (Keypress, KeyDown)):
        return [[*held, *(k for k in action.keys if k not in held)]]
    modifiers = getattr(action, "modifiers", None)
    if modifiers:
        return [[*held, *(k for k in modifiers if k not in held)]]
    if isinstance(action, Type) and held:
        return [[*held, key] for key in dict.fromkeys(map(canonical_key, action.text))]
    return []
