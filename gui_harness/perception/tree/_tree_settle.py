"""When an app's accessibility tree has caught up with an action: `TreeWatch`.

Owns one D-Bus connection to the AT-SPI bus that listens for the apps' object events
(registered with the AT-SPI registry, so apps send them at all), a reader thread that
notes when they come, and the settle rule: after an action, wait for the first event,
then for a quiet spell; no event within an adaptive first wait means nothing changed.
AccessibilitySource owns a watch and offers it as mark() / wait_caught_up(), and sends
`announcement()` before it reads an app new on the bus; reading the tree is
accessibility.py's job.
"""

from __future__ import annotations

import collections
import contextlib
import os
import select
import threading
import time
from typing import Any

from gui_harness._load import patience

__all__ = ["CHANGES", "EVENTS", "WINDOWS", "TreeWatch", "announcement"]

EVENTS: dict[str, str] = {
    "StateChanged": "object:state-changed",
    "PropertyChange": "object:property-change",
    "ChildrenChanged": "object:children-changed",
    "TextChanged": "object:text-changed",
    "SelectionChanged": "object:selection-changed",
    "ActiveDescendantChanged": "object:active-descendant-changed",
}
"""The org.a11y.atspi.Event.Object signals a watch waits on → the AT-SPI event names it
registers. Not BoundsChanged nor VisibleDataChanged: an animation sends them every frame
(gtk3-widget-factory's spinner and progress bar, ~60 a second), and what they mean is on
the screen, which the desktop's own settle watches."""

CHANGES: dict[str, str] = {
    **EVENTS,
    "BoundsChanged": "object:bounds-changed",
    "VisibleDataChanged": "object:visible-data-changed",
}
"""Every signal that says an app's tree changed (events_from() counts them by app): the
ones a watch waits on, and what moves or scrolls (a spreadsheet scrolled shows other
cells, and says so only with VisibleDataChanged)."""

WINDOWS: dict[str, str] = {
    "Create": "window:create",
    "Activate": "window:activate",
}
"""The org.a11y.atspi.Event.Window signals a watch counts as tree changes too (named
"Window:Create", "Window:Activate" in paths_since()): Qt says a new dialog came with
them alone, not with a ChildrenChanged of its app's root as GTK does."""

_REGISTRY = ("org.a11y.atspi.Registry", "/org/a11y/atspi/registry", "org.a11y.atspi.Registry")
_OBJECT_EVENTS = "org.a11y.atspi.Event.Object"
_WINDOW_EVENTS = "org.a11y.atspi.Event.Window"
QUIET_S = 0.025
"""How long the apps must send no event to count as caught up (before the load stretch)."""
_QUIET_MAX_S = 0.25
_FIRST_MIN_S = 0.05
_FIRST_MAX_S = 0.5
_FIRST_FACTOR = 4  # the wait for a first event: this many times the slowest one seen lately
_REMEMBERED = 8
_RETRY_S = 10.0  # after a failed connect, actions go unwaited this long before a retry
_RECENT = 4096  # objects whose latest tree-change events a watch keeps per app
_BATCH = 256  # messages read before the reader notes them (a flood is seen as it comes),
_BATCH_S = 0.01  # or seconds spent reading them (well within settle()'s quiet spell)


class TreeWatch:
    """The object events apps send on the AT-SPI bus at `address`.

    `start()` connects and registers; a daemon thread then notes when each event comes.
    `mark()` before an action and `settle()` after it wait until the apps' events
    stopped. Never raises for a missing, refusing or vanishing bus: the watch then does
    not wait, and `note` says why. `timeout` (seconds) bounds connecting and
    registering. Safe to share between threads.
    """

    def __init__(self, address: str, *, timeout: float = 0.5) -> None:
        self.address = address
        self.timeout = timeout
        self.note: str | None = None
        """Why the watch is not watching (None while it is, or before it started)."""
        self.events = 0
        """How many object events the watch has seen since it started."""
        self._by_app: dict[str, int] = {}
        # per app: object path → {event name: the app's event number when it last came},
        # least recently changed first; and the newest event number forgotten with one
        self._recent: dict[str, collections.OrderedDict[str, dict[str, int]]] = {}
        self._forgotten: dict[str, int] = {}
        self._connection: Any = None
        self._reader: threading.Thread | None = None
        self._wake: tuple[int, int] | None = None
        self._marked: float | None = None
        self._first: float | None = None  # the first event after the mark, and the last
        self._last: float | None = None
        self._timed = False
        self._retry_at = 0.0
        self._latencies: collections.deque[float] = collections.deque(maxlen=_REMEMBERED)
        self._changed = threading.Condition()
        self._starting = threading.Lock()

    def __repr__(self) -> str:
        return f"TreeWatch(address={self.address!r})"

    def events_from(self, app: str) -> int:
        """How many tree-change events (CHANGES, WINDOWS) app `app` (its unique bus name)
        has sent since the watch started: equal counts mean its tree did not change
        between."""
        with self._changed:
            return self._by_app.get(app, 0)

    def paths_since(self, app: str, count: int) -> dict[str, set[str]] | None:
        """The object paths of app `app` that sent tree-change events after its
        `count`-th (see events_from()), each with the events' names (CHANGES' keys, a
        state change's with its state: "StateChanged:focused");
        None when more objects changed than the watch keeps (_RECENT per app): then
        anything may have changed."""
        with self._changed:
            if self._by_app.get(app, 0) == count:
                return {}
            if self._forgotten.get(app, 0) > count:
                return None
            paths: dict[str, set[str]] = {}
            for path, members in self._recent.get(app, {}).items():
                changed = {member for member, number in members.items() if number > count}
                if changed:
                    paths[path] = changed
            return paths

    @property
    def watching(self) -> bool:
        """Whether the watch has a live connection to the bus."""
        return self._connection is not None

    def start(self) -> bool:
        """Connect and register for the apps' events, unless done already; whether the
        watch is watching now. Apps learn of a new listener a moment later, so start it
        before the first action that must be waited for (AccessibilitySource does, before
        its queries). After a failure it tries again only after _RETRY_S seconds."""
        with self._starting:
            if self._connection is not None:
                return True
            if time.monotonic() < self._retry_at:
                return False
            self._retry_at = time.monotonic() + _RETRY_S
            self._stop_reader()  # one that ended with a lost bus
            connection = self._connect()
            if connection is None:
                return False
            self._wake = os.pipe()
            with self._changed:
                self._connection, self.note = connection, None
            self._reader = threading.Thread(
                target=self._read,
                args=(connection, self._wake[0]),
                daemon=True,
                name=f"tree-events:{self.address}",
            )
            self._reader.start()
            return True

    def mark(self) -> None:
        """Forget the events so far: what comes after is the next action's doing.
        Starts the watch if it is not watching yet."""
        self.start()
        with self._changed:
            self._marked, self._first, self._last = time.monotonic(), None, None
            self._timed = False

    def settle(self, *, timeout: float, quiet: float | None = None) -> bool:
        """Wait until the apps sent events since mark() and then none for `quiet`
        seconds, or sent none within the adaptive first wait (counted from mark()).
        True then, or at once when there is no bus; False when `timeout` seconds pass
        first (an app that keeps sending).

        `quiet` defaults to QUIET_S stretched by the machine's load (gui_harness._load).
        """
        stretch = patience()
        # (stretched past _FIRST_MAX_S: a busy browser's first event can come 1 s late)
        first_wait = self.first_wait * stretch
        if quiet is None:
            quiet = min(_QUIET_MAX_S, QUIET_S * stretch)
        with self._changed:
            now = time.monotonic()
            deadline = now + timeout
            start = self._marked if self._marked is not None else now
            while self._connection is not None:
                until = start + first_wait if self._last is None else self._last + quiet
                if until <= min(now, deadline):
                    break
                if now >= deadline:
                    return False
                self._changed.wait(min(until, deadline) - now)
                now = time.monotonic()
            if self._first is not None and self._marked is not None and not self._timed:
                self._latencies.append(self._first - self._marked)
                self._timed = True  # one latency per action
            return True

    @property
    def first_wait(self) -> float:
        """Seconds settle() waits for an action's first event before calling the tree
        unchanged: a few times the slowest first event lately, within fixed bounds."""
        if not self._latencies:
            return 2 * _FIRST_MIN_S
        return min(_FIRST_MAX_S, max(_FIRST_MIN_S, _FIRST_FACTOR * max(self._latencies)))

    def close(self) -> None:
        """Stop the reader and close the connection (the registry forgets what it
        registered). Safe to call twice."""
        with self._starting:
            self._stop_reader()
            self._drop(None)

    # -- internals -----------------------------------------------------------------------

    def _stop_reader(self) -> None:
        reader, self._reader = self._reader, None
        wake, self._wake = self._wake, None
        if wake is not None:
            os.write(wake[1], b"x")
        if reader is not None:
            reader.join()
        if wake is not None:
            os.close(wake[0])
            os.close(wake[1])

    def _connect(self) -> Any:
        from jeepney import DBusAddress, MatchRule, MessageType, message_bus, new_method_call
        from jeepney.io.blocking import open_dbus_connection

        try:
            connection = open_dbus_connection(self.address, auth_timeout=self.timeout)
        except (OSError, TimeoutError, ValueError, RuntimeError) as exc:
            self.note = f"no accessibility events from {self.address!r}: {exc}"
            return None
        registry = DBusAddress(_REGISTRY[1], _REGISTRY[0], _REGISTRY[2])
        rules = [
            message_bus.AddMatch(MatchRule(type="signal", interface=interface, member=m))
            for interface, members in ((_OBJECT_EVENTS, CHANGES), (_WINDOW_EVENTS, WINDOWS))
            for m in members
        ]
        # without a registered listener, apps (GTK's atk-bridge, Chromium) send nothing
        registrations = [
            new_method_call(registry, "RegisterEvent", "s", (e,))
            for e in (*CHANGES.values(), *WINDOWS.values())
        ]
        try:
            replies = _replies(
                connection, [*rules, *registrations], time.monotonic() + self.timeout
            )
            refused = [r for r in replies[: len(rules)] if r != MessageType.method_return]
            if refused:
                raise RuntimeError(f"the bus refused {len(refused)} match rule(s)")
            # A bus without a registry (no at-spi2-registryd) refuses the registrations and
            # still passes on what apps send. Once the registry answered, apps have its
            # news queued before any call of ours sent later (the next snapshot's).
        except (OSError, TimeoutError, RuntimeError, ValueError) as exc:
            with contextlib.suppress(OSError):
                connection.close()
            self.note = f"no accessibility events from {self.address!r}: {exc}"
            return None
        return connection

    def _read(self, connection: Any, wake: int) -> None:
        """The reader thread: note each event's time until close() or a lost bus. What
        has arrived is read without waiting for more, and noted every _BATCH messages or
        _BATCH_S seconds: an app that floods the bus (GTK 3's file chooser sends some
        26 000 events after a click in a long folder) is seen sending while its flood is
        read, not only once it ends (until then, settle() called the tree unchanged and
        a snapshot kept the tree from before the click)."""
        while True:
            try:
                readable, _, _ = select.select([connection.sock, wake], [], [])
            except (OSError, ValueError) as exc:
                self._drop(exc)
                return
            if wake in readable:
                return
            events = 0
            senders: list[tuple[str, str, str]] = []
            noted = time.monotonic()
            while True:  # everything that has arrived, without waiting for more
                try:
                    message = connection.receive(timeout=0)
                except TimeoutError:
                    break
                except (OSError, ValueError) as exc:  # the bus went away, or sent garbage
                    self._drop(exc)
                    return
                change = _change(message)
                if change is not None:
                    senders.append(change)
                    events += _is_event(message)
                    if len(senders) >= _BATCH or time.monotonic() - noted > _BATCH_S:
                        self._note(senders, events)
                        events, senders, noted = 0, [], time.monotonic()
            self._note(senders, events)

    def _note(self, senders: list[tuple[str, str, str]], events: int) -> None:
        """Count `senders`' changes (sender, path, member) and, when `events` of them are
        events an action waits on, the time of the latest."""
        if senders:
            with self._changed:
                for sender, path, member in senders:
                    number = self._by_app[sender] = self._by_app.get(sender, 0) + 1
                    recent = self._recent.setdefault(sender, collections.OrderedDict())
                    recent.setdefault(path, {})[member] = number
                    recent.move_to_end(path)
                    if len(recent) > _RECENT:
                        _, dropped = recent.popitem(last=False)
                        newest = max(dropped.values())
                        self._forgotten[sender] = max(self._forgotten.get(sender, 0), newest)
        if events:
            with self._changed:
                now = time.monotonic()
                self.events += events
                if self._marked is not None and self._first is None:
                    self._first = now
                self._last = now
                self._changed.notify_all()

    def _drop(self, cause: BaseException | None) -> None:
        with self._changed:
            connection, self._connection = self._connection, None
            if cause is not None:
                self.note = f"lost the accessibility bus {self.address!r}: {cause}"
            self._changed.notify_all()
        if connection is not None:
            with contextlib.suppress(OSError):  # already broken: nothing left to close
                connection.close()


def announcement() -> list[Any]:
    """Calls to the AT-SPI registry that make every app on the bus ask it again which
    events are listened for: a listener registered and deregistered at once (the
    registry signals both to every app), by whoever sends them (not the watch: its
    own registrations stay).

    An app starting while a watch registers may never learn of it, and sends none of
    the events its tree's readers count on: Qt asks the registry which events are
    listened for, then subscribes to the registry's news of new listeners, so a watch
    that registers between the two goes unheard (at load 2-3, one Qt app in four).
    Sent before an app new on the bus is first read: the registry signals before it
    replies, and Qt answers calls in the order they came, so every call sent after the
    replies is answered by an app that knows the watch (and tells what changes)."""
    from jeepney import DBusAddress, new_method_call

    registry = DBusAddress(_REGISTRY[1], _REGISTRY[0], _REGISTRY[2])
    event = CHANGES["ChildrenChanged"]
    return [
        new_method_call(registry, method, "s", (event,))
        for method in ("RegisterEvent", "DeregisterEvent")
    ]


def _replies(connection: Any, calls: list[Any], deadline: float) -> list[Any]:
    """Send `calls` at once, then the message type of each one's reply, in order.
    TimeoutError when they are not all in by `deadline`."""
    from jeepney import HeaderFields

    serials = []
    for call in calls:
        serials.append(next(connection.outgoing_serial))
        connection.send(call, serial=serials[-1])
    kinds: dict[int, Any] = {}
    while len(kinds) < len(serials):
        message = connection.receive(timeout=max(0.0, deadline - time.monotonic()))
        serial = message.header.fields.get(HeaderFields.reply_serial)
        if serial in serials:
            kinds[serial] = message.header.message_type
    return [kinds[serial] for serial in serials]


def _change(message: Any) -> tuple[str, str, str] | None:
    """(the bus name of the app that sent it, the object's path, the event's name) when
    `message` is a tree-change event; a state change's name carries the state
    ("StateChanged:showing"), a window event's its interface ("Window:Activate")."""
    from jeepney import HeaderFields, MessageType

    fields = message.header.fields
    member = fields.get(HeaderFields.member)
    interface = fields.get(HeaderFields.interface)
    if message.header.message_type != MessageType.signal:
        return None
    if interface == _WINDOW_EVENTS and member in WINDOWS:
        member = f"Window:{member}"
    elif interface != _OBJECT_EVENTS or member not in CHANGES:
        return None
    elif member == "StateChanged" and message.body:
        member = f"StateChanged:{message.body[0]}"
    return (
        str(fields.get(HeaderFields.sender, "")),
        str(fields.get(HeaderFields.path, "")),
        str(member),
    )


def _is_event(message: Any) -> bool:
    from jeepney import HeaderFields, MessageType

    fields = message.header.fields
    return (
        message.header.message_type == MessageType.signal
        and fields.get(HeaderFields.interface) == _OBJECT_EVENTS
        and fields.get(HeaderFields.member) in EVENTS
    )
