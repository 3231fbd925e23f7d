"""FakeDesktop: a pure-Python screen of drawn widgets, for fast tests of the agent loop.

Owns the widgets (Button, TextField, Checkbox), their PIL drawing and the hit-testing of
executed actions. No X server, no OpenCV; the drawing is plain enough for contour
detection. Start at FakeDesktop.demo_form().
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from PIL import Image, ImageDraw, ImageFont

from gui_harness.actions import (
    Action,
    Click,
    DoubleClick,
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
    held_after,
)
from gui_harness.errors import InvalidAction
from openprogram.errors import UsageError

__all__ = ["Button", "Checkbox", "FakeDesktop", "TextField", "Widget"]

Box = tuple[int, int, int, int]
"""(x, y, width, height) in screen pixels."""

_BACKGROUND = (236, 236, 236)
_INK = (40, 40, 40)
_BUTTON_FILL = (200, 200, 200)
_SELECTED_FILL = (120, 150, 200)
_FONT_SIZE = 14


@dataclass(eq=False)
class Button:
    """A push button. Buttons sharing a `group` behave like radio buttons: one is selected."""

    name: str
    box: Box
    label: str
    group: str | None = None
    on_press: Callable[[FakeDesktop], None] | None = None
    presses: int = 0
    selected: bool = False


@dataclass(eq=False)
class TextField:
    """A single-line text field; clicking it takes the keyboard focus. `label` shows left of it."""

    name: str
    box: Box
    label: str = ""
    text: str = ""


@dataclass(eq=False)
class Checkbox:
    """A small square that toggles when clicked, with its label to the right."""

    name: str
    box: Box
    label: str
    checked: bool = False


Widget = Button | TextField | Checkbox
"""Anything a FakeDesktop can show."""


@dataclass(eq=False)
class FakeDesktop:
    """A Desktop made of widgets; actions change their state, screenshots draw them.

    `actions` lists every executed action, `events` what they did to widgets, as
    (what, widget name) pairs: ("focus", "name"), ("toggle", "subscribe"),
    ("press", "save"), ("select", "red"), ("type", "name"). `on_action(desktop, action)`
    runs after each action, e.g. to change the screen the way an app would. A left
    button's mouse_down and mouse_up at one widget click it; `held_keys` and
    `held_buttons` are what key_down and mouse_down left held, as on X11Desktop.
    """

    size: tuple[int, int] = (800, 600)
    widgets: list[Widget] = field(default_factory=list)
    on_action: Callable[[FakeDesktop, Action], None] | None = None
    focus: TextField | None = None
    pointer: tuple[int, int] = (0, 0)
    actions: list[Action] = field(default_factory=list)
    events: list[tuple[str, str]] = field(default_factory=list)
    saved_state: dict[str, Any] | None = None
    held_keys: list[str] = field(default_factory=list)
    held_buttons: list[str] = field(default_factory=list)
    _pressed_at: tuple[int, int] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        names = [w.name for w in self.widgets]
        if len(set(names)) != len(names):
            raise UsageError(f"widget names must be unique, got {names!r}")

    @classmethod
    def demo_form(cls, size: tuple[int, int] = (800, 600)) -> FakeDesktop:
        """The demo app's form: Name field, Subscribe checkbox, Red/Green/Blue choice, Save.

        Pressing Save copies `state()` into `saved_state`, as the real demo app reports it.
        """

        def save(desktop: FakeDesktop) -> None:
            desktop.saved_state = desktop.state()

        return cls(
            size=size,
            widgets=[
                TextField("name", (160, 60, 300, 32), label="Name"),
                Checkbox("subscribe", (160, 130, 20, 20), "Subscribe"),
                Button("red", (160, 190, 90, 36), "Red", group="color"),
                Button("green", (265, 190, 90, 36), "Green", group="color"),
                Button("blue", (370, 190, 90, 36), "Blue", group="color"),
                Button("save", (160, 270, 120, 40), "Save", on_press=save),
            ],
        )

    def widget(self, name: str) -> Widget:
        """The widget called `name`; raises KeyError listing the names there are."""
        for widget in self.widgets:
            if widget.name == name:
                return widget
        raise KeyError(f"no widget {name!r}; widgets are {[w.name for w in self.widgets]!r}")

    def add(self, widget: Widget) -> None:
        """Put one more widget on screen, drawn above the others."""
        if any(w.name == widget.name for w in self.widgets):
            raise UsageError(f"a widget named {widget.name!r} is already on screen")
        self.widgets.append(widget)

    def state(self) -> dict[str, Any]:
        """{name: value}: field text, checkbox bool, button presses, group → selected name."""
        values: dict[str, Any] = {}
        for widget in self.widgets:
            if isinstance(widget, TextField):
                values[widget.name] = widget.text
            elif isinstance(widget, Checkbox):
                values[widget.name] = widget.checked
            elif widget.group is None:
                values[widget.name] = widget.presses
            else:
                chosen = values.get(widget.group)
                values[widget.group] = widget.name if widget.selected else chosen
        return values

    def widget_at(self, x: int, y: int) -> Widget | None:
        """The topmost widget under screen pixel (x, y), if any."""
        for widget in reversed(self.widgets):
            left, top, width, height = _hit_box(widget)
            if left <= x < left + width and top <= y < top + height:
                return widget
        return None

    # --- Desktop protocol ----------------------------------------------------------------

    def screenshot(self) -> Image.Image:
        """Draw every widget on a light background, RGB, exactly `size` pixels."""
        image = Image.new("RGB", self.size, _BACKGROUND)
        draw = ImageDraw.Draw(image)
        font = _font()
        for widget in self.widgets:
            x, y, w, h = widget.box
            right, bottom = x + w - 1, y + h - 1
            if isinstance(widget, Button):
                fill = _SELECTED_FILL if widget.selected else _BUTTON_FILL
                draw.rectangle((x, y, right, bottom), fill=fill, outline=_INK, width=2)
                centre = (x + w / 2, y + h / 2)
                draw.text(centre, widget.label, fill=_INK, font=font, anchor="mm")
            elif isinstance(widget, TextField):
                border = 2 if widget is self.focus else 1
                draw.rectangle((x, y, right, bottom), fill="white", outline=_INK, width=border)
                draw.text((x + 6, y + h / 2), widget.text, fill=_INK, font=font, anchor="lm")
                draw.text((x - 10, y + h / 2), widget.label, fill=_INK, font=font, anchor="rm")
                if widget is self.focus:
                    caret = x + 7 + draw.textlength(widget.text, font=font)
                    draw.line((caret, y + 6, caret, bottom - 6), fill=_INK, width=1)
            else:
                draw.rectangle((x, y, right, bottom), fill="white", outline=_INK, width=2)
                if widget.checked:
                    tick = [(x + 4, y + h // 2), (x + w // 2 - 1, bottom - 4), (right - 3, y + 4)]
                    draw.line(tick, fill=_INK, width=3)
                label_at = (right + 8, y + h / 2)
                draw.text(label_at, widget.label, fill=_INK, font=font, anchor="lm")
        return image

    def execute(self, action: Action) -> None:
        """Apply one action in screen pixels to the widgets; record it in `actions`."""
        if getattr(action, "element", None) is not None:
            raise UsageError(
                f"FakeDesktop got {action!r} with an unresolved element; pass actions through"
                " gui_harness.actions.resolve() before execute()"
            )
        self._check_held(action)
        self.actions.append(action)
        point = _point(action)
        if point is not None:
            self.pointer = point
        pressed_at = self.pointer if isinstance(action, MouseDown) else None
        self.held_keys, self.held_buttons = held_after((self.held_keys, self.held_buttons), action)
        if isinstance(action, (Click, DoubleClick, TripleClick)) and action.button == "left":
            for _ in range({"click": 1, "double_click": 2, "triple_click": 3}[action.type]):
                self._click()
        elif isinstance(action, MouseDown) and action.button == "left":
            self._pressed_at = pressed_at
        elif isinstance(action, MouseUp) and action.button == "left":
            pressed, self._pressed_at = self._pressed_at, None
            if pressed is not None and self.widget_at(*pressed) is self.widget_at(*self.pointer):
                self._click()
        elif isinstance(action, Drag):
            self.pointer = action.path[-1]
        elif isinstance(action, Type) and self.focus is not None:
            self.focus.text += action.text
            self.events.append(("type", self.focus.name))
        elif isinstance(action, Keypress) and action.keys == ["backspace"] and self.focus:
            self.focus.text = self.focus.text[:-1]
            self.events.append(("backspace", self.focus.name))
        if self.on_action is not None:
            self.on_action(self, action)

    def release_held(self) -> None:
        """Release what key_down and mouse_down left held."""
        self.held_keys, self.held_buttons = [], []

    def _check_held(self, action: Action) -> None:
        """Refuse, as X11Desktop does, what would press a held key or button again or
        release one that is not held."""
        keys, buttons = self.held_keys, self.held_buttons
        if isinstance(action, KeyDown) and set(action.keys) & set(keys):
            raise InvalidAction(f"key_down of {action.keys!r}: held already ({keys!r})")
        if isinstance(action, KeyUp) and not set(action.keys) <= set(keys):
            raise InvalidAction(f"key_up of {action.keys!r}: not all held (held: {keys!r})")
        if isinstance(action, MouseUp) and action.button not in buttons:
            raise InvalidAction(f"mouse_up of {action.button}: not held (held: {buttons!r})")
        pressing = (MouseDown, Click, DoubleClick, TripleClick, Drag)
        if isinstance(action, pressing) and action.button in buttons:
            raise InvalidAction(f"the {action.button} button is held by mouse_down")

    def _click(self) -> None:
        widget = self.widget_at(*self.pointer)
        self.focus = widget if isinstance(widget, TextField) else None
        if isinstance(widget, TextField):
            self.events.append(("focus", widget.name))
        elif isinstance(widget, Checkbox):
            widget.checked = not widget.checked
            self.events.append(("toggle", widget.name))
        elif isinstance(widget, Button):
            widget.presses += 1
            if widget.group is not None:
                for other in self._group(widget.group):
                    other.selected = other is widget
                self.events.append(("select", widget.name))
            self.events.append(("press", widget.name))
            if widget.on_press is not None:
                widget.on_press(self)

    def _group(self, group: str) -> Iterable[Button]:
        return (w for w in self.widgets if isinstance(w, Button) and w.group == group)


def _point(action: Action) -> tuple[int, int] | None:
    pointing = (Click, DoubleClick, TripleClick, MouseDown, MouseUp, Move, Scroll)
    if isinstance(action, pointing) and action.x is not None:
        assert action.y is not None  # the Action models require x and y together
        return (action.x, action.y)
    return None


@functools.cache
def _font() -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=_FONT_SIZE)


def _hit_box(widget: Widget) -> Box:
    """Where a click lands on `widget`; a checkbox's label is clickable too, as in Tk."""
    if not isinstance(widget, Checkbox):
        return widget.box
    x, y, w, h = widget.box
    return (x, y, w + 8 + math.ceil(_font().getlength(widget.label)), h)
