"""AT-SPI over jeepney: role and state numbers, method-call messages, and `Pipeline`,
which sends calls on one connection without waiting and hands each reply to the
callback its call named, so a tree walk keeps every app busy at once until a deadline.

Shared by accessibility.py (the Collection query) and _tree_walk.py (the bounded walk);
the D-Bus client is jeepney (docs/gui.md says why).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from gui_harness.perception.component import Kind

__all__ = [
    "ACCESSIBLE",
    "ROLE_KINDS",
    "Pipeline",
    "call",
    "get_property",
    "state_bits",
]

ACCESSIBLE = "org.a11y.atspi.Accessible"
COMPONENT = "org.a11y.atspi.Component"
TABLE = "org.a11y.atspi.Table"
ROOT = "/org/a11y/atspi/accessible/root"
REGISTRY = "org.a11y.atspi.Registry"

ROLE_KINDS: dict[int, Kind] = {
    7: "checkbox",  # check box
    8: "checkbox",  # check menu item
    130: "checkbox",  # switch
    44: "radio",  # radio button
    45: "radio",  # radio menu item
    11: "dropdown",  # combo box
    79: "field",  # entry
    40: "field",  # password text
    52: "field",  # spin button
    61: "field",  # text (kept only when editable)
    76: "field",  # autocomplete
    88: "link",
    37: "tab",  # page tab
    43: "button",  # push button
    62: "button",  # toggle button
    129: "button",  # push button menu
    35: "button",  # menu item
    33: "button",  # menu (a menu bar's entries)
    51: "button",  # slider
    32: "button",  # list item (kept only when selectable or focusable)
    91: "button",  # tree item (likewise)
    56: "button",  # table cell (likewise)
    10: "button",  # column header (a file list's, which sorts by it; not asked of browsers)
    57: "button",  # table column header (Qt's; likewise)
    26: "icon",
}
"""AT-SPI role number → component kind, for the roles perception reports."""

MENU_BAR = 34
COLUMN_HEADERS = frozenset({10, 57})
MENU = 33
POPUP_MENU = 41
LABEL = 29
PAGE_TAB = 37
PAGE_TAB_LIST = 38
COMBO_BOX = 11
SCROLL_PANE = 49
VIEWPORT = 108
SCROLL_BAR = 48
SCROLLERS = frozenset({SCROLL_PANE, VIEWPORT})  # what shows of their content is in their box
TABLE_ROLES = frozenset({55, 66})  # table, tree table: a grid when they manage descendants
ITEM_ROLES = frozenset({32, 91, 56})
TEXT_ROLE = 61
CAPTIONED_ROLES = frozenset({11, 79, 40, 52, 61, 76, 51})
"""Roles whose name may be their value, or nothing (a combo box, an entry, a spin
button, a slider): what names them on the screen is a caption beside them, which the
tree links by a labelled-by relation (Qt and GTK 3 name a combo box by its current
option; GTK 3 leaves an entry unnamed)."""
LABELLED_BY = 2  # AtspiRelationType: a relation set's "labelled by" targets
# AT-SPI state bits (AtspiStateType)
ACTIVE, CHECKED, EDITABLE, ENABLED, EXPANDED = 1, 4, 7, 8, 10
FOCUSABLE, FOCUSED, PRESSED, SELECTABLE, SELECTED, SENSITIVE = 11, 12, 20, 22, 23, 24
SHOWING, VISIBLE, MANAGES_DESCENDANTS = 25, 30, 31
COORDS_SCREEN = 0


def state_bits(body: tuple[Any, ...]) -> int:
    """The 64 state bits of a GetState reply."""
    low, high = (int(v) for v in body[0][:2])
    return low | (high << 32)


def call(
    bus_name: str,
    path: str,
    interface: str,
    method: str,
    signature: str | None = None,
    body: tuple[Any, ...] = (),
) -> Any:
    """A method-call message to object `path` of `bus_name`."""
    from jeepney import DBusAddress, new_method_call

    return new_method_call(DBusAddress(path, bus_name, interface), method, signature, body)


def get_property(bus_name: str, path: str, interface: str, name: str) -> Any:
    """A Properties.Get message (the reply's body is one (signature, value) variant)."""
    from jeepney import DBusAddress, Properties

    return Properties(DBusAddress(path, bus_name, interface)).get(name)


def at_point(bus_name: str, path: str, x: int, y: int) -> Any:
    """A Component.GetAccessibleAtPoint message: the child of `path` at screen pixel (x, y)."""
    return call(bus_name, path, COMPONENT, "GetAccessibleAtPoint", "iiu", (x, y, COORDS_SCREEN))


def process_of(bus_name: str) -> Any:
    """A GetConnectionUnixProcessID message to the bus: the pid of `bus_name`'s process."""
    from jeepney import DBusAddress, new_method_call

    bus = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus")
    return new_method_call(bus, "GetConnectionUnixProcessID", "s", (bus_name,))


Callback = Callable[[tuple[Any, ...] | None], None]
"""Called with a reply's body, or None when the call failed (an error reply)."""


class Pipeline:
    """Method calls on one connection: send() returns at once; run() reads replies and
    calls their callbacks (which may send more) until none is outstanding or the
    deadline passes. Replies to calls of an earlier run (late) are dropped."""

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self.errors = 0
        self.sent = 0
        self._waiting: dict[int, Callback] = {}
        self._optional: set[int] = set()  # calls whose failure is an answer, not an error

    @property
    def outstanding(self) -> int:
        """Calls sent whose reply has not come yet."""
        return len(self._waiting)

    def send(self, message: Any, callback: Callback, *, optional: bool = False) -> None:
        """Send `message`; its reply goes to `callback`. An `optional` call's error reply
        is not counted in `errors` (asked of objects that may lack the interface)."""
        serial = next(self.connection.outgoing_serial)
        self.connection.send(message, serial=serial)
        self._waiting[serial] = callback
        if optional:
            self._optional.add(serial)
        self.sent += 1

    def run(self, deadline: float, *, idle: float | None = None, keep: bool = False) -> bool:
        """Dispatch replies until none is outstanding (True) or `deadline` (False; what
        is still outstanding is forgotten, unless `keep`: then a later run() may still
        take it), or, with `idle`, until no reply came for that many seconds (False
        likewise: a hung app is not waited for to the end)."""
        from jeepney import HeaderFields, MessageType

        while self._waiting:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                message = self.connection.receive(
                    timeout=remaining if idle is None else min(remaining, idle)
                )
            except TimeoutError:
                break
            serial = message.header.fields.get(HeaderFields.reply_serial)
            callback = self._waiting.pop(serial, None) if serial is not None else None
            if callback is None:  # a signal, or a late reply to an earlier snapshot
                continue
            if message.header.message_type == MessageType.method_return:
                callback(message.body)
            else:  # the object went away, or lacks the interface
                if serial not in self._optional:
                    self.errors += 1
                callback(None)
            self._optional.discard(serial)
        done = not self._waiting
        if not keep:
            self.forget()
        return done

    def forget(self) -> None:
        """Drop the calls still outstanding: their late replies are ignored."""
        self._waiting.clear()
        self._optional.clear()


class Calls:
    """One reader's calls on a Pipeline, counted until answered (a pipeline may carry
    several readers' calls at once: each asks whether its own are all in, and whether
    its app answered any)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.pending = 0
        self.answered = 0

    def send(self, message: Any, callback: Callback, *, optional: bool = False) -> None:
        """Send `message` on the pipeline; its reply goes to `callback` (`optional`: see
        Pipeline.send)."""
        self.pending += 1

        def answered(body: tuple[Any, ...] | None) -> None:
            self.pending -= 1
            self.answered += 1
            callback(body)

        self.pipeline.send(message, answered, optional=optional)
