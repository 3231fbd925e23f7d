"""The accessibility source: the interactive elements apps publish on the AT-SPI bus.

Owns `AccessibilitySource` (one Collection.GetMatches query per app, then each match's
role, name, states and screen box, all pipelined on one D-Bus connection with one
deadline) and `AccessibilitySnapshot`, what one query saw. The D-Bus client is jeepney
(docs/gui.md says why). Waiting for a tree to catch up after an action is
_tree_settle.py's; fusing with pixels is fusion.py's job; starting the buses is
gui_harness.desktop.buses'. Start at AccessibilitySource.snapshot().
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gui_harness.perception._tree_settle import TreeWatch, patience
from gui_harness.perception.detect import Component, Kind, State

__all__ = ["ROLE_KINDS", "AccessibilitySnapshot", "AccessibilitySource"]

_ROOT = "/org/a11y/atspi/accessible/root"
_REGISTRY = "org.a11y.atspi.Registry"
_ACCESSIBLE = "org.a11y.atspi.Accessible"

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
    26: "icon",
}
"""AT-SPI role number → component kind, for the roles a query asks for."""

_ITEM_ROLES = frozenset({32, 91, 56})
_TEXT_ROLE = 61
# AT-SPI state bits (AtspiStateType)
_CHECKED, _EDITABLE, _ENABLED, _EXPANDED = 4, 7, 8, 10
_FOCUSABLE, _FOCUSED, _PRESSED, _SELECTABLE, _SELECTED = 11, 12, 20, 22, 23
_SHOWING, _VISIBLE = 25, 30
_COORDS_SCREEN = 0
_MATCH_ALL, _MATCH_ANY = 1, 2
_SORT_CANONICAL = 1
_MIN_SIDE = 4  # pixels left on screen after clipping for an element to count
_MAX_LABEL = 120
_ROLE_CACHE = 20_000  # (app, object path) → role entries kept between snapshots


def _role_bits(roles: Iterable[int]) -> list[int]:
    words = [0] * 5
    for role in roles:
        words[role // 32] |= 1 << (role % 32)
    return [w - (1 << 32) if w >= 1 << 31 else w for w in words]  # D-Bus "ai" is signed


# Showing and visible (ALL of both), any attributes and interfaces (ALL of none), and ANY
# of our roles: the app filters, so only what can be on screen crosses the bus.
_RULE: tuple[Any, ...] = (
    [(1 << _SHOWING) | (1 << _VISIBLE), 0],
    _MATCH_ALL,
    {},
    _MATCH_ALL,
    _role_bits(ROLE_KINDS),
    _MATCH_ANY,
    [],
    _MATCH_ALL,
    False,
)


@dataclass(frozen=True)
class AccessibilitySnapshot:
    """What one accessibility query saw.

    `components` are in screen pixels, clipped to `screen`, in tree order, with
    index 0 (fusion numbers them). `note` says what was missing (no bus, an app that did
    not answer in time) or is None. `apps` counts the apps that answered; `elapsed_ms`
    is the query's wall time.
    """

    components: tuple[Component, ...] = ()
    screen: tuple[int, int] = (0, 0)
    note: str | None = None
    apps: int = 0
    elapsed_ms: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of the snapshot (recorded with each observation)."""
        return {
            "components": [c.to_dict() for c in self.components],
            "screen": list(self.screen),
            "note": self.note,
            "apps": self.apps,
            "elapsed_ms": round(self.elapsed_ms, 2),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AccessibilitySnapshot:
        """The snapshot `to_dict()` described."""
        width, height = (int(v) for v in data.get("screen", (0, 0)))
        return cls(
            components=tuple(Component.from_dict(c) for c in data.get("components", ())),
            screen=(width, height),
            note=data.get("note"),
            apps=int(data.get("apps", 0)),
            elapsed_ms=float(data.get("elapsed_ms", 0.0)),
        )


@dataclass
class _Element:
    app: str
    path: str
    role: int = -1
    name: str = ""
    states: int = 0
    box: tuple[int, int, int, int] | None = None
    answered: set[str] = field(default_factory=set)


class AccessibilitySource:
    """Reads the interactive elements of every app on the AT-SPI bus at `address`.

    `screen` is (width, height) in pixels: boxes are clipped to it, and elements left
    with less than 4 px either way are dropped (a window larger than the screen reports
    its off-screen widgets as showing). `timeout` (seconds) bounds one snapshot, whatever
    the bus or an app does, stretched by the machine's load (an app answering a few
    hundred calls waits its turn for a CPU; see _tree_settle.patience, at most 8×); what
    did not answer by then is left out and named in the snapshot's note. `address=None`
    gives empty snapshots noting `note` (why there is no bus). Thread-safe; the
    connection is opened on first use and reopened after a failure.

    mark() before an action and wait_caught_up() after it wait until the apps' tree
    events stop, so the next snapshot sees what the action changed (see _tree_settle).
    """

    def __init__(
        self,
        address: str | None,
        *,
        screen: tuple[int, int],
        timeout: float = 0.5,
        note: str | None = None,
    ) -> None:
        self.address = address
        self.screen = (int(screen[0]), int(screen[1]))
        self.base_timeout = timeout
        """The `timeout` given, before the load stretches it."""
        self._missing = note or "no accessibility bus is known for this desktop"
        self._connection: Any = None
        self._roles: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()
        self._watch = TreeWatch(address, timeout=timeout) if address is not None else None

    def __repr__(self) -> str:
        return f"AccessibilitySource(address={self.address!r}, screen={self.screen!r})"

    @property
    def timeout(self) -> float:
        """Seconds a snapshot taken now may take: `base_timeout` stretched by the load."""
        return self.base_timeout * patience()

    def close(self) -> None:
        """Close the D-Bus connections (the next snapshot or mark opens new ones)."""
        with self._lock:
            self._drop_connection()
        if self._watch is not None:
            self._watch.close()

    def mark(self) -> None:
        """Call before an action: the tree events that follow are its doing."""
        if self._watch is not None:
            self._watch.mark()

    def wait_caught_up(self, *, timeout: float) -> bool:
        """Wait until the apps' tree events since mark() stopped for a short quiet spell
        (none within an adaptive first wait: the action changed no tree); True then, and
        at once without a bus; False when `timeout` seconds pass with events still coming.
        Never raises for bus failures."""
        if self._watch is None:
            return True
        return self._watch.settle(timeout=timeout)

    def snapshot(self) -> AccessibilitySnapshot:
        """Query every app once: the showing, on-screen interactive elements, in tree
        order. Never raises for bus or app failures; returns within about `timeout`
        stretched by the load (twice that the first time, when it also starts listening
        for tree events)."""
        if self._watch is not None and not self._watch.watching:
            # before the query: then every app has heard of the listener before it answers
            self._watch.start()
        started = time.monotonic()
        with self._lock:
            components, apps, note = self._query(started + self.timeout)
        snapshot = AccessibilitySnapshot(
            components=tuple(components),
            screen=self.screen,
            note=note,
            apps=apps,
            elapsed_ms=(time.monotonic() - started) * 1000,
        )
        return snapshot

    # -- internals -----------------------------------------------------------------------

    def _query(self, deadline: float) -> tuple[list[Component], int, str | None]:
        limit = round(deadline - time.monotonic(), 2)  # the timeout, stretched by the load
        if self.address is None:
            return [], 0, self._missing
        try:
            connection = self._connect(deadline)
            calls = _Calls(connection, deadline)
            apps = calls.run([("registry", _call(_REGISTRY, _ROOT, _ACCESSIBLE, "GetChildren"))])
        except (OSError, ValueError, RuntimeError) as exc:  # bus gone, refused, bad address
            self._drop_connection()
            return [], 0, f"accessibility bus {self.address!r} failed: {exc}; pixels only"
        if "registry" not in apps:
            return (
                [],
                0,
                f"the accessibility registry did not answer within {limit}s; pixels only",
            )
        roots = [(str(name), str(path)) for name, path in apps["registry"][0]]
        matches = calls.run(
            [
                (
                    root,
                    _call(
                        root[0],
                        root[1],
                        "org.a11y.atspi.Collection",
                        "GetMatches",
                        "(aiia{ss}iaiiasib)uib",
                        (_RULE, _SORT_CANONICAL, 0, True),
                    ),
                )
                for root in roots
            ]
        )
        silent = [root[0] for root in roots if root not in matches]
        elements = [
            _Element(str(name), str(path))
            for root in roots
            if root in matches
            for name, path in matches[root][0]
        ]
        for element in elements:  # an object's role does not change: ask it once
            role = self._roles.get((element.app, element.path))
            if role is not None:
                element.role = role
                element.answered.add("role")
        details = calls.run(
            [
                request
                for number, element in enumerate(elements)
                for request in _detail_calls(number, element)
            ]
        )
        for (number, what), body in details.items():
            _fill(elements[number], what, body)
        if len(self._roles) > _ROLE_CACHE:
            self._roles.clear()
        self._roles.update({(e.app, e.path): e.role for e in elements if e.role >= 0})
        components = _components(elements, self.screen)
        notes = []
        if silent:
            notes.append(
                f"{len(silent)} app(s) did not answer the accessibility query within "
                f"{limit}s ({', '.join(silent)}); their windows come from pixels"
            )
        if calls.errors:
            notes.append(f"{calls.errors} accessibility call(s) failed")
        return components, len(roots) - len(silent), "; ".join(notes) or None

    def _connect(self, deadline: float) -> Any:
        if self._connection is None:
            from jeepney.io.blocking import open_dbus_connection

            assert self.address is not None
            remaining = max(deadline - time.monotonic(), 0.01)
            try:
                self._connection = open_dbus_connection(self.address, auth_timeout=remaining)
            except TimeoutError as exc:
                raise OSError(f"no answer within {remaining:.2f}s") from exc
        return self._connection

    def _drop_connection(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(OSError):  # already broken: nothing left to close
                connection.close()


def _call(
    bus_name: str,
    path: str,
    interface: str,
    method: str,
    signature: str | None = None,
    body: tuple[Any, ...] = (),
) -> Any:
    from jeepney import DBusAddress, new_method_call

    return new_method_call(DBusAddress(path, bus_name, interface), method, signature, body)


def _detail_calls(number: int, element: _Element) -> list[tuple[Any, Any]]:
    from jeepney import DBusAddress, Properties

    address = DBusAddress(element.path, element.app, _ACCESSIBLE)
    role = (
        []
        if "role" in element.answered
        else [((number, "role"), _call(element.app, element.path, _ACCESSIBLE, "GetRole"))]
    )
    return [
        *role,
        ((number, "states"), _call(element.app, element.path, _ACCESSIBLE, "GetState")),
        ((number, "name"), Properties(address).get("Name")),
        (
            (number, "box"),
            _call(
                element.app,
                element.path,
                "org.a11y.atspi.Component",
                "GetExtents",
                "u",
                (_COORDS_SCREEN,),
            ),
        ),
    ]


def _fill(element: _Element, what: str, body: tuple[Any, ...]) -> None:
    element.answered.add(what)
    if what == "role":
        element.role = int(body[0])
    elif what == "states":
        low, high = (int(v) for v in body[0][:2])
        element.states = low | (high << 32)
    elif what == "name":
        element.name = str(body[0][1])
    elif what == "box":
        x, y, w, h = (int(v) for v in body[0])
        element.box = (x, y, w, h)


class _Calls:
    """Pipelined method calls on one connection against one deadline: send them all,
    then collect the replies by serial until they are in or the deadline passes."""

    def __init__(self, connection: Any, deadline: float) -> None:
        self.connection = connection
        self.deadline = deadline
        self.errors = 0

    def run(self, requests: Sequence[tuple[Any, Any]]) -> dict[Any, tuple[Any, ...]]:
        from jeepney import HeaderFields, MessageType

        waiting: dict[int, Any] = {}
        for key, message in requests:
            serial = next(self.connection.outgoing_serial)
            self.connection.send(message, serial=serial)
            waiting[serial] = key
        replies: dict[Any, tuple[Any, ...]] = {}
        while waiting:
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                break
            try:
                message = self.connection.receive(timeout=remaining)
            except TimeoutError:
                break
            serial = message.header.fields.get(HeaderFields.reply_serial)
            key = waiting.pop(serial, None) if serial is not None else None
            if key is None:  # a signal, or a late reply to an earlier snapshot
                continue
            if message.header.message_type == MessageType.method_return:
                replies[key] = message.body
            else:  # the object went away, or lacks the interface
                self.errors += 1
        return replies


def _states(bits: int, role: int) -> tuple[State, ...]:
    states: list[State] = []
    if bits & (1 << _CHECKED) or (role == 62 and bits & (1 << _PRESSED)):
        states.append("checked")
    if bits & (1 << _SELECTED):
        states.append("selected")
    if bits & (1 << _FOCUSED):
        states.append("focused")
    if not bits & (1 << _ENABLED):
        states.append("disabled")
    if bits & (1 << _EXPANDED):
        states.append("expanded")
    return tuple(states)


def _components(elements: Sequence[_Element], screen: tuple[int, int]) -> list[Component]:
    found: list[Component] = []
    for element in elements:
        if len(element.answered) < 4 or element.box is None or element.role not in ROLE_KINDS:
            continue
        bits = element.states
        if not (bits & (1 << _SHOWING) and bits & (1 << _VISIBLE)):
            continue
        if element.role == _TEXT_ROLE and not bits & (1 << _EDITABLE):
            continue
        if element.role in _ITEM_ROLES and not bits & ((1 << _SELECTABLE) | (1 << _FOCUSABLE)):
            continue
        box = _clip(element.box, screen)
        if box is None:
            continue
        label = " ".join(element.name.split())[:_MAX_LABEL] or None
        component = Component(
            0,
            ROLE_KINDS[element.role],
            box,
            label,
            1.0,
            _states(bits, element.role),
            "accessibility",
        )
        if any(_same_place(component.box, other.box) for other in found):
            continue  # a link inside a tab, a button inside a list item: keep the outer one
        chooser = _closed_chooser(component, found)
        if chooser is not None:
            # a closed drop-down's current option (Chromium reports it as showing): it
            # names the chooser when the chooser has no name, and is no target itself
            if found[chooser].label is None:
                found[chooser] = found[chooser].with_label(component.label)
            continue
        found.append(component)
    return found


def _closed_chooser(component: Component, found: Sequence[Component]) -> int | None:
    x, y, w, h = component.box
    for position, other in enumerate(found):
        if other.kind != "dropdown" or "expanded" in other.states:
            continue
        ox, oy, ow, oh = other.box
        if ox - 2 <= x and oy - 2 <= y and x + w <= ox + ow + 2 and y + h <= oy + oh + 2:
            return position
    return None


def _clip(
    box: tuple[int, int, int, int], screen: tuple[int, int]
) -> tuple[int, int, int, int] | None:
    x, y, w, h = box
    x0, y0 = max(x, 0), max(y, 0)
    x1, y1 = min(x + w, screen[0]), min(y + h, screen[1])
    if x1 - x0 < _MIN_SIDE or y1 - y0 < _MIN_SIDE:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def _same_place(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    ix = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    iy = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return False
    inter = ix * iy
    return inter >= 0.8 * (a[2] * a[3] + b[2] * b[3] - inter)
