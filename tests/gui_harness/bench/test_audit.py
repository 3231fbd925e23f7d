"""The perception audit (gui_harness/bench/audit) finds what it is for: each invariant's
check on made-up screens, and the whole audit on a real app (gtk3-widget-factory, which
scripts/setup.sh installs) through a perception that plants one violation of each kind."""

from __future__ import annotations

import shutil
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from PIL import Image, ImageDraw

from gui_harness.bench.audit import audit_app, check_screen, summarise
from gui_harness.bench.audit.explore import perception_for
from gui_harness.bench.audit.tree import RawNode
from gui_harness.desktop.virtual import App
from gui_harness.perception import Component
from tests.support.toolkits import ACCESSIBLE

SHOWING = 1 << 25
WINDOW = SimpleNamespace(id=1, pid=10, title="Form", x=0, y=0, width=400, height=300, frame=None)


def _tree(*children: tuple[int, str, tuple[int, int, int, int]]) -> list[RawNode]:
    root = RawNode(":1.5", "/root")
    frame = RawNode(":1.5", "/f", role=23, name="Form", states=SHOWING, box=(0, 0, 400, 300),
                    parent=root)  # fmt: skip
    nodes = [frame]
    for i, (role, name, box) in enumerate(children):
        nodes.append(
            RawNode(":1.5", f"/n{i}", role=role, name=name, states=SHOWING, box=box, parent=frame)
        )
    return nodes


def _check(components: list[Component], nodes: list[RawNode], image=None, reader=None):
    image = image or Image.new("RGB", (400, 300), "white")
    return check_screen("s", components, nodes, [WINDOW], {":1.5": 10}, image, reader)


def _classes(result) -> set[tuple[str, str]]:
    return {(f.invariant, f.cls) for f in result.findings}


def test_a_control_of_the_tree_without_a_component_is_missing():
    nodes = _tree((43, "Save", (10, 10, 80, 30)), (43, "Open", (100, 10, 80, 30)))
    seen = [Component(1, "button", (10, 10, 80, 30), "Save", source="accessibility")]
    result = _check(seen, nodes)
    assert result.checked["found"] == 2
    assert [f.example for f in result.findings if f.invariant == "found"] == [
        "push button 'Open' at (100, 10, 80, 30)"
    ]


def test_a_control_under_another_window_is_neither_expected_nor_offered():
    nodes = _tree((43, "Save", (10, 10, 80, 30)))
    dialog = SimpleNamespace(id=2, pid=10, title="Dialog", x=0, y=0, width=200, height=100,
                             frame=None)  # fmt: skip
    seen = [Component(1, "button", (10, 10, 80, 30), "Save", source="accessibility")]
    image = Image.new("RGB", (400, 300), "white")
    result = check_screen("s", seen, nodes, [WINDOW, dialog], {":1.5": 10}, image, None)
    assert result.checked["found"] == 0  # it is not on screen for a user
    assert ("covered", "offered under another window") in _classes(result)


def test_a_control_on_a_page_not_shown_is_hidden_when_offered():
    nodes = _tree((43, "Save", (10, 10, 80, 30)))
    nodes[1].states = 0
    seen = [Component(1, "button", (10, 10, 80, 30), "Save", source="accessibility")]
    assert ("covered", "offered while not showing (hidden page)") in _classes(_check(seen, nodes))


def test_a_control_scrolled_out_of_its_pane_is_not_expected():
    nodes = _tree((49, "", (0, 0, 400, 100)), (43, "Help", (10, 120, 80, 30)))
    pane = nodes[1]
    hidden = RawNode(":1.5", "/n9", role=7, name="Option 9", states=SHOWING,
                     box=(10, 110, 80, 20), parent=pane)  # fmt: skip
    shown = RawNode(":1.5", "/n8", role=7, name="Option 1", states=SHOWING,
                    box=(10, 20, 80, 20), parent=pane)  # fmt: skip
    pane.children = [shown, hidden]
    seen = [
        Component(1, "checkbox", (10, 20, 80, 20), "Option 1", source="accessibility"),
        Component(2, "button", (10, 120, 80, 30), "Help", source="accessibility"),
    ]
    result = _check(seen, [*nodes, shown, hidden])
    assert result.checked["found"] == 2  # Option 1 and Help; Option 9 is scrolled out
    assert not [f for f in result.findings if f.invariant == "found"]


def test_labels_that_are_not_what_a_user_reads_are_found():
    seen = [
        Component(1, "button", (10, 10, 80, 30), "_Save Save", source="accessibility"),
        Component(2, "button", (10, 50, 80, 30), "Add Item Add Item", source="accessibility"),
        Component(3, "button", (10, 90, 30, 30), "view-refresh-symbolic", source="accessibility"),
        Component(4, "button", (10, 130, 120, 30), "Cancel", source="accessibility"),
    ]
    image = Image.new("RGB", (400, 300), "white")
    ImageDraw.Draw(image).text((20, 140), "Apply", fill="black")
    result = _check(seen, [], image, reader=lambda crop: "Apply" if crop.shape[1] == 120 else "")
    assert _classes(result) == {
        ("label", "mnemonic marker in label"),
        ("label", "name doubled"),
        ("label", "internal name as label"),
        ("label", "label is not the drawn text"),
    }


def test_two_labels_at_one_point_and_a_missing_caption_are_found():
    nodes = _tree((29, "Name:", (10, 10, 50, 20)), (79, "", (70, 8, 200, 24)))
    seen = [
        Component(1, "field", (70, 8, 200, 24), None, source="accessibility"),
        Component(2, "button", (300, 8, 60, 24), "Go", source="accessibility"),
        Component(3, "button", (302, 9, 58, 22), "Stop", source="pixels"),
    ]
    result = _check(seen, nodes)
    assert ("overlap", "two labels at one point") in _classes(result)
    assert ("caption", "caption (left) missing") in _classes(result)
    fixed = [replace(seen[0], caption="Name:"), seen[1]]
    assert _classes(_check(fixed, nodes)) == set()


class _Planting:
    """Perception as the audit uses it, with one violation of four invariants planted:
    a tree button dropped, a mnemonic label, a component outside every window, and a
    second label on a button's point."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.dropped: str | None = None

    def perceive(self, image: Any) -> Any:
        seen = self.inner.perceive(image)
        components = list(seen.components)
        buttons = [
            c for c in components if c.kind == "button" and c.source == "accessibility"
            and c.label and c.box[2] >= 20
        ]  # fmt: skip
        if len(buttons) < 3:
            return seen
        gone, renamed, doubled = buttons[0], buttons[1], buttons[2]
        self.dropped = gone.label
        point = gone.center
        kept = [c for c in components if not _holds(c, point)]
        kept = [replace(c, label="_Planted Save") if c is renamed else c for c in kept]
        kept.append(replace(doubled, label="Planted other", source="pixels"))
        kept.append(Component(0, "button", (1180, 760, 60, 24), "Planted outside"))
        return SimpleNamespace(components=tuple(kept))


def _holds(c: Component, point: tuple[int, int]) -> bool:
    x, y, w, h = c.box
    return x <= point[0] < x + w and y <= point[1] < y + h


@pytest.mark.skipif(shutil.which("gtk3-widget-factory") is None, reason="needs gtk-3-examples")
def test_the_audit_finds_violations_planted_in_a_real_apps_perception():
    for mark in ACCESSIBLE:
        if mark.name == "skipif" and mark.args[0]:
            pytest.skip(mark.kwargs["reason"])
    planted: list[_Planting] = []

    def factory(source, worker):  # type: ignore[no-untyped-def]
        planted.append(_Planting(perception_for(source, worker)))
        return planted[0]

    def start() -> list[App]:
        return [App(["gtk3-widget-factory"], timeout=60.0)]

    result = audit_app("gtk3-widget-factory", "GTK 3", start, budget_s=90.0, menus=1,
                       dialogs=0, factory=factory)  # fmt: skip
    assert result.status == "ok", result.detail
    main = result.screens[0]
    examples = {(f.invariant, f.cls): [] for f in main.findings}
    for f in main.findings:
        examples[(f.invariant, f.cls)].append(f.example)
    dropped = planted[0].dropped
    assert dropped is not None
    missing = [f.example for f in main.findings if f.invariant == "found"]
    assert any(f"{dropped!r}" in e for e in missing), missing
    assert any("'_Planted Save'" in e for e in examples[("label", "mnemonic marker in label")])
    assert any(
        "'Planted outside'" in e
        for e in examples[("covered", "off-screen or outside every window")]
    )
    assert any("'Planted other'" in e for e in examples[("overlap", "two labels at one point")])
    assert result.first_look_ms is not None and result.later_ms is not None
    report = summarise([result.to_dict()])
    assert "gtk3-widget-factory" in report and "mnemonic marker in label" in report
