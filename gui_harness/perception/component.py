"""What perception finds: `Component` (one numbered UI element), its kinds, states and
sources, and `reading_order()`, which numbers a list of them.

Shared by every source (detect.py's pixels, accessibility.py's tree, memory, fusion); it
imports none of them. A grid's cells are described in cells.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal, get_args

from gui_harness.perception.cells import Grid, cell_point

__all__ = [
    "KINDS",
    "SOURCES",
    "STATES",
    "Component",
    "Kind",
    "Source",
    "State",
    "reading_order",
]

Kind = Literal[
    "button", "field", "checkbox", "radio", "dropdown", "tab", "link", "icon", "text", "grid"
]
"""What a component looks like: a push button, a text entry, a check box, a radio button
(round), a drop-down chooser (an entry with an arrow button), a tab of a tab strip, a
link, an icon, a line of text, or a table or spreadsheet whose cells are addressed by
name (its `grid` holds their geometry). Pixel detection guesses it from geometry and fill, so
treat it as a hint; an accessibility source knows it."""

KINDS: tuple[Kind, ...] = get_args(Kind)

State = Literal["checked", "selected", "focused", "disabled", "expanded"]
"""A state a component is in, as the accessibility tree reports it."""

STATES: tuple[State, ...] = get_args(State)

Source = Literal["pixels", "accessibility"]
"""Where a component came from: pixel detection, or an app's accessibility tree."""

SOURCES: tuple[Source, ...] = get_args(Source)


@dataclass(frozen=True, slots=True)
class Component:
    """One UI element found on a screenshot.

    `index` is 1-based in reading order (rows top to bottom, then left to right);
    `box` is (x, y, width, height) in image pixels; `label` is its text when memory or
    OCR supplied one; `confidence` (0–1) is how sure detection is about `kind`.
    `states` are the states the accessibility tree reported (pixels report none) and
    `source` is where the component came from. A "grid" component carries its cells'
    geometry in `grid` (see cell_point()). `caption` is the text the app shows beside
    the component to name it (the tree's labelled-by relation, else captions.py's layout
    rule), when its label does not already say it (a drop-down labelled by its current
    option, "/root", captioned "Look in:").
    """

    index: int
    kind: Kind
    box: tuple[int, int, int, int]
    label: str | None = None
    confidence: float = 0.5
    states: tuple[State, ...] = ()
    source: Source = "pixels"
    grid: Grid | None = None
    caption: str | None = None

    @property
    def center(self) -> tuple[int, int]:
        """The middle of the box, in image pixels: where a click on it lands."""
        x, y, w, h = self.box
        return (x + w // 2, y + h // 2)

    def with_label(self, label: str | None) -> Component:
        """A copy carrying `label`."""
        return replace(self, label=label)

    def cell_point(self, cell: str | tuple[int, int]) -> tuple[int, int]:
        """The middle of cell `cell` ("B3", "R3C2" or a 0-based (row, column)) of this
        grid, in image pixels; raises InvalidAction when there is no such cell."""
        return cell_point(self, cell)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict: index, kind, box as [x, y, w, h], label, confidence, states
        and source; and grid, for a component that has cells, and caption, for one
        that has a caption (absent otherwise: a record without one reads the same)."""
        data: dict[str, Any] = {
            "index": self.index,
            "kind": self.kind,
            "box": list(self.box),
            "label": self.label,
            "confidence": round(self.confidence, 3),
            "states": list(self.states),
            "source": self.source,
        }
        if self.grid is not None:
            data["grid"] = self.grid.to_dict()
        if self.caption is not None:
            data["caption"] = self.caption
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Component:
        """The component `to_dict()` described."""
        x, y, w, h = (int(v) for v in data["box"])
        return cls(
            index=int(data["index"]),
            kind=data["kind"],
            box=(x, y, w, h),
            label=data.get("label"),
            confidence=float(data.get("confidence", 0.5)),
            states=tuple(data.get("states", ())),
            source=data.get("source", "pixels"),
            grid=Grid.from_dict(data["grid"]) if data.get("grid") else None,
            caption=data.get("caption"),
        )


def reading_order(components: Sequence[Component]) -> list[Component]:
    """`components` sorted into rows (by vertical centre, with a tolerance) then by x,
    and renumbered from 1."""
    by_centre = sorted(components, key=lambda c: (c.box[1] + c.box[3] / 2, c.box[0]))
    rows: list[list[Component]] = []
    anchor_y = anchor_h = 0.0
    for component in by_centre:
        centre = component.box[1] + component.box[3] / 2
        tolerance = max(8.0, 0.5 * min(component.box[3], anchor_h))
        if rows and centre - anchor_y <= tolerance:
            rows[-1].append(component)
        else:
            rows.append([component])
            anchor_y, anchor_h = centre, float(component.box[3])
    ordered = [c for row in rows for c in sorted(row, key=lambda c: c.box[0])]
    return [replace(c, index=i) for i, c in enumerate(ordered, start=1)]
