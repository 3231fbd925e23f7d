"""The accessibility source: the interactive elements apps publish on the AT-SPI bus.

Owns `AccessibilitySource` and `AccessibilitySnapshot`, what one read saw. Each app is
read its own way, all pipelined on one D-Bus connection against one deadline: a browser
(Chromium, Gecko) by one Collection.GetMatches query (_tree_query.py), every other app
by a bounded walk of its tree (_tree_walk.py: GTK 4 and Qt have no Collection, and
LibreOffice's would enumerate millions of cells). An app's components are kept between
snapshots and read again only after it sent tree events (TreeWatch) or when its read
was cut short; what a toolkit changes unsaid is asked each time (AppWalk.unsaid). An
app read with nothing kept is waited for longer while it answers (snapshot()). The
D-Bus client is jeepney (docs/gui.md says why). Waiting for a tree to catch up after an
action is _tree_settle.py's; fusing with pixels is fusion.py's job; starting the buses
is gui_harness.desktop.buses'. Start at AccessibilitySource.snapshot().
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gui_harness._load import patience
from gui_harness.perception.component import Component
from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._atspi import ROLE_KINDS
from gui_harness.perception.tree._tree_elements import components as _components
from gui_harness.perception.tree._tree_query import CollectionQuery
from gui_harness.perception.tree._tree_settle import TreeWatch, announcement
from gui_harness.perception.tree._tree_walk import AppWalk
from gui_harness.perception.tree._tree_windows import Surface, WindowLike, place, unlisted

__all__ = ["ROLE_KINDS", "AccessibilitySnapshot", "AccessibilitySource"]

_ROLE_CACHE = 20_000  # (app, object path) → role entries kept between snapshots
_FIRST_TIMEOUT = 10.0  # s: an app read with nothing of it kept (AccessibilitySource)
_REGISTRY = "(the registry)"  # in AccessibilitySource._silent: it did not answer a long wait
_QUERIED_TOOLKITS = frozenset({"chromium", "gecko"})  # browsers: one Collection query each
# LibreOffice on its GTK 3 plugin places what it draws itself (toolbars, the sheet) as if
# its GTK menu bar were not there: _tree_walk moves those boxes down by the bar's height
_MENU_BAR_OFFSET_APPS = frozenset({"soffice"})


@dataclass(frozen=True)
class AccessibilitySnapshot:
    """What one accessibility query saw.

    `components` are in screen pixels, clipped to `screen`, in tree order, with
    index 0 (fusion numbers them); with the desktop's windows known, placed where their
    window shows them and cut to what the windows stacked above leave showing. `note`
    says what was missing (no bus, an app that did not answer in time) or is None.
    `apps` counts the apps that answered; `elapsed_ms` is the query's wall time; `calls`
    counts the D-Bus calls it made (an app whose tree sent no events since it was read
    costs none). `windows` are the desktop's windows as the query listed them, bottom to
    top (perception tells their decorations by them; not recorded).
    """

    components: tuple[Component, ...] = ()
    screen: tuple[int, int] = (0, 0)
    note: str | None = None
    apps: int = 0
    elapsed_ms: float = 0.0
    calls: int = 0
    windows: tuple[WindowLike, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict of the snapshot (recorded with each observation)."""
        return {
            "components": [c.to_dict() for c in self.components],
            "screen": list(self.screen),
            "note": self.note,
            "apps": self.apps,
            "elapsed_ms": round(self.elapsed_ms, 2),
            "calls": self.calls,
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
            calls=int(data.get("calls", 0)),
        )


@dataclass
class _AppTree:
    """One app's components as last read, and the count of its tree events then."""

    components: list[Component]
    events: int
    read_at: float
    walk: AppWalk | None = None  # the walk that read it, which refresh() brings up to date
    on: list[Surface | None] | None = None  # each component's window (_tree_windows)
    relist: bool = False  # the desktop's windows came or went since: list its windows again


class AccessibilitySource:
    """Reads the interactive elements of every app on the AT-SPI bus at `address`.

    `screen` is (width, height) in pixels: boxes are clipped to it, and elements left
    with less than 4 px either way are dropped (a window larger than the screen reports
    its off-screen widgets as showing). `timeout` (seconds) bounds one snapshot, whatever
    the bus or an app does, stretched by the machine's load (an app answering a few
    hundred calls waits its turn for a CPU; see gui_harness._load.patience, at most 8×). Apps
    are read side by side, so a slow one costs its own tree only: what it had not told by
    then is left out, or its tree from an earlier snapshot is kept, and the snapshot's
    note names it. An app with no tree kept is waited for longer, while it answers, up to
    `first_timeout` (stretched likewise; None: 10 s, or `timeout` if longer; see
    snapshot()). `address=None` gives empty snapshots noting `note` (why there is no
    bus). Thread-safe; the connection is opened on first use and reopened after a
    failure.

    `windows`, when given, lists the desktop's viewable windows bottom to top
    (Desktop.visible_windows()): each snapshot then puts every component where its
    window shows it (GTK 4 reports boxes relative to its window, a popover's to its own
    surface) and cuts it to what the windows stacked above leave showing, dropping what
    is hidden (an editor under its dialog, a field under a popover menu) or outside its
    own window; and a window that came or went has every app read afresh (GTK 4 tells
    nothing when a popover opens), but a GTK 3 app's windows listed again, its windows
    kept (a menu that opens costs its own window's read) unless a window moved or
    changed size. See _tree_windows.

    mark() before an action and wait_caught_up() after it wait until the apps' tree
    events stop, so the next snapshot sees what the action changed (see _tree_settle).
    The same events tell which apps changed: an app that sent none since its last
    complete read is not read again.
    """

    def __init__(
        self,
        address: str | None,
        *,
        screen: tuple[int, int],
        timeout: float = 0.5,
        first_timeout: float | None = None,
        note: str | None = None,
        windows: Callable[[], Sequence[WindowLike]] | None = None,
    ) -> None:
        if first_timeout is None:
            first_timeout = max(timeout, _FIRST_TIMEOUT)
        if not 0 < timeout <= first_timeout:
            raise ValueError(
                f"timeout={timeout!r} and first_timeout={first_timeout!r}: both must be more "
                "than 0 seconds, and first_timeout at least timeout"
            )
        self.address = address
        self.windows = windows
        self._window_set: tuple[tuple[int, ...], ...] | None = None
        self.screen = (int(screen[0]), int(screen[1]))
        self.base_timeout = timeout
        """The `timeout` given, before the load stretches it."""
        self.base_first_timeout = first_timeout
        """The `first_timeout` given, before the load stretches it."""
        self._missing = note or "no accessibility bus is known for this desktop"
        self._connection: Any = None
        self._roles: dict[tuple[str, str], int] = {}
        self._toolkits: dict[str, dict[str, str]] = {}
        self._trees: dict[str, _AppTree] = {}
        self._offsets: dict[str, int] = {}  # app → AppWalk.offset as last measured
        self._silent: set[str] = set()  # new apps that answered nothing in a long wait
        self._lock = threading.Lock()
        self._pipeline: atspi.Pipeline | None = None  # the latest snapshot's
        self._watch = TreeWatch(address, timeout=timeout) if address is not None else None

    def __repr__(self) -> str:
        return f"AccessibilitySource(address={self.address!r}, screen={self.screen!r})"

    @property
    def timeout(self) -> float:
        """Seconds a snapshot taken now may take: `base_timeout` stretched by the load."""
        return self.base_timeout * patience()

    @property
    def first_timeout(self) -> float:
        """Seconds a snapshot taken now may take to read an app it keeps nothing of:
        `base_first_timeout` stretched by the load (the longest a snapshot can take)."""
        return self.base_first_timeout * patience()

    def close(self) -> None:
        """Close the D-Bus connections (the next snapshot or mark opens new ones)."""
        with self._lock:
            self._drop_connection()
            self._trees.clear()
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
        """Read every app: the showing, on-screen interactive elements, in tree order.
        Never raises for bus or app failures; returns within about `timeout` stretched by
        the load (twice that the first time, when it also starts listening for tree
        events). An app it keeps nothing of (a new app; most apps once the desktop's
        windows changed) that has not answered whole by then is waited for while it keeps
        answering (no reply for a quarter of `first_timeout` ends the wait), up to
        `first_timeout`, and so is the registry when no app is kept: a tree read in part
        leaves the rest to pixels, which offer a list under a popover, or a check box in
        a list for the check button the tree would have named. An app (or the registry)
        that answered nothing in that wait is not waited for again until it answers (a
        hung app costs it once, not every snapshot)."""
        if self._watch is not None and not self._watch.watching:
            # before the query: then every app has heard of the listener before it answers
            self._watch.start()
        started = time.monotonic()
        with self._lock:
            self._pipeline = None
            listed = self._visible_windows()
            components, apps, note, shown = self._read(started, listed)
            calls = self._pipeline.sent if self._pipeline is not None else 0
        return AccessibilitySnapshot(
            components=tuple(components),
            screen=self.screen,
            note=note,
            apps=apps,
            elapsed_ms=(time.monotonic() - started) * 1000,
            calls=calls,
            windows=tuple(shown),
        )

    # -- internals -----------------------------------------------------------------------

    def _visible_windows(self) -> list[WindowLike]:
        """The desktop's windows now (none without `windows`, or when listing them
        failed); a change of the set since the last snapshot forgets the trees kept."""
        if self.windows is None:
            return []
        try:
            shown = list(self.windows())
        except Exception:  # a window system gone: the boxes are left as the apps say
            return []
        now = tuple((w.x, w.y, w.width, w.height) for w in shown)
        if now != self._window_set:
            before, self._window_set = self._window_set, now
            self._forget_windows(before or (), now)
        return shown

    def _forget_windows(
        self, before: tuple[tuple[int, ...], ...], now: tuple[tuple[int, ...], ...]
    ) -> None:
        """The desktop's windows changed from `before` to `now`: when windows only came
        (a menu opened) or only went (it closed), each kept tree of an app that tells its
        windows (AppWalk.tells_windows) is kept, to have its windows listed again (a new
        one read whole, one gone dropped, the rest kept: their own events say what
        changed in them); every other tree is forgotten, and every tree when a window
        moved or changed size (its boxes moved with it, unsaid)."""
        old, new = set(before), set(now)
        if not (old <= new or new <= old):
            self._trees.clear()
            return
        for app, tree in list(self._trees.items()):
            if tree.walk is not None and tree.walk.tells_windows:
                tree.relist = True
            else:
                del self._trees[app]

    def _read(
        self, started: float, shown: Sequence[WindowLike] = ()
    ) -> tuple[list[Component], int, str | None, Sequence[WindowLike]]:
        """The components of every app, placed in `shown` (the windows listed before the
        read), or in the windows listed again after it when an app showed a window that
        was not listed yet (mapped while the trees were read: placed in the old list, the
        windows it covers would keep their controls); the notes; the windows used.
        `started`: when the snapshot began (its deadlines count from then: snapshot())."""
        deadlines = (started + self.timeout, started + self.first_timeout)
        deadline = deadlines[0]
        if self.address is None:
            return [], 0, self._missing, shown
        try:
            pipeline = self._pipeline = atspi.Pipeline(self._connect(deadline))
            registry: list[tuple[str, str]] = []
            pipeline.send(
                atspi.call(atspi.REGISTRY, atspi.ROOT, atspi.ACCESSIBLE, "GetChildren"),
                lambda body: registry.extend(
                    (str(n), str(p)) for n, p in (body[0] if body else ())
                ),
            )
            answered = pipeline.run(deadline, keep=True)
            if not answered and not self._trees and _REGISTRY not in self._silent:
                # nothing kept to show meanwhile: waited for as a new app is (snapshot())
                answered = self._wait_while_answering(pipeline, deadlines[1])
                if not answered:
                    self._silent.add(_REGISTRY)
            pipeline.forget()
            if answered:
                self._silent.discard(_REGISTRY)
            if not answered:
                limit = round(time.monotonic() - started, 2)  # the timeout, or the wait
                silent = f"the accessibility registry did not answer within {limit}s"
                return [], 0, f"{silent}; pixels only", shown
            apps = [name for name, _ in registry]
            self._learn_toolkits(pipeline, apps, deadlines)
            found, on, notes = self._read_apps(pipeline, apps, deadlines, started)
            pids = {a: int(f["pid"]) for a, f in self._toolkits.items() if f.get("pid")}
            if shown and unlisted(on, shown):
                shown = self._listed_again(shown)
            found = place(found, on, shown, pids)
        except (OSError, ValueError, RuntimeError) as exc:  # bus gone, refused, bad address
            self._drop_connection()
            return [], 0, f"accessibility bus {self.address!r} failed: {exc}; pixels only", shown
        if pipeline.errors:
            notes.append(f"{pipeline.errors} accessibility call(s) failed")
        read = sum(1 for app in apps if app in self._trees)
        return found, read, "; ".join(notes) or None, shown

    def _wait_while_answering(self, pipeline: atspi.Pipeline, until: float) -> bool:
        """Run `pipeline` on to `until` while replies keep coming (none for a quarter of
        `first_timeout` ends it): the longer wait snapshot() gives what nothing is kept
        of. Whether every call was answered; what is left stays for forget()."""
        return pipeline.run(until, idle=self.first_timeout / 4, keep=True)

    def _listed_again(self, shown: Sequence[WindowLike]) -> Sequence[WindowLike]:
        """The desktop's windows listed now; `shown` when listing fails. The trees just
        read are kept: they were read with the windows as they are now."""
        assert self.windows is not None  # (there were windows listed before)
        try:
            again = list(self.windows())
        except Exception:  # a window system gone: the list from before the read
            return shown
        self._window_set = tuple((w.x, w.y, w.width, w.height) for w in again)
        return again

    def _learn_toolkits(
        self, pipeline: atspi.Pipeline, apps: list[str], deadlines: tuple[float, float]
    ) -> None:
        """What each new app is: its toolkit's name and version, its own name and its
        process (whose windows are its own: _tree_windows.place). With the watch on,
        asked once the registry answered its announcement (_tree_settle.announcement):
        an app that started while the watch registered knows of it from then on, so
        nothing read of it is kept past a change it did not tell. A new app that has not
        told by a third of the snapshot's time is waited for as snapshot() says, to a
        third of the first read's (read with the wrong toolkit, a Qt app's tabs would be
        trusted); one that does not tell even then is not waited for again."""
        deadline, longest = deadlines
        for gone in set(self._trees) - set(apps):
            del self._trees[gone]
        for gone in set(self._toolkits) - set(apps):  # a bus name is never reused
            del self._toolkits[gone]
        for gone in set(self._offsets) - set(apps):
            del self._offsets[gone]
        self._silent &= {*apps, _REGISTRY}
        # known apps are skipped (one that did not answer in time is asked again)
        new = [app for app in apps if len(self._toolkits.get(app, ())) != 4]
        for app in new:
            self._toolkits[app] = {}

        def ask(_: tuple[Any, ...] | None = None) -> None:
            for app in new:
                for what, interface, name in (
                    ("toolkit", "org.a11y.atspi.Application", "ToolkitName"),
                    ("version", "org.a11y.atspi.Application", "Version"),
                    ("name", atspi.ACCESSIBLE, "Name"),
                ):
                    pipeline.send(
                        atspi.get_property(app, atspi.ROOT, interface, name),
                        functools.partial(self._got_toolkit, app, what),
                    )
                pipeline.send(atspi.process_of(app), functools.partial(self._got_pid, app))

        if new and self._watch is not None and self._watch.watching:
            *first, last = announcement()
            for message in first:
                pipeline.send(message, lambda _: None, optional=True)
            pipeline.send(last, ask, optional=True)  # (no registry: asked all the same)
        else:
            ask()
        # a third of what is left: a hung new app must leave the others time to be read
        now = time.monotonic()
        pipeline.run(min(deadline, now + (deadline - now) / 3), keep=True)
        facts = self._toolkits

        def told(app: str) -> bool:  # anything of its own (the bus gives the pid)
            return any(what != "pid" for what in facts[app])

        untold = [a for a in new if len(facts[a]) < 4 and (a not in self._silent or told(a))]
        if untold:
            self._wait_while_answering(pipeline, now + (longest - now) / 3)
        pipeline.forget()
        for app in new:  # silent: it told nothing, even when waited for
            if told(app):
                self._silent.discard(app)
            elif app in untold:
                self._silent.add(app)

    def _got_toolkit(self, app: str, what: str, body: tuple[Any, ...] | None) -> None:
        self._toolkits[app][what] = str(body[0][1]).lower() if body else ""  # "": none

    def _got_pid(self, app: str, body: tuple[Any, ...] | None) -> None:
        self._toolkits[app]["pid"] = str(int(body[0])) if body else ""

    def _read_apps(
        self,
        pipeline: atspi.Pipeline,
        apps: list[str],
        deadlines: tuple[float, float],
        started: float,
    ) -> tuple[list[Component], list[Surface | None], list[str]]:
        deadline, first = deadlines
        watching = self._watch is not None and self._watch.watching
        reads: dict[str, tuple[AppWalk | CollectionQuery, int]] = {}
        for app in apps:
            events = self._watch.events_from(app) if self._watch is not None else 0
            kept = self._trees.get(app)
            if watching and kept is not None and kept.events == events and not kept.relist:
                if kept.walk is not None and kept.walk.unsaid:  # they may change unsaid
                    kept.walk.check(pipeline)
                    reads[app] = (kept.walk, events)
                continue  # nothing changed in its tree since it was read
            reader: AppWalk | CollectionQuery
            if watching and kept is not None and kept.walk is not None:
                assert self._watch is not None
                paths = self._watch.paths_since(app, kept.events)
                if paths is not None:
                    relist = kept.relist or _new_window(paths, kept.walk)
                    if not relist or kept.walk.tells_windows:
                        kept.walk.refresh(pipeline, paths, windows=relist)
                        reads[app] = (kept.walk, events)
                        continue
            facts = self._toolkits.get(app, {})
            toolkit = facts.get("toolkit", "")
            if toolkit in _QUERIED_TOOLKITS:
                reader = CollectionQuery(pipeline, app, self._roles)
            else:
                # GTK 4.8 sets SHOWING on its windows only
                major = facts.get("version", "").split(".")[0]
                gtk4 = toolkit == "gtk" and major.isdigit() and int(major) >= 4
                offset_app = facts.get("name") in _MENU_BAR_OFFSET_APPS
                reader = AppWalk(
                    pipeline,
                    app,
                    self._roles,
                    self.screen,
                    showing_reported=not gtk4,
                    own_drawing_offset=offset_app,
                    quiet_tabs=toolkit == "qt",
                    quiet_moves=gtk4,
                    quiet_popovers=toolkit == "gtk" and major == "3",
                    tells_windows=toolkit == "gtk" and major == "3" and not offset_app,
                )
            reader.start()
            reads[app] = (reader, events)
        pipeline.run(deadline, keep=True)
        # an app read in part with nothing of it kept: the rest would come from pixels
        waited = {
            app
            for app, (reader, _) in reads.items()
            if not reader.complete
            and app not in self._trees
            and (app not in self._silent or reader.answered)
        }
        if waited:  # for as long as they keep answering
            self._wait_while_answering(pipeline, first)
            deadline = max(deadline, min(first, time.monotonic()))
        pipeline.forget()
        for app, (reader, _) in reads.items():
            if reader.answered:
                self._silent.discard(app)
            elif app in waited:
                self._silent.add(app)
        limit = round(time.monotonic() - started, 2)  # what the slow ones were given
        if len(self._roles) > _ROLE_CACHE:
            self._roles.clear()
        notes: list[str] = []
        slow: list[str] = []
        found: list[Component] = []
        on: list[Surface | None] = []
        now = time.monotonic()
        for app in apps:
            if app not in reads:
                found.extend(self._trees[app].components)
                on.extend(_surfaces(self._trees[app]))
                continue
            reader, events = reads[app]
            offset = 0
            if isinstance(reader, AppWalk):
                reader.finish(deadline)
                before = self._offsets.get(app)
                offset, note = self._offset(app, reader)
                # LibreOffice places its window again while it starts, telling no one: a
                # walk then may hold boxes from before with the offset of after (its grid
                # 25 px high, a click on A4 hit A3). Until two reads agree on the offset,
                # the next snapshot walks it again
                if reader.own_drawing_offset and offset != before:
                    events = -1
                if note:
                    notes.append(note)
            elements = sorted(reader.elements, key=lambda e: e.order)
            placed: list[Surface | None] = []
            components = _components(elements, self.screen, offset=offset, on=placed)
            if not isinstance(reader, AppWalk):  # a browser's matches: no windows among them
                placed = [None] * len(components)
            if isinstance(reader, AppWalk) and reader.skipped:
                notes.append(
                    f"{app}: {reader.skipped} long list(s) that manage their items were not "
                    "read item by item; their items come from pixels"
                )
            if reader.complete:
                walk = reader if isinstance(reader, AppWalk) else None
                self._trees[app] = _AppTree(components, events, now, walk, placed)
                found.extend(components)
                on.extend(placed)
                continue
            kept = self._trees.get(app)
            if kept is not None and not components:
                found.extend(kept.components)
                on.extend(_surfaces(kept))
                slow.append(f"{app} (its tree from {now - kept.read_at:.1f}s ago is kept)")
            else:
                found.extend(components)
                on.extend(placed)
                slow.append(f"{app} (read in part)" if components else app)
        if slow:
            notes.insert(
                0,
                f"{len(slow)} app(s) did not answer the accessibility query within "
                f"{limit}s ({', '.join(slow)}); what is missing comes from pixels",
            )
        return found, on, notes

    def _offset(self, app: str, walk: AppWalk) -> tuple[int, str | None]:
        """How far down to move what `app` draws itself (AppWalk.offset), remembered
        for when a walk cut short cannot tell; never measured, those parts are left out
        of this read (misplaced boxes would send clicks to a neighbour) and a note says so."""
        if walk.offset is not None:
            self._offsets[app] = walk.offset
            return walk.offset, None
        known = self._offsets.get(app)
        if known is not None:
            return known, None
        walk.elements = [e for e in walk.elements if e.native]
        return 0, (
            f"{app}: where it draws its own parts (sheet, toolbars) was not measured in "
            "time; they come from pixels"
        )

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


def _surfaces(tree: _AppTree) -> list[Surface | None]:
    return tree.on if tree.on is not None else [None] * len(tree.components)


def _new_window(paths: dict[str, set[str]], walk: AppWalk) -> bool:
    """Whether the events at `paths` say a window came or went: a change of the app's
    root's children (GTK), or a window not read before that was created or activated
    (Qt's only word of a new dialog)."""
    if atspi.ROOT in paths:
        return True
    windows = [p for p, events in paths.items() if any(e.startswith("Window:") for e in events)]
    if not windows:
        return False
    known = {e.path for e in walk.elements}
    return any(p not in known for p in windows)
