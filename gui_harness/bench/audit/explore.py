"""Drive one app for the audit: start it on a 1280×800 VirtualDesktop, time the first look
and later looks, then open its menus (its menu bar's, or a menu button's), the dialogs
behind their "…" items and, on a web page, its links — found in its own tree, never in a
list — and check the invariants on every screen. Bounded by a deadline.

Start at audit_app(); `perception_for` is what the test replaces to plant violations.
"""

from __future__ import annotations

import contextlib
import re
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gui_harness.actions import Click, Keypress
from gui_harness.bench.audit.invariants import ScreenCheck, check_screen, normal
from gui_harness.bench.audit.tree import MENU_BAR, RawNode, place, read_tree
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, Perception
from gui_harness.perception.ocr import OcrWorker, rapidocr_reader

__all__ = ["AppResult", "audit_app"]

SCREEN = (1280, 800)
_SKIP = re.compile(r"quit|exit|close|print|log ?out|shut ?down|restart|delete|remove", re.I)
_MENU_BUTTON = re.compile(r"\bmenu\b|more options|hamburger|primary", re.I)


@dataclass
class AppResult:
    """What the audit saw on one app."""

    name: str
    toolkit: str
    held_out: bool
    status: str = "ok"
    detail: str = ""
    first_look_ms: float | None = None
    later_ms: float | None = None
    screens: list[ScreenCheck] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "toolkit": self.toolkit,
            "held_out": self.held_out,
            "status": self.status,
            "detail": self.detail,
            "first_look_ms": self.first_look_ms,
            "later_ms": self.later_ms,
            "screens": [s.to_dict() for s in self.screens],
            "notes": self.notes,
            "seconds": round(self.seconds, 1),
        }


PerceptionFactory = Callable[[AccessibilitySource, OcrWorker], Any]


def perception_for(source: AccessibilitySource, worker: OcrWorker) -> Any:
    """Perception as gui_agent makes it: the tree placed by the desktop's windows, OCR."""
    return Perception(accessibility=source, ocr=worker)


class _Session:
    def __init__(self, desktop: VirtualDesktop, source: AccessibilitySource, perception: Any,
                 worker: OcrWorker, deadline: float, result: AppResult) -> None:  # fmt: skip
        self.desktop = desktop
        self.source = source
        self.perception = perception
        self.worker = worker
        self.deadline = deadline
        self.result = result
        self.reader = rapidocr_reader()
        self.pids: dict[str, int] = {}

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def tree(self) -> list[RawNode]:
        bus = self.desktop.accessibility_bus
        if bus is None:
            return []
        raw = read_tree(bus, deadline_s=max(1.0, min(8.0, self.left())))
        for note in raw.notes:
            if note not in self.result.notes:
                self.result.notes.append(note)
        self.pids.update(raw.pids)
        return place(raw.nodes, self.desktop.desktop.visible_windows())

    def settle(self) -> None:
        self.desktop.wait_settled(timeout=3.0)
        time.sleep(0.4)  # menus and dialogs publish their objects a moment after drawing

    def look(self) -> list[Component]:
        """The components a planner gets once OCR has read this screen's labels (a
        screen of 50 label crops takes 3 s and more to read at load 20: what is not read
        by then would be counted "left unlabelled" for the load, not for perception)."""
        self.perception.perceive(self.desktop.screenshot())
        self.worker.wait_idle(timeout=min(15.0, max(3.0, self.left() / 4)))
        return list(self.perception.perceive(self.desktop.screenshot()).components)

    def check(self, screen: str) -> list[RawNode]:
        components = self.look()
        nodes = self.tree()
        windows = self.desktop.desktop.visible_windows()
        image = self.desktop.screenshot()
        try:
            checked = check_screen(
                screen, components, nodes, windows, self.pids, image, self.reader
            )
        except Exception as exc:  # the audit's fault on one screen: said, and the app goes on
            self.result.notes.append(f"screen {screen!r} not checked: {type(exc).__name__}: {exc}")
            return nodes
        self.result.screens.append(checked)
        return nodes

    def click(self, node: RawNode) -> None:
        assert node.box is not None
        x, y, w, h = node.box
        self.desktop.execute(Click(x=x + w // 2, y=y + h // 2))

    def escape(self, times: int = 2) -> None:
        for _ in range(times):
            self.desktop.execute(Keypress(keys=["escape"]))
            self.desktop.wait_settled(timeout=1.5)


def audit_app(
    name: str,
    toolkit: str,
    app: Callable[[], list[App]],
    *,
    held_out: bool = False,
    budget_s: float = 100.0,
    menus: int = 4,
    dialogs: int = 2,
    links: int = 3,
    factory: PerceptionFactory = perception_for,
) -> AppResult:
    """Audit one app: `app()` gives the Apps to start (a web app: its server, then the
    browser). Never raises for the app's faults: they are the result's status."""
    result = AppResult(name, toolkit, held_out)
    started = time.monotonic()
    try:
        with VirtualDesktop(SCREEN, app()) as desktop:
            source = AccessibilitySource(
                desktop.accessibility_bus,
                screen=desktop.size,
                windows=lambda: desktop.desktop.visible_windows(),
            )
            worker = OcrWorker()
            try:
                perception = factory(source, worker)
                session = _Session(desktop, source, perception, worker, started + budget_s, result)
                _explore(session, menus=menus, dialogs=dialogs, links=links)
            finally:
                worker.close(wait=False)
                source.close()
    except Exception as exc:  # the app's failure is the result, never the audit's end
        result.status = "failed" if not result.screens else "partial"
        result.detail = f"{type(exc).__name__}: {str(exc)[:300]}"
    result.seconds = time.monotonic() - started
    return result


def _wait_for_tree(session: _Session) -> list[RawNode]:
    last, nodes = -1, []
    until = time.monotonic() + min(20.0, max(1.0, session.left() / 3))
    while time.monotonic() < until:
        nodes = session.tree()
        count = sum(n.control and n.showing for n in nodes)
        if count == last and count > 0:
            break
        last = count
        time.sleep(0.7)
    if not any(n.control for n in nodes):
        session.result.notes.append("the app published no controls in its tree")
    return nodes


def _explore(session: _Session, *, menus: int, dialogs: int, links: int) -> None:
    _wait_for_tree(session)
    session.desktop.wait_settled(timeout=5.0)
    _time_looks(session)
    nodes = session.check("main")
    openers = _menu_openers(nodes)[:menus]
    found_items: list[tuple[str, str]] = []  # (opener name, item name)
    for opener in openers:
        if session.left() < 15:
            session.result.notes.append("out of time before every menu was opened")
            break
        fresh = _find(session.tree(), opener.role, opener.name)
        if fresh is None:
            continue
        session.click(fresh)
        session.settle()
        opened = session.check(f"menu {opener.name or '(unnamed)'}")
        for item in _dialog_items(opened, nodes):
            found_items.append((opener.name, item))
        session.escape()
    opened_dialogs = 0
    for opener_name, item in _spread(found_items):
        if opened_dialogs >= dialogs or session.left() < 15:
            break
        menu = next((o for o in openers if o.name == opener_name), None)
        if menu is None or _open_dialog(session, menu, item) is False:
            continue
        opened_dialogs += 1
    if not openers and not any(n.control for n in nodes) and session.left() > 15:
        # no tree (Tk): F10 opens a menu bar's first menu in Tk, GTK and Qt alike
        session.desktop.execute(Keypress(keys=["f10"]))
        session.settle()
        session.check("menu (F10)")
        session.escape()
    elif not openers:
        _follow_links(session, nodes, links)


def _time_looks(session: _Session) -> None:
    worker = OcrWorker()
    try:
        perception = Perception(accessibility=session.source, ocr=worker)
        image = session.desktop.screenshot()
        wall = time.perf_counter()
        perception.perceive(image)
        session.result.first_look_ms = (time.perf_counter() - wall) * 1000
        later = []
        for _ in range(5):
            image = session.desktop.screenshot()
            wall = time.perf_counter()
            perception.perceive(image)
            later.append((time.perf_counter() - wall) * 1000)
        session.result.later_ms = statistics.median(later)
    finally:
        worker.close(wait=False)


def _menu_openers(nodes: list[RawNode]) -> list[RawNode]:
    bar = [
        n
        for n in nodes
        if n.role in (33, 35) and n.parent is not None and n.parent.role == MENU_BAR and n.showing
        and n.box is not None and n.name
    ]  # fmt: skip
    if bar:
        return sorted(bar, key=lambda n: n.box[0] if n.box else 0)
    buttons = [
        n
        for n in nodes
        if n.role in (43, 62, 129) and n.showing and n.box is not None
        and _MENU_BUTTON.search(n.name or "")
    ]  # fmt: skip
    return buttons


def _dialog_items(opened: list[RawNode], before: list[RawNode]) -> list[str]:
    known = {(n.role, n.name) for n in before if n.showing}
    items = []
    for n in opened:
        if n.role != 35 or not n.showing or n.box is None or not n.name:
            continue
        if (n.role, n.name) in known or _SKIP.search(n.name):
            continue
        if n.name.rstrip().endswith(("…", "...")) or normal(n.name).startswith(
            ("about", "preferences", "settings", "keyboard shortcuts")
        ):
            items.append(n.name)
    return items


def _spread(items: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """One item of each menu first, then the rest: dialogs of different kinds."""
    firsts: list[tuple[str, str]] = []
    rest: list[tuple[str, str]] = []
    seen: set[str] = set()
    for opener, item in items:
        (rest if opener in seen else firsts).append((opener, item))
        seen.add(opener)
    return firsts + rest


def _find(nodes: list[RawNode], role: int, name: str) -> RawNode | None:
    for n in nodes:
        if n.role == role and n.name == name and n.showing and n.box is not None:
            return n
    return None


def _open_dialog(session: _Session, opener: RawNode, item: str) -> bool:
    before = {w.id for w in session.desktop.desktop.visible_windows()}
    fresh = _find(session.tree(), opener.role, opener.name)
    if fresh is None:
        return False
    session.click(fresh)
    session.settle()
    entry = _find(session.tree(), 35, item)
    if entry is None:
        session.escape()
        return False
    session.click(entry)
    until = time.monotonic() + 4.0
    while time.monotonic() < until:
        if {w.id for w in session.desktop.desktop.visible_windows()} - before:
            break
        time.sleep(0.1)
    session.settle()
    time.sleep(0.5)
    session.check(f"dialog {item}")
    for _ in range(3):  # close it: Escape, else the window manager's close
        new = [w for w in session.desktop.desktop.visible_windows() if w.id not in before]
        if not new:
            break
        session.escape(1)
        if [w for w in session.desktop.desktop.visible_windows() if w.id not in before]:
            _close_window(session.desktop, new[-1].id)
            session.desktop.wait_settled(timeout=2.0)
    return True


def _follow_links(session: _Session, nodes: list[RawNode], links: int) -> None:
    visited: set[str] = set()
    for index in range(links):
        if session.left() < 15:
            break
        current = session.tree() if index else nodes
        candidates = [
            n
            for n in current
            if n.role == 88 and n.showing and n.box is not None and normal(n.name)
            and n.name not in visited and 0 <= n.box[1] < SCREEN[1] - 20
        ]  # fmt: skip
        if not candidates:
            break
        link = candidates[len(candidates) // 3]  # not always the page's first link
        visited.add(link.name)
        session.click(link)
        session.settle()
        time.sleep(1.0)  # a page load
        session.check(f"link {link.name[:40]}")


def _close_window(desktop: VirtualDesktop, window: int) -> None:
    """Ask the window's client to close it, as the window manager's close button does."""
    import Xlib.display
    import Xlib.protocol.event
    import Xlib.X

    with contextlib.suppress(Exception):
        display = Xlib.display.Display(desktop.display)
        try:
            target = display.create_resource_object("window", window)
            protocols = display.intern_atom("WM_PROTOCOLS")
            delete = display.intern_atom("WM_DELETE_WINDOW")
            event = Xlib.protocol.event.ClientMessage(
                window=target,
                client_type=protocols,
                data=(32, [delete, Xlib.X.CurrentTime, 0, 0, 0]),
            )
            target.send_event(event)
            display.flush()
        finally:
            display.close()
