"""The audit's own walk of the AT-SPI trees: every object's role, name, states, box,
window and labelled-by names, read afresh on each screen, on perception's AT-SPI client
(perception/tree/_atspi.py: its pipelined calls and the protocol's names) but not by
perception's walk, whose results the audit checks (it reads what perception leaves out:
every label's name, what does not show). Bounded in objects and time per app.

Start at read_tree(); `RawNode` is one object; place() puts GTK 4's window-relative boxes
on the screen by the desktop's windows.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gui_harness.perception.tree import _atspi as atspi

__all__ = ["CONTROL_ROLES", "RawNode", "RawTree", "place", "popups", "read_tree"]

APPLICATION = "org.a11y.atspi.Application"

# AT-SPI roles (AtspiRole) the audit treats as controls a user acts on.
CONTROL_ROLES: dict[int, str] = {
    7: "check box",
    8: "check menu item",
    130: "switch",
    44: "radio button",
    45: "radio menu item",
    11: "combo box",
    79: "entry",
    40: "password text",
    52: "spin button",
    76: "autocomplete",
    88: "link",
    37: "page tab",
    43: "push button",
    62: "toggle button",
    129: "push button menu",
    35: "menu item",
    33: "menu",
    51: "slider",
}
LABEL_ROLES = frozenset({atspi.LABEL, 116})  # label, static (Chromium's plain text)
CAPTIONED_ROLES = frozenset({11, 79, 40, 52, 76, 61})  # named by a caption beside them
TEXT = atspi.TEXT_ROLE
MENU_BAR = atspi.MENU_BAR
MENU = atspi.MENU
POPUP_MENU = 41
FRAME_ROLES = frozenset({23, 16, 2, 21, 95})  # frame, dialog, alert, file chooser, window
SHOWING, VISIBLE, EDITABLE = atspi.SHOWING, atspi.VISIBLE, atspi.EDITABLE
_MAX_CHILDREN = 150  # of one object: a long list's items past these are not read
_CALL_TIMEOUT = 2.0


@dataclass
class RawNode:
    """One accessible object as the app reports it (box in screen pixels once placed)."""

    app: str
    path: str
    role: int = 0
    name: str = ""
    states: int = 0
    box: tuple[int, int, int, int] | None = None
    parent: RawNode | None = None
    children: list[RawNode] = field(default_factory=list)
    labelled_by: list[str] = field(default_factory=list)
    toolkit: str = ""
    depth: int = 0

    def has(self, bit: int) -> bool:
        return bool(self.states >> bit & 1)

    @property
    def showing(self) -> bool:
        # GTK 4.8 sets SHOWING on windows only: VISIBLE is what its widgets say
        return self.has(SHOWING) or (self.toolkit == "GTK4" and self.has(VISIBLE))

    @property
    def control(self) -> bool:
        if self.role == MENU:  # a menu bar's entry or a submenu's, not a popover's body
            return self.parent is not None and self.parent.role in (MENU_BAR, MENU, POPUP_MENU)
        return self.role in CONTROL_ROLES or (self.role == TEXT and self.has(EDITABLE))

    @property
    def top(self) -> RawNode:
        """The top-level window (a child of the app's root) this object is in."""
        node = self
        while node.parent is not None and node.parent.parent is not None:
            node = node.parent
        return node

    def ancestors(self) -> list[RawNode]:
        out, node = [], self.parent
        while node is not None:
            out.append(node)
            node = node.parent
        return out

    def describe(self) -> str:
        role = CONTROL_ROLES.get(self.role, f"role {self.role}")
        return f"{role} {self.name!r} at {self.box}"


@dataclass
class RawTree:
    """Every app's objects read for one screen, what the reading could not finish, and
    each app's process (bus name → pid: which windows are its own)."""

    nodes: list[RawNode]
    notes: list[str]
    calls: int = 0
    pids: dict[str, int] = field(default_factory=dict)


def read_tree(address: str, *, deadline_s: float = 10.0, max_nodes: int = 6000) -> RawTree:
    """Every app's tree on the AT-SPI bus at `address`: objects that show (and their
    windows) with role, name, states, box (as reported), labelled-by names, and each
    app's pid. Stops at `max_nodes` objects or `deadline_s` seconds; notes say what was
    cut."""
    from jeepney.io.blocking import open_dbus_connection

    notes: list[str] = []
    nodes: list[RawNode] = []
    pids: dict[str, int] = {}
    deadline = time.monotonic() + deadline_s
    with open_dbus_connection(address, auth_timeout=_CALL_TIMEOUT) as connection:
        pipe = atspi.Pipeline(connection)
        apps: list[tuple[str, str]] = []

        def got_apps(body: Any) -> None:
            if body:
                apps.extend((str(a), str(p)) for a, p in body[0])

        pipe.send(atspi.call(atspi.REGISTRY, atspi.ROOT, atspi.ACCESSIBLE, "GetChildren"), got_apps)
        pipe.run(time.monotonic() + _CALL_TIMEOUT)
        roots: list[RawNode] = []
        for app, path in apps:
            root = RawNode(app, path)
            roots.append(root)

            def got_toolkit(body: Any, root: RawNode = root) -> None:
                root.toolkit = str(body[0][1]) if body else ""

            def got_version(body: Any, root: RawNode = root) -> None:
                version = str(body[0][1]) if body else ""
                if root.toolkit.upper().startswith("GTK") and version.startswith("4"):
                    root.toolkit = "GTK4"

            def got_pid(body: Any, app: str = app) -> None:
                if body:
                    pids[app] = int(body[0])

            pipe.send(atspi.get_property(app, path, APPLICATION, "ToolkitName"), got_toolkit)
            pipe.send(atspi.get_property(app, path, APPLICATION, "Version"), got_version)
            pipe.send(atspi.process_of(app), got_pid)
        pipe.run(time.monotonic() + _CALL_TIMEOUT)
        level = roots
        for node in roots:
            _ask(pipe, node, root=True)
        complete = pipe.run(deadline)
        while level:
            next_level: list[RawNode] = []
            for node in level:
                if node.parent is not None and not (node.showing or node.role in FRAME_ROLES):
                    continue
                for child in node.children:
                    child.toolkit = node.toolkit
                    next_level.append(child)
            if len(nodes) + len(next_level) > max_nodes:
                notes.append(f"stopped at {max_nodes} objects")
                next_level = next_level[: max(0, max_nodes - len(nodes))]
            for child in next_level:
                _ask(pipe, child)
            complete = pipe.run(deadline) and complete
            nodes.extend(next_level)
            level = next_level
            if time.monotonic() > deadline:
                notes.append(f"the trees were not read whole within {deadline_s}s")
                break
        if not complete and not notes:
            notes.append("some calls were not answered in time")
        return RawTree(nodes, notes, pipe.sent, pids)


def _ask(pipe: atspi.Pipeline, node: RawNode, *, root: bool = False) -> None:
    app, path = node.app, node.path

    def got_children(body: Any) -> None:
        if body is None:  # no GetChildren (older bridges): by index
            pipe.send(atspi.get_property(app, path, atspi.ACCESSIBLE, "ChildCount"), got_count)
            return
        for child_app, child_path in list(body[0])[:_MAX_CHILDREN]:
            _adopt(node, str(child_app), str(child_path))

    def got_count(body: Any) -> None:
        if not body:
            return
        for index in range(min(int(body[0][1]), _MAX_CHILDREN)):
            message = atspi.call(app, path, atspi.ACCESSIBLE, "GetChildAtIndex", "i", (index,))
            pipe.send(message, got_child)

    def got_child(body: Any) -> None:
        if body:
            child_app, child_path = body[0]
            _adopt(node, str(child_app), str(child_path))

    pipe.send(atspi.call(app, path, atspi.ACCESSIBLE, "GetChildren"), got_children)
    if root:
        return

    def got_role(body: Any) -> None:
        if body:
            node.role = int(body[0])
            if node.role in CAPTIONED_ROLES:
                message = atspi.call(app, path, atspi.ACCESSIBLE, "GetRelationSet")
                pipe.send(message, got_relations)

    def got_name(body: Any) -> None:
        if body:
            node.name = " ".join(str(body[0][1]).split())
        if not node.name:  # GTK 4.8 names a menu button only in its description
            pipe.send(
                atspi.get_property(app, path, atspi.ACCESSIBLE, "Description"), got_description
            )

    def got_description(body: Any) -> None:
        if body and not node.name:
            node.name = " ".join(str(body[0][1]).split())

    def got_state(body: Any) -> None:
        if body:
            node.states = atspi.state_bits(body)

    def got_box(body: Any) -> None:
        if body:
            x, y, w, h = (int(v) for v in body[0])
            if w > 0 and h > 0:
                node.box = (x, y, w, h)

    def got_relations(body: Any) -> None:
        if not body:
            return
        for kind, targets in body[0]:
            if int(kind) != atspi.LABELLED_BY:
                continue
            for target_app, target_path in targets:
                name = atspi.get_property(
                    str(target_app), str(target_path), atspi.ACCESSIBLE, "Name"
                )
                pipe.send(name, got_label)

    def got_label(body: Any) -> None:
        if body:
            text = " ".join(str(body[0][1]).split())
            if text:
                node.labelled_by.append(text)

    pipe.send(atspi.call(app, path, atspi.ACCESSIBLE, "GetRole"), got_role)
    pipe.send(atspi.get_property(app, path, atspi.ACCESSIBLE, "Name"), got_name)
    pipe.send(atspi.call(app, path, atspi.ACCESSIBLE, "GetState"), got_state)
    extents = atspi.call(app, path, atspi.COMPONENT, "GetExtents", "u", (atspi.COORDS_SCREEN,))
    pipe.send(extents, got_box)


def _adopt(parent: RawNode, app: str, path: str) -> None:
    if path == "/org/a11y/atspi/null" or any(c.path == path for c in parent.children[-1:]):
        return
    parent.children.append(RawNode(app, path, parent=parent, depth=parent.depth + 1))


def place(nodes: Sequence[RawNode], windows: Sequence[Any]) -> list[RawNode]:
    """`nodes` with boxes on the screen: a top-level window whose reported box is not
    where the desktop shows a window of its size and title (GTK 4 reports boxes
    relative to the window) moves it and everything in it to that window."""
    _place_menu_items(nodes)
    shifts: dict[int, tuple[int, int]] = {}
    for node in nodes:
        if node.parent is None or node.parent.parent is not None or node.box is None:
            continue
        x, y, w, h = node.box
        if any(
            _near((win.x, win.y, win.width, win.height), node.box)
            or (win.frame and _near(tuple(win.frame), node.box))
            for win in windows
        ):
            continue  # placed already (its box, or its frame's: GTK 3 reports that)
        same = [win for win in windows if abs(win.width - w) <= 4 and abs(win.height - h) <= 4]
        titled = [win for win in same if (win.title or "") == node.name] or same
        if not titled:
            continue
        if len(titled) == 1:
            shifts[id(node)] = (titled[0].x - x, titled[0].y - y)
    _place_popovers(nodes, windows, shifts)
    for node in nodes:
        shift = next((shifts[id(a)] for a in [node, *node.ancestors()] if id(a) in shifts), None)
        if shift and node.box is not None:
            x, y, w, h = node.box
            node.box = (x + shift[0], y + shift[1], w, h)
    return list(nodes)


def popups(
    nodes: Sequence[RawNode],
) -> list[tuple[tuple[int, int, int, int], set[str], RawNode]]:
    """The popups that show drawn inside their window (no window of their own): a popup
    menu below a window (Java's lightweight popups), a part of a window after a larger
    part it lies in (GTK 3's popovers, the window's last children);
    each with the paths of what it holds (a menu's items are listed under their menu
    too) and its window: what of that window lies under one and is none of them is
    hidden."""
    out = []
    for node in nodes:
        if node.box is None or not node.showing or node.parent is None:
            continue
        grand = node.parent.parent
        if node.role == POPUP_MENU and grand is not None:
            out.append((node.box, _paths_below(node), node.top))
            continue
        if grand is None or grand.parent is not None:
            continue  # (only a top-level window's own parts)
        kids = node.parent.children
        siblings = kids[: next((i for i, kid in enumerate(kids) if kid is node), 0)]
        area = node.box[2] * node.box[3]
        if any(
            s.box is not None
            and s.showing
            and _holds(s.box, node.box, 4)
            and area < s.box[2] * s.box[3]
            for s in siblings
        ):
            out.append((node.box, _paths_below(node), node.top))
    return out


def _paths_below(node: RawNode) -> set[str]:
    held, stack = set(), list(node.children)
    while stack:
        below = stack.pop()
        held.add(below.path)
        stack.extend(below.children)
    return held


def _place_menu_items(nodes: Sequence[RawNode]) -> None:
    """Move the items of a popup menu that the app reports where the menu that opened
    it is (Java's ATK wrapper: the menu's corner plus the item's place in the popup) to
    the popup, when they lie outside it and the popup's corner less the menu's puts
    them all in it. What a submenu holds moves by its own popup's offset only."""
    moves: dict[int, tuple[int, int]] = {}
    for popup in nodes:
        if popup.role != POPUP_MENU or popup.box is None:
            continue
        items = [c for c in popup.children if c.box is not None]
        if not items or all(_holds(popup.box, c.box) for c in items):
            continue
        paths = {c.path for c in items}
        menu = next(
            (
                n
                for n in nodes
                if n.role == MENU and n.box is not None and paths & {c.path for c in n.children}
            ),
            None,
        )
        if menu is None or menu.box is None:
            continue
        dx, dy = popup.box[0] - menu.box[0], popup.box[1] - menu.box[1]
        if all(_holds(popup.box, _moved(c.box, dx, dy)) for c in items):
            moves[id(popup)] = moves[id(menu)] = (dx, dy)
    if not moves:
        return
    for node in nodes:
        move = next((moves[id(a)] for a in node.ancestors() if id(a) in moves), None)
        if move is not None and node.box is not None:
            node.box = _moved(node.box, *move)


def _holds(outer: Sequence[int], inner: Sequence[int] | None, slack: int = 2) -> bool:
    if inner is None:
        return False
    return (
        outer[0] - slack <= inner[0]
        and outer[1] - slack <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2] + slack
        and inner[1] + inner[3] <= outer[1] + outer[3] + slack
    )


def _moved(box: Sequence[int] | None, dx: int, dy: int) -> tuple[int, int, int, int]:
    assert box is not None
    return (box[0] + dx, box[1] + dy, box[2], box[3])


def _near(a: Sequence[int], b: Sequence[int]) -> bool:
    return all(abs(p - q) <= 4 for p, q in zip(a, b, strict=True))


def _place_popovers(
    nodes: Sequence[RawNode], windows: Sequence[Any], shifts: dict[int, tuple[int, int]]
) -> None:
    """GTK 4 reports a popover menu's box relative to its own surface, an X window of
    exactly its size: such a menu (and what it holds) moves to that window."""
    popups = [
        w for w in windows if w.frame is None or tuple(w.frame) == (w.x, w.y, w.width, w.height)
    ]
    for node in nodes:
        if node.toolkit != "GTK4" or node.role not in (MENU, POPUP_MENU) or node.box is None:
            continue
        if node.parent is not None and node.parent.role == MENU_BAR:
            continue
        x, y, w, h = node.box
        same = [win for win in popups if abs(win.width - w) <= 2 and abs(win.height - h) <= 2]
        if len(same) == 1 and (same[0].x, same[0].y) != (x, y):
            shifts[id(node)] = (same[0].x - x, same[0].y - y)


def close_quietly(thing: Any) -> None:
    with contextlib.suppress(Exception):
        thing.close()
