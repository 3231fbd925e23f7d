"""The invariants every observation keeps (DESIGN.md §8, "Perception"), checked on one
screen against the audit's own reading of the trees, the desktop's windows and OCR of
the pixels — no list of expected controls.

* found: every accessible control on screen (showing, on the screen, in the window on
  top at its middle) has a component holding its middle;
* label: every component's label agrees with the text drawn in its box (OCR), or no
  text is drawn there (an icon's accessible name); no mnemonic marker, no doubled name;
* covered: no component offered whose object is under another window or not showing;
* overlap: no two components of like size (the smaller a quarter of the larger or
  more) share a third of the smaller with labels that disagree;
* caption: a field in a form row with a caption (a label left of it or just above it,
  else its labelled-by names) carries it as its caption or label.

Start at check_screen(); `Finding` is one violation, `ScreenCheck` one screen's result.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gui_harness.bench.audit.tree import LABEL_ROLES, RawNode, popups
from gui_harness.perception import Component

__all__ = ["INVARIANTS", "Finding", "ScreenCheck", "check_screen", "normal"]

INVARIANTS = ("found", "label", "covered", "overlap", "caption")
Reader = Callable[[np.ndarray], str]
_POPUP_ROLES = frozenset({33, 41, 11, 35, 31, 42})  # menu, popup menu, combo, item, list
_READ_KINDS = frozenset({"button", "tab", "link", "dropdown", "checkbox", "radio"})
_MAX_READS = 60
_MNEMONIC = re.compile(r"(?:^|[\s(])[_&][^\W_]|[^\W_]_[^\W_]")
_SNAKE = re.compile(r"^[a-z0-9]+(?:_[a-z0-9]+)+$")  # "start_group", "x_squared"
# an icon's or a widget's internal name: "view-refresh-symbolic", "gtk-ok", "GtkButton"
_INTERNAL = re.compile(r"^(?:[a-z0-9]+(?:-[a-z0-9]+)*-symbolic|gtk-[a-z-]+|Gtk[A-Z]\w+|Q[A-Z]\w+)$")


@dataclass(frozen=True)
class Finding:
    """One violation: which invariant, its class, and what shows it."""

    invariant: str
    cls: str
    example: str


@dataclass
class ScreenCheck:
    """One screen's findings and how many things each invariant was checked on."""

    screen: str
    checked: dict[str, int] = field(default_factory=lambda: dict.fromkeys(INVARIANTS, 0))
    findings: list[Finding] = field(default_factory=list)

    def add(self, invariant: str, cls: str, example: str) -> None:
        self.findings.append(Finding(invariant, cls, example))

    def to_dict(self) -> dict[str, Any]:
        return {
            "screen": self.screen,
            "checked": self.checked,
            "findings": [f.__dict__ for f in self.findings],
        }


def normal(text: str | None) -> str:
    """Lower case, letters and digits only, single spaces (what agreement compares)."""
    text = (text or "").casefold().replace("…", " ")
    return " ".join(re.sub(r"[^\w]+|_", " ", text).split())


def agrees(label: str, drawn: str) -> bool:
    """Whether a label and the text OCR read in its box say the same."""
    a, b = normal(label), normal(drawn)
    if not a or not b:
        return True
    if a in b or b in a:
        return True
    squeezed_a, squeezed_b = a.replace(" ", ""), b.replace(" ", "")
    if squeezed_a in squeezed_b or squeezed_b in squeezed_a:
        return True
    if difflib.SequenceMatcher(None, squeezed_a, squeezed_b).ratio() >= 0.7:
        return True
    short, long = sorted((squeezed_a, squeezed_b), key=len)
    # the label read with a letter or two wrong, beside other text (a shortcut, a value)
    return any(
        difflib.SequenceMatcher(None, short, long[i : i + len(short)]).ratio() >= 0.7
        for i in range(max(1, len(long) - len(short) + 1))
    )


def _inside(box: tuple[int, int, int, int], point: tuple[int, int]) -> bool:
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


def _middle(box: tuple[int, int, int, int]) -> tuple[int, int]:
    return (box[0] + box[2] // 2, box[1] + box[3] // 2)


def _iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    inter = _intersection(a, b)
    union = a[2] * a[3] + b[2] * b[3] - inter
    return inter / union if union > 0 else 0.0


def _intersection(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> int:
    w = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    h = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(0, w) * max(0, h)


def _near(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> bool:
    return all(abs(p - q) <= 4 for p, q in zip(a, b, strict=True))


def _box_of(window: Any) -> tuple[int, int, int, int]:
    return (window.x, window.y, window.width, window.height)


class _Stacking:
    """Which window is on top at a point, and which window each top-level object is."""

    def __init__(self, windows: Sequence[Any], nodes: Sequence[RawNode], pids: dict[str, int]):
        self.windows = list(windows)  # bottom to top
        self.pids = pids
        self.of_top: dict[int, Any] = {}
        for node in nodes:
            if node.parent is None or node.parent.parent is not None or node.box is None:
                continue
            for window in self.windows:  # its own box, or its frame (GTK 3 reports that)
                boxes = [_box_of(window), *([window.frame] if window.frame else [])]
                if any(_near(node.box, box) for box in boxes):
                    self.of_top[id(node)] = window
        self.claimed = {id(w) for w in self.of_top.values()}
        self.popups = popups(nodes)

    def top_at(self, point: tuple[int, int]) -> Any | None:
        for window in reversed(self.windows):
            if _inside(window.frame or _box_of(window), point):
                return window
        return None

    def shows(self, node: RawNode, point: tuple[int, int]) -> bool:
        """Whether `node`'s window is the one on top at `point` (a popup of its app
        that no top-level object claims counts for menus, lists and their items)."""
        window = self.top_at(point)
        if window is None:
            return False
        if any(
            _inside(box, point) and node.path not in held and node.top is top
            for box, held, top in self.popups
        ):
            return False  # under a menu drawn over its window, and none of its items
        own = self.of_top.get(id(node.top))
        if own is not None and window is own:
            return _inside(_box_of(own), point)
        pid = self.pids.get(node.app)
        same_app = pid is not None and window.pid == pid
        if id(window) in self.claimed or not same_app:
            return False
        return own is None or any(a.role in _POPUP_ROLES for a in node.ancestors())


def on_screen_controls(
    nodes: Sequence[RawNode], stacking: _Stacking, size: tuple[int, int]
) -> list[RawNode]:
    """The controls a user sees: showing (their ancestors too), at least 4×4 px, their
    middle on the screen and in their window, that window on top there."""
    out = []
    for node in nodes:
        if not node.control or node.box is None or not node.showing:
            continue
        if node.box[2] < 4 or node.box[3] < 4:
            continue
        point = _middle(node.box)
        if not (0 <= point[0] < size[0] and 0 <= point[1] < size[1]):
            continue
        if not all(a.showing for a in node.ancestors()[:-1]):
            continue
        if any(a.box is not None and not _inside(a.box, point) for a in _panes(node)):
            continue  # scrolled out of its pane: not drawn
        if stacking.shows(node, point):
            out.append(node)
    return out


def _panes(node: RawNode) -> list[RawNode]:
    """The scroll panes `node` is in: those that say so (scroll pane, viewport), and what
    holds a scroll bar (a child's or grandchild's) beside other things (Qt 6 calls its
    scroll area a filler)."""
    out = []
    for a in node.ancestors():
        if a.role in (49, 108):
            out.append(a)
            continue
        bars = [c for c in a.children if c.role == 48] + [
            g for c in a.children for g in c.children if g.role == 48 and len(c.children) == 1
        ]
        if bars and len(a.children) > 1:
            out.append(a)
    return out


def check_screen(
    screen: str,
    components: Sequence[Component],
    nodes: Sequence[RawNode],
    windows: Sequence[Any],
    pids: dict[str, int],
    image: Any,
    reader: Reader | None,
) -> ScreenCheck:
    """Check every invariant on one screen: `components` as perception offered them,
    `nodes` the audit's placed reading of the trees, `windows` bottom to top, `pids`
    each app's bus name → pid, `image` the screenshot, `reader` OCR of a grey crop."""
    result = ScreenCheck(screen)
    size = (image.width, image.height)
    stacking = _Stacking(windows, nodes, pids)
    visible = on_screen_controls(nodes, stacking, size)
    _found(result, components, visible)
    _labels(result, components, image, reader)
    _covered(result, components, nodes, stacking, size)
    _overlap(result, components)
    _captions(result, components, visible, nodes, stacking)
    return result


def _found(result: ScreenCheck, components: Sequence[Component], visible: list[RawNode]) -> None:
    for node in visible:
        assert node.box is not None
        result.checked["found"] += 1
        point = _middle(node.box)
        if not any(_inside(c.box, point) for c in components):
            role = node.describe().split(" '")[0].split(" at ")[0]
            result.add("found", f"{role} missing", node.describe())


def _labels(
    result: ScreenCheck, components: Sequence[Component], image: Any, reader: Reader | None
) -> None:
    grey = np.asarray(image.convert("L"))
    reads = 0
    for c in components:
        label = c.label or ""
        if c.kind not in _READ_KINDS:
            if label and c.kind != "text" and _named_inside(label):  # a field's class name
                result.checked["label"] += 1
                result.add("label", "internal name as label", f"{c.kind} {label!r} at {c.box}")
            continue
        if label:
            result.checked["label"] += 1
            if _named_inside(label):
                result.add("label", "internal name as label", f"{c.kind} {label!r} at {c.box}")
                continue
            marked = _MNEMONIC.search(label) and not re.search(r"[./\\]", label)
            if marked and not _drawn_underscore(c, grey, reader):  # "_memory" is a name
                result.add("label", "mnemonic marker in label", f"{c.kind} {label!r} at {c.box}")
                continue
            words = normal(label).split()
            half = len(words) // 2
            doubled = len(words) >= 2 and len(words) % 2 == 0 and words[:half] == words[half:]
            if doubled and not all(w.isdigit() for w in words):  # "64 × 64" is a size
                result.add("label", "name doubled", f"{c.kind} {label!r} at {c.box}")
                continue
        x, y, w, h = c.box
        if reader is None or reads >= _MAX_READS or not (10 <= h <= 60 and w >= 12):
            continue
        if c.kind in ("checkbox", "radio") and w < 2 * h:
            continue  # its caption is beside it, not in its box
        reads += 1
        crop = grey[max(0, y) : y + h, max(0, x) : x + w]
        if crop.shape[0] < 8 or crop.shape[1] < 8:
            continue  # off the screen's edge
        drawn = reader(crop)
        if len(normal(drawn).replace(" ", "")) < 3 or sum(ch.isalpha() for ch in drawn) < 2:
            continue  # an icon, or a glyph OCR made of one ("000"): nothing to compare
        if label and not agrees(label, drawn):
            result.add(
                "label", "label is not the drawn text",
                f"{c.kind} {label!r} at {c.box} ({c.source}) shows {drawn!r}",
            )  # fmt: skip
        elif not label:
            result.checked["label"] += 1
            result.add(
                "label", "drawn text left unlabelled", f"{c.kind} at {c.box} shows {drawn!r}"
            )


def _drawn_underscore(c: Component, grey: np.ndarray, reader: Reader | None) -> bool:
    """Whether the text drawn in `c`'s box has the underscore its label has (a file or
    database called "_memory"): then it is no mnemonic marker."""
    x, y, w, h = c.box
    crop = grey[max(0, y) : y + h, max(0, x) : x + w]
    if reader is None or crop.shape[0] < 8 or crop.shape[1] < 8:
        return False
    return "_" in reader(crop)


def _named_inside(label: str) -> bool:
    """Whether `label` is a name for the program, not the user: an icon's name, a widget
    class ("EditorSourceView", "GtkButton"), an identifier ("start_group")."""
    text = label.strip()
    camel = re.fullmatch(r"(?:[A-Z][a-z0-9]+){2,}(?:View|Widget|Button|Box|Bar|Area|Entry)", text)
    return bool(_INTERNAL.match(text) or _SNAKE.match(text) or camel)


def _covered(
    result: ScreenCheck,
    components: Sequence[Component],
    nodes: Sequence[RawNode],
    stacking: _Stacking,
    size: tuple[int, int],
) -> None:
    placed = [n for n in nodes if n.box is not None and n.box[2] > 0 and n.box[3] > 0]
    for c in components:
        result.checked["covered"] += 1
        point = c.center
        x, y, w, h = c.box
        shown = max(0, min(x + w, size[0]) - max(x, 0)) * max(0, min(y + h, size[1]) - max(y, 0))
        if shown < 0.5 * w * h or stacking.top_at(point) is None:
            result.add("covered", "off-screen or outside every window", _said(c))
            continue
        if c.source != "accessibility":
            continue
        same = [n for n in placed if n.box and _iou(n.box, c.box) >= 0.6]
        if not same:
            continue  # not one object of the audit's reading: cannot judge
        if not any(n.showing for n in same):
            result.add("covered", "offered while not showing (hidden page)", _said(c))
        elif not any(n.showing and stacking.shows(n, point) for n in same):
            result.add("covered", "offered under another window", _said(c))


def _said(c: Component) -> str:
    return f"{c.kind} {c.label!r} at {c.box} ({c.source})"


def _overlap(result: ScreenCheck, components: Sequence[Component]) -> None:
    labelled = [c for c in components if normal(c.label) and c.kind != "grid"]
    result.checked["overlap"] += len(labelled)
    flagged: set[int] = set()
    for i, a in enumerate(labelled):
        for b in labelled[i + 1 :]:
            smaller, larger = sorted((a.box[2] * a.box[3], b.box[2] * b.box[3]))
            if smaller <= 0 or _intersection(a.box, b.box) < smaller / 3:
                continue
            if smaller < larger / 4:
                continue  # a control inside another (an entry's icon, a tab's close)
            if agrees(a.label or "", b.label or ""):
                continue
            if id(a) in flagged and id(b) in flagged:
                continue
            flagged.update((id(a), id(b)))
            result.add("overlap", "two labels at one point", f"{_said(a)} and {_said(b)}")


def _captions(
    result: ScreenCheck,
    components: Sequence[Component],
    visible: list[RawNode],
    nodes: Sequence[RawNode],
    stacking: _Stacking,
) -> None:
    labels = [
        n
        for n in nodes
        if n.role in LABEL_ROLES
        and n.box is not None
        and n.showing
        and normal(n.name)
        and stacking.shows(n, _middle(n.box))
        and not any(a.control for a in n.ancestors())
    ]  # fmt: skip  (a label inside a button is the button's text, not a caption)
    for node in visible:
        if node.role not in (11, 79, 40, 52, 76, 61) or node.box is None:
            continue
        how, caption = _caption_of(node, labels)
        if not caption:
            continue
        point = _middle(node.box)
        holders = [c for c in components if _inside(c.box, point)]
        if not holders:
            continue  # counted as missing already
        result.checked["caption"] += 1
        best = min(holders, key=lambda c: c.box[2] * c.box[3])
        want = normal(caption)
        have = [normal(best.caption), normal(best.label)]
        if not any(h and (want in h or h in want) for h in have):
            result.add(
                "caption", f"caption ({how}) missing",
                f"{best.kind} {best.label!r} at {best.box} (caption {best.caption!r}); "
                f"its row says {caption!r}",
            )  # fmt: skip


def _caption_of(node: RawNode, labels: list[RawNode]) -> tuple[str, str]:
    """(how, text) of the caption a user reads for `node`: the nearest label left of it
    on its row, else one just above it, left-aligned, else its labelled-by names."""
    assert node.box is not None
    x, y, _, h = node.box
    left = []
    above = []
    for label in labels:
        assert label.box is not None
        lx, ly, lw, lh = label.box
        if label.top is not node.top:
            continue
        overlap = min(y + h, ly + lh) - max(y, ly)
        short = len(label.name) <= 40  # a caption, not a message above the field
        if lx + lw <= x + 4 and x - (lx + lw) <= 120 and overlap >= 0.5 * min(h, lh):
            left.append((x - (lx + lw), label))
        elif ly + lh <= y + 2 and y - (ly + lh) <= 14 and abs(lx - x) <= 16 and short:
            above.append((y - (ly + lh), label))
    if left:
        return "left", min(left, key=lambda t: t[0])[1].name
    if above:
        return "above", min(above, key=lambda t: t[0])[1].name
    named = [t for t in node.labelled_by if normal(t) and normal(t) != normal(node.name)]
    if named:  # no label beside it: the one the tree links (a group's title, at worst)
        return "by relation", named[0]
    return "", ""
