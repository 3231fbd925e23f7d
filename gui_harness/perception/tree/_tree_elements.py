"""From accessibility elements to components: `components()` keeps what shows on the
screen and can be acted on (clipped to it), maps roles to kinds and AT-SPI states to
ours (and says which tab is current where the tree does not), turns a table that manages
its descendants into one `grid`, and drops duplicates (a link inside a tab) and a closed
chooser's current option. Reading the elements is
accessibility.py's and _tree_walk.py's job.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from gui_harness.perception.captions import caption_of
from gui_harness.perception.component import STATES, Component, State
from gui_harness.perception.tree import _atspi as atspi
from gui_harness.perception.tree import _tree_windows
from gui_harness.perception.tree._tree_node import CLASS_NAME, Element
from gui_harness.perception.tree._tree_windows import Surface

__all__ = ["components"]

_MIN_SIDE = 4  # pixels left on screen after clipping for an element to count
_MAX_LABEL = 120
# LibreOffice Calc's own accessible name for its formula bar's input line (its
# STR_ACC_EDITLINE_NAME), which its GTK 3 plugin (7.4) leaves off the object
_INPUT_LINE = "Input line"
_ARROWS = " ▼▾⏷▲▴⏶"  # a drop-down's arrow, which a name may end in ("otto▼")
# the stand-in name a toolkit gives every control of a kind (GTK 4.8's notebook tabs "Tab")
_STAND_INS = frozenset({"tab", "button", "page", "item", "label"})
_TOOLTIP_WORDS = 4  # a name this long that does not say the drawn text is a tooltip
_MARKER = re.compile(r"_(.)")  # a mnemonic marker ("_Save": S underlined; "__" a "_")
# an icon theme's name (the freedesktop naming spec: "view-refresh-symbolic"), which GTK 3
# gives an entry's icon or a drop-down showing icons
# (only a symbolic one: "document-save" may be a file's name in a file chooser)
_ICON_NAME = re.compile(r"^[a-z][a-z0-9]*(?:-[a-z0-9]+)*-symbolic(?:-rtl|-ltr)?$")
# an internal name: one identifier-like word ("save_btn", "open-button", "btnSave")
_INTERNAL = re.compile(r"^(?=.*(?:[a-z][A-Z]|[_-]))[A-Za-z][A-Za-z0-9]*(?:[_-][A-Za-z0-9]+)*$")
_ENTRIES = frozenset({79, 61, 76})  # entry, text, autocomplete: an editable chooser's own
_BUTTONS = frozenset({43, 62})  # push button, toggle button


def components(
    elements: Sequence[Element],
    screen: tuple[int, int],
    *,
    offset: int = 0,
    on: list[Surface | None] | None = None,
) -> list[Component]:
    """The components of `elements` (in tree order), in screen pixels as the app
    reports them; `offset` moves what the app draws itself down (AppWalk.offset). `on`,
    when given, is filled with each component's window or popover (_tree_windows), in
    step with the result, for place() to put it where the screen shows it.

    What a closed drop-down holds (its list's options, placed where its list would
    open) is left out but for its text entry (with `on`, place() does that, keeping
    those on a popup window of their own: Qt never says its drop-down is open); an
    item that cannot be selected itself (Qt's tree row heads) names the unnamed
    selectable cell in its place, and so does a named one a menu hides (under a quarter
    of it shows) where the unnamed one in its place still shows (Qt 5's side pane rows)."""
    found: list[Component] = []
    held: list[Surface | None] = []
    sources: list[Element] = []  # the element of each component found
    items: list[tuple[int, int, int, int]] = []  # unnamed cells of long lists, so far
    names: list[tuple[tuple[int, int, int, int], str]] = []  # unselectable named items
    whole: dict[tuple[int, ...], tuple[int, int, int, int]] = {}  # boxes before a menu's cut
    hidden: list[tuple[tuple[int, int, int, int], str]] = []  # named, under a menu: dropped
    closed = [
        e.order
        for e in elements
        if e.role == atspi.COMBO_BOX and e.order and not e.states & (1 << atspi.EXPANDED)
    ]
    windows = _tree_windows.surfaces(elements)
    layout = _Layout(elements, windows)
    moves = _tree_windows.menu_shifts(elements)
    popups = _tree_windows.popup_covers(elements)
    panes = _panes(elements)
    for element in elements:
        if {"role", "states", "name", "box"} - element.answered or element.box is None:
            continue
        bits = element.states
        if not (bits & (1 << atspi.SHOWING) and bits & (1 << atspi.VISIBLE)):
            continue
        if (
            on is None  # (with `on`, _tree_windows.place() keeps those on a popup of theirs)
            and element.role not in _ENTRIES
            and any(element.order[: len(o)] == o and len(element.order) > len(o) for o in closed)
        ):
            continue  # an option of a closed drop-down: not on the screen
        dx, dy = _tree_windows.shift_of(element.order, moves) if moves else (0, 0)
        x, y, w, h = _scrolled(element, panes) if panes else element.box
        dy += 0 if element.native else offset
        box = _clip((x + dx, y + dy, w, h), screen)
        if box is not None and popups:  # under a menu open over its window: not shown
            whole[element.order] = box
            box = _tree_windows.popup_cut(box, element, popups)
            if box is None and element.name.strip() and element.role in atspi.ROLE_KINDS:
                hidden.append((whole[element.order], element.name))
        if box is None:
            continue
        label = _label(element.name)
        if label is not None and element.group and _label(element.group) == label:
            label = None  # its group box's name (Qt's), not the field's
        if element.grid is not None:
            found.append(
                Component(
                    0,
                    "grid",
                    box,
                    label,
                    1.0,
                    _states(bits, element.role),
                    "accessibility",
                    element.grid.shifted(dy),
                )
            )
            held.append(_tree_windows.surface_of(element, windows))
            sources.append(element)
            continue
        if element.input_line:
            found.append(
                Component(
                    0, "field", box, label or _INPUT_LINE, 1.0, _states(bits, 0), "accessibility"
                )
            )
            held.append(_tree_windows.surface_of(element, windows))
            sources.append(element)
            continue
        if element.role not in atspi.ROLE_KINDS:
            continue
        if element.role == atspi.TEXT_ROLE and not bits & (1 << atspi.EDITABLE):
            continue
        if element.role in atspi.ITEM_ROLES and not bits & (
            (1 << atspi.SELECTABLE) | (1 << atspi.FOCUSABLE)
        ):
            if label is not None:
                names.append((box, label))
            continue
        if element.item and label is None:
            if any(_holds(outer, box) for outer in items):
                continue  # the icon in a list's cell: the cell is the target
            items.append(box)  # an unnamed cell: named by what it holds (see below)
        component = Component(
            0,
            atspi.ROLE_KINDS[element.role],
            box,
            label,
            1.0,
            _states(bits, element.role),
            "accessibility",
            caption=_caption(element.caption or layout.caption(element), label),
        )
        same = next(
            (
                number
                for number, other in enumerate(found)
                if (_same_place(component.box, other.box) or _twin(component, other))
                and not _open_option(element, sources[number], other)
            ),
            None,
        )
        if same is not None:
            # a link inside a tab, a button inside a list item: keep the outer one, named
            # by the inner one when it has no name (GTK 3's file view: a row's name cell
            # holds an icon and the name)
            if found[same].label is None and component.label is not None:
                found[same] = found[same].with_label(component.label)
            if found[same].caption is None and component.caption is not None:
                found[same] = replace(found[same], caption=component.caption)
            continue
        chooser = _closed_chooser(component, found)
        if chooser is not None:
            # a closed drop-down's current option (Chromium reports it as showing): it
            # names the chooser when the chooser has no name, and is no target itself
            if found[chooser].label is None:
                found[chooser] = found[chooser].with_label(component.label)
            continue
        found.append(component)
        held.append(_tree_windows.surface_of(element, windows))
        sources.append(element)
    for number, component in enumerate(found):
        if component.label is None:
            name = next((n for b, n in names if _same_place(b, component.box)), None)
            if name is None and hidden:  # its named twin in its place, mostly under a menu
                uncut = whole.get(sources[number].order, component.box)
                name = next((_label(n) for b, n in hidden if _same_place(b, uncut)), None)
            if name is not None:
                found[number] = component.with_label(name)
    _name_by_labels(elements, found, sources, windows)
    _current_tabs(elements, found, sources)
    if on is not None:
        on.extend(held)
    return found


def _name_by_labels(
    elements: Sequence[Element],
    found: list[Component],
    sources: list[Element],
    windows: dict[tuple[int, ...], Surface],
) -> None:
    """Name each unnamed component of `found` (made from `sources`) by the text of the
    labels below it drawn in its box, in tree order (GTK 4 leaves a path bar's or a
    sidebar row's button unnamed: its label child holds the text; GTK 3 lists a tab's
    page below the tab, whose labels are no name of it), its own rather than those of a control it
    holds (an expander's button) when it has both, but for those on a surface of their
    own (a menu button's popover menu: its items are no name of the button); a named one
    whose name is not the text they draw but its mnemonic string or an internal name is
    named by that text (_drawn: GTK 4.8 names a check button "_Remember me"). Components
    of one kind sharing one name that their labels tell apart are named by their labels:
    the name is a stand-in (GTK 4 names every notebook tab "Tab")."""
    labels = [
        e
        for e in elements
        if e.role == atspi.LABEL
        and "name" in e.answered
        and _label(e.name) is not None
        and e.states & (1 << atspi.VISIBLE)
        and e.box is not None
        and e.box[2] > 0
        and e.box[3] > 0
    ]
    if not labels:
        return

    def text(number: int) -> str | None:
        order = sources[number].order
        own = _tree_windows.surface_of(sources[number], windows)
        inner = [
            s.order for s in sources if s.order[: len(order)] == order and len(s.order) > len(order)
        ]
        box = sources[number].box
        below = [
            e
            for e in labels
            if e.order[: len(order)] == order
            and len(e.order) > len(order)
            and _tree_windows.surface_of(e, windows) == own
            and _drawn_in(e.box, box)
        ]
        mine = [e for e in below if not any(e.order[: len(o)] == o for o in inner)]
        return _label(" ".join(e.name for e in mine or below))

    shared: dict[tuple[str, str], list[int]] = {}
    for number, component in enumerate(found):
        if component.label is None:
            name = text(number)
            if name is not None:
                found[number] = component.with_label(name)
        else:
            drawn = _drawn(component.label, text(number), component.kind)
            if drawn != component.label:
                found[number] = component.with_label(drawn)
            shared.setdefault((component.kind, drawn), []).append(number)
    for (_, name), numbers in shared.items():
        if len(numbers) < 2:
            continue
        texts = [text(number) for number in numbers]
        if None in texts or name in texts or len(set(texts)) < len(texts):
            continue  # the name is theirs (or the labels do not tell them apart)
        for number, own in zip(numbers, texts, strict=True):
            assert own is not None  # checked above
            found[number] = found[number].with_label(own)


def _panes(elements: Sequence[Element]) -> dict[tuple[int, ...], Element]:
    """The scroll panes among `elements`, by tree place: those that say so, and what
    holds a scroll bar and something else within two levels of it (Qt 6 calls its scroll
    area a filler)."""
    sized = {e.order: e for e in elements if e.box is not None and e.box[2] > 0 and e.box[3] > 0}
    panes = {o: e for o, e in sized.items() if e.role in atspi.SCROLLERS}
    held: dict[tuple[int, ...], set[int]] = {}
    for e in elements:
        if e.order:
            held.setdefault(e.order[:-1], set()).add(e.order[-1])
    for bar in elements:
        if bar.role != atspi.SCROLL_BAR or not _shown(bar):
            continue
        for length in (len(bar.order) - 1, len(bar.order) - 2):
            above = bar.order[:length]
            if length > 0 and len(held.get(above, ())) > 1:
                if above in sized:
                    panes[above] = sized[above]
                break
    return panes


def _scrolled(element: Element, panes: dict[tuple[int, ...], Element]) -> tuple[int, int, int, int]:
    """`element`'s box cut to what the scroll panes holding it show (a check box
    scrolled half out of its pane is drawn half: its other half is under the dialog's
    buttons); a box wholly scrolled out is cut to nothing (then dropped)."""
    assert element.box is not None
    x0, y0, w, h = element.box
    x1, y1 = x0 + w, y0 + h
    for length in range(len(element.order) - 1, 0, -1):
        pane = panes.get(element.order[:length])
        if pane is None or pane.box is None or pane.native != element.native:
            continue
        px, py, pw, ph = pane.box
        x0, y0, x1, y1 = max(x0, px), max(y0, py), min(x1, px + pw), min(y1, py + ph)
    return (x0, y0, max(x1 - x0, 0), max(y1 - y0, 0))


def _drawn_in(
    inner: tuple[int, int, int, int] | None, outer: tuple[int, int, int, int] | None
) -> bool:
    """Whether a label at `inner` is drawn in a control at `outer` (its middle is): what
    a control holds beyond its box is no text of its (GTK 3 lists a notebook's page
    under its tab)."""
    if inner is None or outer is None:
        return True
    mx, my = inner[0] + inner[2] / 2, inner[1] + inner[3] / 2
    return outer[0] <= mx <= outer[0] + outer[2] and outer[1] <= my <= outer[1] + outer[3]


def _label(name: str) -> str | None:
    """The name as a label: whitespace collapsed, bounded, a drop-down's arrow glyph cut
    off; None for no name or GTK 4's stand-in (the widget's class, "GtkButton",
    "EditorSourceView"); an icon theme's name as its words
    ("view-refresh-symbolic": "View Refresh"); a name GTK 4 doubled from a button's
    label ("= =") once."""
    words = name.strip(_ARROWS).split()
    if not words or (len(words) == 1 and CLASS_NAME.match(words[0])):
        return None
    if len(words) == 1 and _ICON_NAME.match(words[0]):
        words = _icon_words(words[0])
    half = len(words) // 2
    if len(words) % 2 == 0 and _unmarked(" ".join(words[:half])) == " ".join(words[half:]):
        words = words[half:]  # "= =", or the raw mnemonic string and the caption ("_Save Save")
    return " ".join(words)[:_MAX_LABEL]


def _icon_words(name: str) -> list[str]:
    """A symbolic icon's name as the words it says ("view-refresh-symbolic" -> "View
    Refresh")."""
    bare = name.removesuffix("-rtl").removesuffix("-ltr").removesuffix("-symbolic")
    return [part.capitalize() for part in bare.split("-")]


def _unmarked(text: str) -> str:
    """`text` without mnemonic markers: "Add I_tem" -> "Add Item", "a__b" -> "a_b"."""
    return _MARKER.sub(r"\1", text)


def _drawn(name: str, text: str | None, kind: str) -> str:
    """A control's name reconciled with `text`, what the labels inside it draw: the drawn
    text where the name is not it but its mnemonic string ("Page _1", "_Remember me"), a
    stand-in ("Tab"), an internal name ("save_btn") or a tooltip (a sentence that does
    not say the text); for a control that is not a field or a drop-down (which its
    caption may name), any name that neither says the drawn words nor is said by them (a
    menu button named "Mode selection" showing "Basic"); else the name (an icon's name,
    "Multiply" on "×", a name the app gave)."""
    if text is None or name == text:
        return name
    if _unmarked(name) == text or name.casefold() in _STAND_INS:
        return text
    apart = _bare(text) not in _bare(name) and _bare(name) not in _bare(text)
    if _INTERNAL.match(name) and _bare(name) not in _bare(text):
        return text
    if len(name.split()) >= _TOOLTIP_WORDS and _bare(text) not in _bare(name):
        return text  # a tooltip ("Select which types of files are shown" over "(None)")
    if kind not in ("field", "dropdown") and apart and _words(text):
        return text
    return name


def _words(text: str) -> bool:
    """Whether `text` holds a word (two letters or more), not only glyphs ("×", "⌫")."""
    return any(sum(ch.isalpha() for ch in word) >= 2 for word in text.split())


def _caption(name: str, label: str | None) -> str | None:
    """A labelled-by caption's text, as _label() makes it; None when there is none or
    it says what `label` says, a trailing colon and case aside (GTK 4 and Qt's entries
    take their caption for their name)."""
    caption = _label(name)
    if caption is None:
        return None
    if label is not None and _bare(caption) == _bare(label):
        return None
    return caption


class _Layout:
    """Captions by layout (captions.caption_of) for the controls the tree links none to:
    the labels of the control's window that are no part of a control (the tree's text
    drawn beside controls), and the controls between them, in the app's pixels."""

    def __init__(self, elements: Sequence[Element], windows: dict[tuple[int, ...], Surface]):
        self._elements = elements
        self._windows = windows
        self._texts: dict[Surface | None, list[tuple[tuple[int, int, int, int], str]]] | None = None
        self._controls: dict[Surface | None, list[tuple[int, int, int, int]]] = {}

    def caption(self, element: Element) -> str:
        if element.role not in atspi.CAPTIONED_ROLES or element.box is None:
            return ""
        if self._texts is None:
            self._read()
        assert self._texts is not None
        surface = self._where(element)
        texts = self._texts.get(surface, [])
        if not texts:
            return ""
        controls = self._controls.get(surface, [])
        return caption_of(element.box, texts, controls) or ""

    def _read(self) -> None:
        self._texts = {}
        for e in self._elements:
            if e.box is None or e.box[2] <= 0 or e.box[3] <= 0 or not _shown(e):
                continue
            if e.role == atspi.LABEL and not e.inside and "name" in e.answered:
                text = _label(e.name)
                if text is not None:
                    self._texts.setdefault(self._where(e), []).append((e.box, text))
            elif e.reported:
                self._controls.setdefault(self._where(e), []).append(e.box)

    def _where(self, element: Element) -> Surface | None:
        """The window or popover `element` is drawn on (a drop-down's own popup holds
        its list, not the drop-down)."""
        surface = _tree_windows.surface_of(element, self._windows)
        if surface is not None and surface.order == element.order:
            return surface.outer
        return surface


def _bare(text: str) -> str:
    return text.rstrip(": ").casefold()


def _states(bits: int, role: int) -> tuple[State, ...]:
    states: list[State] = []
    # a toggle button pressed in: GTK 4.8 gives it the push button's role
    if bits & (1 << atspi.CHECKED) or (role in _BUTTONS and bits & (1 << atspi.PRESSED)):
        states.append("checked")
    if bits & (1 << atspi.SELECTED):
        states.append("selected")
    if bits & (1 << atspi.FOCUSED):
        states.append("focused")
    if not bits & ((1 << atspi.ENABLED) | (1 << atspi.SENSITIVE)):  # GTK 4 sets SENSITIVE
        states.append("disabled")
    if bits & (1 << atspi.EXPANDED):
        states.append("expanded")
    return tuple(states)


def _open_option(element: Element, holder: Element, other: Component) -> bool:
    """Whether `element` is an option of `other`, an open drop-down (made from `holder`):
    Qt and GTK 3 open a drop-down's list with its current option over the drop-down
    itself, where it is no duplicate of it but the option to pick."""
    return (
        other.kind == "dropdown"
        and "expanded" in other.states
        and element.order[: len(holder.order)] == holder.order
        and len(element.order) > len(holder.order)
    )


def _current_tabs(
    elements: Sequence[Element], found: list[Component], sources: Sequence[Element]
) -> None:
    """Mark "selected" the current tab of each tab list none of whose tabs says so (Qt
    6.4's never do: it marks its current tab "focused" instead, whether or not the tab
    bar has the focus): the tab whose page shows, the page being the same child of a
    sibling of the tab list, that holds as many pages as there are tabs, one showing (a
    tab widget's stack of pages); else the one tab that says it is focused. A tab of such
    a list keeps "focused" only while its tab list has it (a Qt tab bar that takes no
    focus, FeatherPad's, still marks its current tab "focused")."""
    if not any(e.role == atspi.PAGE_TAB_LIST for e in elements):
        return
    children: dict[tuple[int, ...], list[Element]] = {}
    for element in sorted(elements, key=lambda e: e.order):
        if element.order:
            children.setdefault(element.order[:-1], []).append(element)
    numbers = {source.order: number for number, source in enumerate(sources)}
    for tab_list in elements:
        if tab_list.role != atspi.PAGE_TAB_LIST or not _shown(tab_list) or not tab_list.order:
            continue
        tabs = [e for e in children.get(tab_list.order, []) if e.role == atspi.PAGE_TAB]
        if not tabs or any(t.states & (1 << atspi.SELECTED) for t in tabs):
            continue
        current = _page_shown(tab_list, tabs, children)
        if current is None:
            focused = [t for t in tabs if t.states & (1 << atspi.FOCUSED)]
            current = focused[0] if len(focused) == 1 else None
        unfocused = not tab_list.states & (1 << atspi.FOCUSED)
        for tab in tabs:
            number = numbers.get(tab.order)
            if number is None:
                continue
            states = set(found[number].states)
            if tab is current:
                states.add("selected")
            if unfocused:
                states.discard("focused")
            found[number] = replace(found[number], states=tuple(s for s in STATES if s in states))


def _page_shown(
    tab_list: Element, tabs: Sequence[Element], children: dict[tuple[int, ...], list[Element]]
) -> Element | None:
    """The tab of `tabs` whose page shows, by the stack of pages beside `tab_list`."""
    for sibling in children.get(tab_list.order[:-1], []):
        pages = children.get(sibling.order, [])
        if sibling is tab_list or len(pages) != len(tabs):
            continue
        shown = [number for number, page in enumerate(pages) if _shown(page)]
        if len(shown) == 1:
            return tabs[shown[0]]
    return None


def _shown(element: Element) -> bool:
    bits = element.states
    return bool(bits & (1 << atspi.SHOWING) and bits & (1 << atspi.VISIBLE))


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


def _holds(outer: tuple[int, int, int, int], inner: tuple[int, int, int, int]) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[0] + inner[2] <= outer[0] + outer[2]
        and inner[1] + inner[3] <= outer[1] + outer[3]
    )


def _twin(a: Component, b: Component) -> bool:
    """Whether `a` is `b` published twice: the same kind and label, overlapping by most
    of the smaller (LibreOffice's menu bar shows through its GTK one); unnamed, one
    holding the other, which is over a third of it (GTK 4's menu button and the toggle
    button inside it)."""
    if a.kind != b.kind or a.label != b.label:
        return False
    ix = min(a.box[0] + a.box[2], b.box[0] + b.box[2]) - max(a.box[0], b.box[0])
    iy = min(a.box[1] + a.box[3], b.box[1] + b.box[3]) - max(a.box[1], b.box[1])
    smaller = min(a.box[2] * a.box[3], b.box[2] * b.box[3])
    if a.label is None:
        larger = max(a.box[2] * a.box[3], b.box[2] * b.box[3])
        held = _holds(a.box, b.box) or _holds(b.box, a.box)
        return held and smaller * 3 > larger
    return ix > 0 and iy > 0 and ix * iy >= 0.5 * smaller


def _same_place(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    ix = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    iy = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    if ix <= 0 or iy <= 0:
        return False
    inter = ix * iy
    return inter >= 0.8 * (a[2] * a[3] + b[2] * b[3] - inter)
