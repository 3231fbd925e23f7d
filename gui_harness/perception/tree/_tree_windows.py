"""Where an app's tree components are on the screen, and what of them shows: `place()`
moves them by the window system's own account of its windows and cuts them to what the
windows stacked above leave visible.

GTK 4 reports boxes relative to its window (a popover's relative to its own surface,
placed at its parent's box), so only the window system knows where they are; and a
window under another (an editor under its Save As dialog or a popover menu) shows only
what is not drawn over it: a box hidden there must neither be clicked nor swallow, in
fusion, what is drawn on top. Owns `Surface` (a window or popover as the tree tells it),
`surfaces()` and `place()`; reading the tree is _tree_walk.py's job, listing the windows
the desktop's (Desktop.visible_windows()).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from gui_harness.perception.component import Component
from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree._tree_node import Element, shows

__all__ = [
    "Surface",
    "WindowLike",
    "menu_shifts",
    "place",
    "popup_covers",
    "popup_cut",
    "shift_of",
    "surface_of",
    "surfaces",
    "unlisted",
]

_MARGIN = 64  # px a window may be larger than its tree's box (GTK 4's shadow margins)
_MIN_SIDE = 4  # px a component keeps either way, or it is gone
_KEPT = 0.25  # share of a partly hidden box that must show for it to stay
_POPOVER = re.compile(r"^GtkPopover")
_SLACK = 4  # px a popover may stand out of the part it is drawn over
_MENUS = frozenset({atspi.MENU, 41})  # a menu (GTK 4's popover menus), a popup menu (Qt's)


class WindowLike(Protocol):
    """A viewable top-level window as the desktop lists it (x11.Window)."""

    @property
    def x(self) -> int: ...
    @property
    def y(self) -> int: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def title(self) -> str: ...
    @property
    def pid(self) -> int | None: ...


@dataclass(frozen=True)
class Surface:
    """One window of an app's tree (a child of its root), or what may be a popover with
    a surface of its own (GTK 4's popover menus: a menu; place() takes it for one only
    when a window of just its size shows), with its box as the tree reports it."""

    app: str
    order: tuple[int, ...]
    name: str
    box: tuple[int, int, int, int]
    popup: bool
    outer: Surface | None = None  # the surface that holds it
    active: bool = False  # with the focus: on top, where no window list tells (a Qt menu)
    combo: bool = False  # a drop-down, whose list opens in a popup of its own
    closed: bool = False  # a drop-down not expanded (Qt never says so of an open one)


def surfaces(elements: Sequence[Element]) -> dict[tuple[int, ...], Surface]:
    """The surfaces among `elements`, by their place in the tree (`order`)."""
    found: dict[tuple[int, ...], Surface] = {}
    for element in sorted(elements, key=lambda e: len(e.order)):
        if not element.order:
            continue
        top = len(element.order) == 1
        combo = element.role == atspi.COMBO_BOX and not top
        menu = combo or element.role in _MENUS or bool(_POPOVER.match(element.name))
        if (top and element.box is not None) or menu:
            outer = surface_of(element, found)
            box = element.box or (0, 0, 0, 0)  # (a Qt popup menu's is not read)
            active = bool(element.states & (1 << atspi.ACTIVE))
            closed = combo and not element.states & (1 << atspi.EXPANDED)
            found[element.order] = Surface(
                element.app, element.order, element.name, box, not top, outer, active, combo, closed
            )
    return found


def surface_of(element: Element, found: dict[tuple[int, ...], Surface]) -> Surface | None:
    """The innermost surface that holds `element` (itself, when it is one)."""
    for length in range(len(element.order), 0, -1):
        surface = found.get(element.order[:length])
        if surface is not None:
            return surface
    return None


def menu_shifts(elements: Sequence[Element]) -> dict[tuple[int, ...], tuple[int, int]]:
    """How far to move what lies below each popup menu whose items are reported where
    the menu that opened it is, not where the popup draws them (Java's ATK wrapper: an
    item's place is its menu's plus its own within the popup), keyed by the tree place
    of the popup and of that menu (which hold the same items): the popup's corner less
    the menu's. Only when the items lie outside the popup and the move puts them all
    in it; a popup whose items are where it is needs none."""
    children: dict[tuple[int, ...], list[Element]] = {}
    for element in elements:
        if element.order:
            children.setdefault(element.order[:-1], []).append(element)
    shifts: dict[tuple[int, ...], tuple[int, int]] = {}
    for popup in elements:
        if popup.role != atspi.POPUP_MENU or popup.box is None or popup.box[2] <= 0:
            continue
        items = [e for e in children.get(popup.order, []) if e.box is not None and e.box[2] > 0]
        if not items or all(_within(e.box, popup.box, 2) for e in items):
            continue
        paths = {e.path for e in items}
        for menu in elements:
            if menu.role != atspi.MENU or menu.box is None or menu is popup:
                continue
            if not paths & {e.path for e in children.get(menu.order, [])}:
                continue
            dx, dy = popup.box[0] - menu.box[0], popup.box[1] - menu.box[1]
            if all(_within(_moved(e.box, dx, dy), popup.box, 2) for e in items):
                shifts[popup.order] = shifts[menu.order] = (dx, dy)
            break
    return shifts


Cover = tuple[tuple[int, int, int, int], frozenset[str], tuple[int, ...]]
"""A popup drawn inside a window: its box, the paths of what it holds, its window's
place in the tree."""


def popup_covers(elements: Sequence[Element]) -> list[Cover]:
    """The popups drawn inside their window (no window of their own, so no window list
    says what they cover) that show: a popup menu below a window (Java's lightweight
    popups), and a part of a window that comes after a larger part it lies in (GTK 3's
    popovers: a window's last children, drawn over its content), each
    with the objects it holds, by path (a menu's items are listed under the menu too):
    what of its window lies under one and is none of them does not show."""
    covers: list[Cover] = []
    parts: dict[tuple[int, ...], list[Element]] = {}
    for element in elements:
        if element.box is None or element.box[2] <= 0 or element.box[3] <= 0:
            continue
        if not shows(element):
            continue
        if element.role == atspi.POPUP_MENU and len(element.order) >= 2:
            covers.append((element.box, _held(elements, element), element.order[:1]))
        elif len(element.order) == 2:
            parts.setdefault(element.order[:1], []).append(element)
    for window, children in parts.items():
        children.sort(key=lambda e: e.order)
        for number, later in enumerate(children):
            assert later.box is not None
            area = later.box[2] * later.box[3]
            if any(
                _within(later.box, earlier.box, _SLACK) and area < earlier.box[2] * earlier.box[3]
                for earlier in children[:number]
                if earlier.box is not None
            ):
                covers.append((later.box, _held(elements, later), window))
    return covers


def _held(elements: Sequence[Element], holder: Element) -> frozenset[str]:
    return frozenset(e.path for e in elements if e.order[: len(holder.order)] == holder.order)


def popup_cut(
    box: tuple[int, int, int, int], element: Element, covers: Sequence[Cover]
) -> tuple[int, int, int, int] | None:
    """`box` (of `element`) cut to what the popups of popup_covers() over its window
    leave showing; None when under 1/4 of it does."""
    over = [
        cover
        for cover, held, window in covers
        if element.path not in held and element.order[: len(window)] == window
    ]
    return _uncovered(box, over) if over else box


def shift_of(
    order: tuple[int, ...], shifts: Mapping[tuple[int, ...], tuple[int, int]]
) -> tuple[int, int]:
    """The move menu_shifts() gives what lies at `order`: the innermost popup's or
    menu's that holds it (not the popup or menu itself: its own box is right)."""
    for length in range(len(order) - 1, 0, -1):
        shift = shifts.get(order[:length])
        if shift is not None:
            return shift
    return (0, 0)


def _within(inner: Sequence[int] | None, outer: Sequence[int], slack: int) -> bool:
    if inner is None:
        return False
    x, y, w, h = inner
    ox, oy, ow, oh = outer
    return (
        ox - slack <= x
        and oy - slack <= y
        and x + w <= ox + ow + slack
        and (y + h <= oy + oh + slack)
    )


def _moved(box: tuple[int, int, int, int] | None, dx: int, dy: int) -> tuple[int, int, int, int]:
    assert box is not None
    return (box[0] + dx, box[1] + dy, box[2], box[3])


def place(
    components: Sequence[Component],
    on: Sequence[Surface | None],
    windows: Sequence[WindowLike],
    pids: Mapping[str, int] | None = None,
) -> list[Component]:
    """`components` (each on the surface `on` gives, None: unknown) moved to where their
    window shows them and cut to what shows: what lies outside its own window is
    dropped (the items of a closed list, a hidden bar's), and what a window stacked
    above covers is cut to the part that shows, or dropped when under 1/4 of it
    shows. `windows` are bottom to top. A surface no window matches leaves its
    components as they are. With no `windows` (a desktop that cannot list them), the
    window with the focus is taken to be on top: what the others have under it is cut
    the same way (boxes are left as the apps report them). A popover's own box is no
    component (its items are). A window of the app's own process (`pids`: app → pid)
    that no surface matched is one of its popups (a Qt menu, whose items the tree
    keeps under the menu bar): what a menu holds that lies within it is on it."""
    if not windows:
        return _by_focus(components, on)
    chains = {s for start in on for s in _chain(start)}
    matched = _match(sorted(chains, key=lambda s: (s.app, s.order)), windows)
    claimed = {level for level, _ in matched.values()}
    placed: list[Component] = []
    for component, start in zip(components, on, strict=True):
        # a menu without a window of its own (Qt's, or one not open): its holder's
        surface = next((s for s in _chain(start) if s in matched), None)
        where = matched.get(surface) if surface is not None else None
        if where is None:
            placed.append(component)
            continue
        level, (dx, dy) = where
        popped = False
        if (
            start is not None
            and start.popup
            and start is not surface
            and not (start.combo and component.kind in ("dropdown", "field"))
        ):
            # a menu's item with no window of its own found: on a popup of the app's?
            # (not a drop-down itself nor its entry: they are on its holder's window,
            # under whatever popup opened over them)
            pid = (pids or {}).get(start.app)
            popped = level != (
                level := _popup(component.box, (dx, dy), level, windows, claimed, pid)
            )
        if _closed_option(component, start) and not popped:
            continue  # a closed drop-down's option, on no popup of its own: not drawn
        if surface is not None and surface.popup and _same(component.box, surface.box):
            continue  # the popover itself: its items are the targets
        window = windows[level]
        x, y, w, h = component.box
        box = _intersect((x + dx, y + dy, w, h), (window.x, window.y, window.width, window.height))
        if box is None:
            continue  # outside its own window: not drawn
        box = _uncovered(box, [_drawn(above) for above in windows[level + 1 :]])
        if box is None:
            continue
        grid = component.grid
        if grid is not None and (dx or dy):
            columns = tuple(c + dx for c in grid.columns)
            grid = replace(grid, columns=columns, rows=tuple(r + dy for r in grid.rows))
        placed.append(replace(component, box=box, grid=grid))
    return placed


def unlisted(on: Sequence[Surface | None], windows: Sequence[WindowLike]) -> bool:
    """Whether a top-level window of the trees (among `on`'s surfaces) is one that no
    window of `windows` matches, while one of that app's does: a window the app showed
    after `windows` were listed (a dialog opening), or one whose window is not viewable."""
    chains = {s for start in on for s in _chain(start)}
    matched = _match(sorted(chains, key=lambda s: (s.app, s.order)), windows)
    placed = {s.app for s in matched}
    return any(not s.popup and s not in matched and s.app in placed for s in chains)


def _by_focus(components: Sequence[Component], on: Sequence[Surface | None]) -> list[Component]:
    """`components` cut by the windows with the focus, but for those on them: a
    top-level window, or an open popup menu (Qt's; its box is where its items are)."""
    chains = [_chain(start) for start in on]
    covers: dict[Surface, tuple[int, int, int, int]] = {}
    for chain in chains:
        if chain and chain[-1].active:
            covers[chain[-1]] = chain[-1].box
    kept = [
        (c, chain)
        for c, chain in zip(components, chains, strict=True)
        if not _closed_option(c, chain[0] if chain else None)
    ]
    components = [c for c, _ in kept]
    chains = [chain for _, chain in kept]
    for component, chain in zip(components, chains, strict=True):
        menu = next((s for s in chain if s.popup and s.active), None)
        if menu is not None:
            covers[menu] = _union(covers.get(menu), component.box)
    if not covers:
        return list(components)
    placed: list[Component] = []
    for component, chain in zip(components, chains, strict=True):
        above = [box for surface, box in covers.items() if surface not in chain]
        box = _uncovered(component.box, above) if above else component.box
        if box is not None:
            placed.append(replace(component, box=box))
    return placed


def _union(
    a: tuple[int, int, int, int] | None, b: tuple[int, int, int, int]
) -> tuple[int, int, int, int]:
    if a is None:
        return b
    x0, y0 = min(a[0], b[0]), min(a[1], b[1])
    x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
    return (x0, y0, x1 - x0, y1 - y0)


def _closed_option(component: Component, start: Surface | None) -> bool:
    """Whether `component` is what a drop-down that is not open holds: neither the
    drop-down itself nor its text entry (an option, a button)."""
    return (
        start is not None
        and start.combo
        and start.closed
        and component.kind not in ("dropdown", "field")
    )


def _popup(
    box: tuple[int, int, int, int],
    shift: tuple[int, int],
    level: int,
    windows: Sequence[WindowLike],
    claimed: set[int],
    pid: int | None,
) -> int:
    """The level of the topmost window above `level` that no surface claimed, of the
    process `pid`, that holds most of `box` (moved by `shift`); else `level`."""
    if pid is None:
        return level
    x, y, w, h = box[0] + shift[0], box[1] + shift[1], box[2], box[3]
    for above in range(len(windows) - 1, level, -1):
        window = windows[above]
        if above in claimed or window.pid != pid:
            continue
        inside = _intersect((x, y, w, h), _rect(window))
        if inside is not None and 2 * inside[2] * inside[3] >= w * h:
            return above
    return level


def _chain(surface: Surface | None) -> list[Surface]:
    """`surface` and those that hold it, innermost first."""
    chain: list[Surface] = []
    while surface is not None:
        chain.append(surface)
        surface = surface.outer
    return chain


def _match(
    found: Sequence[Surface], windows: Sequence[WindowLike]
) -> dict[Surface, tuple[int, tuple[int, int]]]:
    """Each surface's window (its index in `windows`) and how far to move its boxes:
    a window as large as the surface or a margin larger all round, named as it is
    when it is a top-level one, each window matched once; the window's middle is the
    surface's middle. A top-level surface as large as a window's frame (GTK 3 reports
    the box the window manager draws, title bar and all) is that window, its frame where
    the surface is."""
    taken: set[int] = set()
    matched: dict[Surface, tuple[int, tuple[int, int]]] = {}
    # titled windows first, then popovers (exact sizes), then the rest by size alone
    ranked = sorted((s for s in found if not s.combo), key=lambda s: (s.popup, not s.name))
    for surface in ranked:
        _, _, sw, sh = surface.box
        fits = [i for i, window in enumerate(windows) if i not in taken and _fits(surface, window)]
        framed = [
            i
            for i, window in enumerate(windows)
            if i not in taken and not surface.popup and _framed(surface, window)
        ]
        fits = sorted(set(fits) | set(framed))
        if not fits:
            continue
        titled = [i for i in fits if windows[i].title == surface.name]
        exact = [i for i in fits if (windows[i].width, windows[i].height) == (sw, sh)]
        choice = (titled or exact or fits)[-1]  # the topmost of the best
        if not surface.popup and not titled and len(fits) > 1:
            continue  # several windows of its size and none of its name: unknown
        taken.add(choice)
        window = windows[choice]
        sx, sy = surface.box[0], surface.box[1]
        frame = _frame(window)
        if choice in framed and frame is not None and not _fits(surface, window):
            matched[surface] = (choice, (frame[0] - sx, frame[1] - sy))
            continue
        dx = window.x + (window.width - sw) // 2 - sx
        dy = window.y + (window.height - sh) // 2 - sy
        matched[surface] = (choice, (dx, dy))
    return matched


def _framed(surface: Surface, window: WindowLike) -> bool:
    """Whether `surface` is as large as the frame the window manager draws around
    `window` (a window it frames: the frame is larger than the window)."""
    frame = _frame(window)
    if frame is None or (frame[2], frame[3]) == (window.width, window.height):
        return False
    return abs(frame[2] - surface.box[2]) <= 1 and abs(frame[3] - surface.box[3]) <= 1


def _fits(surface: Surface, window: WindowLike) -> bool:
    _, _, sw, sh = surface.box
    mw, mh = window.width - sw, window.height - sh
    if surface.popup:
        return abs(mw) <= 1 and abs(mh) <= 1
    return 0 <= mw <= _MARGIN and 0 <= mh <= _MARGIN and abs(mw - mh) <= 2


def _drawn(window: WindowLike) -> tuple[int, int, int, int]:
    """What `window` covers: its frame (title bar and borders) when the window manager
    draws one, else its own box."""
    frame = _frame(window)
    return frame if frame is not None else _rect(window)


def _frame(window: WindowLike) -> tuple[int, int, int, int] | None:
    """(x, y, width, height) of the frame the window manager draws around `window`
    (x11.Window's `frame`), or None: unframed, or a window that does not say."""
    frame: tuple[int, int, int, int] | None = getattr(window, "frame", None)
    return frame


def _rect(window: WindowLike) -> tuple[int, int, int, int]:
    return (window.x, window.y, window.width, window.height)


def _same(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return all(abs(p - q) <= 1 for p, q in zip(a, b, strict=True))


def _intersect(
    a: tuple[int, int, int, int], b: tuple[int, int, int, int]
) -> tuple[int, int, int, int] | None:
    x0, y0 = max(a[0], b[0]), max(a[1], b[1])
    x1, y1 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    if x1 - x0 < _MIN_SIDE or y1 - y0 < _MIN_SIDE:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def _uncovered(
    box: tuple[int, int, int, int], covers: Sequence[tuple[int, int, int, int]]
) -> tuple[int, int, int, int] | None:
    """The largest part of `box` left of the strips beside each cover over it, or None
    when less than _KEPT of it shows that way."""
    area = box[2] * box[3]
    left = box
    for cover in covers:
        if _intersect(left, cover) is None:
            continue
        x, y, w, h = left
        cx, cy, cw, ch = cover
        strips = [
            (x, y, cx - x, h),  # left of the cover
            (cx + cw, y, x + w - cx - cw, h),  # right of it
            (x, y, w, cy - y),  # above it
            (x, cy + ch, w, y + h - cy - ch),  # below it
        ]
        kept = [s for s in strips if s[2] >= _MIN_SIDE and s[3] >= _MIN_SIDE]
        if not kept:
            return None
        left = max(kept, key=lambda s: s[2] * s[3])
    if left[2] * left[3] < _KEPT * area:
        return None
    return left
