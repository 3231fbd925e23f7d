"""Pixels alone on a toolkit with no accessibility tree (issue 41): a Java Swing form in
the Metal look (its ATK bridge is off: the desktop has no bus), on Xvfb. The form's
text field has an etched border whose second line ran through the field's inside, so it
was a button; the gradient of a Metal button ran from "Cancel"'s last stem to its
border, so it was a drop-down; the selected tab's blue frame was taken for a link's
letters, so the tab strip was one link, then one line of text over both tabs; the
spinner's field and its stacked arrows were a text line, a button and two more lines,
with no arrow to click."""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Callable, Iterator

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource, Component, Perception
from gui_harness.perception.ocr.ocr_worker import OcrWorker, rapidocr_reader

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("java") is None, reason="no Java runtime"),
]

FORM = """
import javax.swing.*;
import java.awt.*;

public class Form {
    public static void main(String[] args) {
        SwingUtilities.invokeLater(() -> {
            JFrame frame = new JFrame("Order");
            JTabbedPane tabs = new JTabbedPane();
            JPanel general = new JPanel(new GridBagLayout());
            GridBagConstraints c = new GridBagConstraints();
            c.insets = new Insets(6, 8, 6, 8);
            c.anchor = GridBagConstraints.WEST;
            c.gridx = 0; c.gridy = 0; general.add(new JLabel("Name:"), c);
            c.gridx = 1; general.add(new JTextField(18), c);
            c.gridx = 0; c.gridy = 1; general.add(new JLabel("Copies:"), c);
            c.gridx = 1; general.add(new JSpinner(new SpinnerNumberModel(2, 1, 99, 1)), c);
            c.gridx = 1; c.gridy = 2; general.add(new JCheckBox("Gift wrap"), c);
            JPanel buttons = new JPanel(new FlowLayout(FlowLayout.LEFT, 8, 0));
            buttons.add(new JButton("Apply"));
            buttons.add(new JButton("Cancel"));
            c.gridx = 1; c.gridy = 3; general.add(buttons, c);
            tabs.addTab("General", general);
            JPanel advanced = new JPanel();
            advanced.add(new JLabel("Nothing here yet"));
            tabs.addTab("Advanced", advanced);
            frame.add(tabs);
            frame.setSize(520, 280);
            frame.setLocation(0, 0);
            frame.setDefaultCloseOperation(JFrame.EXIT_ON_CLOSE);
            frame.setVisible(true);
        });
    }
}
"""

Look = Callable[[], list[Component]]


@contextlib.contextmanager
def looking_at(app: App, *, tree: bool) -> Iterator[tuple[VirtualDesktop, Look]]:
    """`app` on its own 1280×800 Xvfb screen, and a fresh look at it as gui_agent's:
    pixels and OCR, and with `tree` the desktop's accessibility tree and window list.
    Skips the test without an OCR reader."""
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    worker = OcrWorker(reader)
    try:
        with VirtualDesktop((1280, 800), [app], accessibility=tree) as desktop:
            source = (
                AccessibilitySource(
                    desktop.accessibility_bus,
                    screen=desktop.size,
                    windows=lambda: desktop.desktop.visible_windows(),
                )
                if tree
                else None
            )

            def look() -> list[Component]:
                desktop.wait_settled(timeout=10.0)
                perception = Perception(accessibility=source, ocr=worker, first_look=60.0)
                return list(perception.perceive(desktop.screenshot()).components)

            try:
                yield desktop, look
            finally:
                if source is not None:
                    source.close()
    finally:
        worker.close()


@pytest.fixture(scope="module")
def form(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VirtualDesktop, Look]]:
    """The form on its own Xvfb screen, and a fresh look at it (pixels and OCR only)."""
    home = tmp_path_factory.mktemp("swing")
    source = home / "Form.java"
    source.write_text(FORM)
    app = App(["java", str(source)], timeout=90.0, env={"HOME": str(home)})
    with looking_at(app, tree=False) as seen:
        yield seen


def until(look: Look, done: Callable[[list[Component]], bool], limit: float) -> list[Component]:
    """Fresh looks until `done` says yes or `limit` seconds pass; the last look."""
    deadline = time.monotonic() + limit
    seen = look()
    while not done(seen) and time.monotonic() < deadline:
        seen = look()
    return seen


def click_until(
    desktop: VirtualDesktop,
    look: Look,
    target: Component,
    done: Callable[[list[Component]], bool],
) -> list[Component]:
    """Clicks `target`'s centre until a fresh look says `done` (a busy JVM can drop a
    click: it is clicked again only when a long wait saw nothing change)."""
    for _ in range(3):
        desktop.execute(Click(x=target.center[0], y=target.center[1]))
        seen = until(look, done, limit=30.0)
        if done(seen):
            return seen
    pytest.fail(f"three clicks on {target} did not do what they should")


def _spin_value(seen: list[Component]) -> str | None:
    fields = [c for c in seen if c.kind == "field" and c.caption == "Copies:"]
    return fields[0].label if len(fields) == 1 else None


def _drawn(seen: list[Component]) -> bool:
    """Whether the form's General page looks drawn: its labels read, its tabs found (a
    busy machine's JVM paints a while after its window maps)."""
    labels = {c.label for c in seen}
    tabs = {c.label for c in seen if c.kind == "tab"}
    return {"Apply", "Cancel", "Name:"} <= labels and {"General", "Advanced"} <= tabs


def test_a_swing_form_s_field_and_buttons_from_pixels_alone(form):
    _, look = form
    seen = until(look, _drawn, limit=30.0)
    named = {c.label: c for c in seen if c.label}
    assert named.get("Apply") is not None and named["Apply"].kind == "button", seen
    assert named.get("Cancel") is not None and named["Cancel"].kind == "button", seen
    fields = [c for c in seen if c.kind == "field" and c.caption == "Name:"]
    assert len(fields) == 1, seen
    # the field is the one right of its caption, on its row, not the tab strip's rest
    caption = named["Name:"]
    field = fields[0].box
    assert field[0] > caption.box[0] and field[1] <= caption.box[1] + caption.box[3], seen
    assert not [c for c in seen if c.kind == "link"], seen


def test_a_swing_tab_strip_is_two_tabs_and_each_switches_its_page(form):
    desktop, look = form
    seen = until(look, _drawn, limit=30.0)
    tabs = sorted((c for c in seen if c.kind == "tab"), key=lambda c: c.box[0])
    assert [t.label for t in tabs] == ["General", "Advanced"], seen
    general, advanced = tabs
    assert general.box[0] + general.box[2] <= advanced.box[0] + 2, seen  # side by side
    assert abs(general.box[1] - advanced.box[1]) <= 3, seen
    # nothing else is offered on the strip: not its line, not its empty rest
    strip = [
        c
        for c in seen
        if c.kind != "tab"
        and c.box[1] < general.box[1] + general.box[3] - 2
        and c.box[1] + c.box[3] > general.box[1] + 2
    ]
    assert not strip, strip
    seen = click_until(
        desktop, look, advanced, lambda s: any(c.label == "Nothing here yet" for c in s)
    )
    assert not [c for c in seen if c.caption == "Name:"], seen
    assert sorted(c.label for c in seen if c.kind == "tab") == ["Advanced", "General"], seen
    (general,) = [c for c in seen if c.kind == "tab" and c.label == "General"]
    click_until(desktop, look, general, lambda s: _spin_value(s) is not None)


def test_a_swing_spinner_s_arrows_are_buttons_beside_its_field(form):
    desktop, look = form
    seen = until(look, lambda s: _spin_value(s) is not None, limit=30.0)
    up, down = _spin_arrows(seen)
    seen = click_until(desktop, look, up, lambda s: _spin_value(s) == "3")
    click_until(desktop, look, down, lambda s: _spin_value(s) == "2")


def _spin_arrows(seen: list[Component]) -> tuple[Component, Component]:
    """The up and down buttons stacked at the right end of the field captioned
    "Copies:", which reads 2."""
    field, up, down = spin(seen, "Copies:")
    assert field.label == "2", seen
    return up, down


def spin(seen: list[Component], caption: str) -> tuple[Component, Component, Component]:
    """The field captioned `caption` and the two buttons stacked at its right end (any
    toolkit's spin box read on pixels)."""
    fields = [c for c in seen if c.kind == "field" and c.caption == caption]
    assert len(fields) == 1, seen
    (field,) = fields
    fx, fy, fw, fh = field.box
    arrows = sorted(
        (
            c
            for c in seen
            if c.kind == "button"
            and abs(c.box[0] - (fx + fw)) <= 4
            and fy - 3 <= c.box[1]
            and c.box[1] + c.box[3] <= fy + fh + 3
        ),
        key=lambda c: c.box[1],
    )
    assert len(arrows) == 2, seen
    up, down = arrows
    assert up.center[1] < fy + fh / 2 < down.center[1], arrows
    assert up.box[1] + up.box[3] <= down.box[1] + 1, arrows  # stacked, not overlapping
    return field, up, down


def _tabs_and_spinner(seen: list[Component]) -> bool:
    return len([c for c in seen if c.kind == "tab"]) >= 2 and _spin_value(seen) is not None


def test_a_nimbus_tab_strip_and_spinner(tmp_path):
    """The same form in Nimbus: rounded tabs filled with a gradient, whose fill is no
    line (it was one frame-wide mark: no tab had a label, the tabs were buttons); the
    spinner's arrows in a column of gradient buttons found as a box of its own, with
    an icon and a button where the field is."""
    reader = rapidocr_reader()
    if reader is None:
        pytest.skip("rapidocr-onnxruntime is not installed")
    source = tmp_path / "Form.java"
    source.write_text(FORM)
    nimbus = "-Dswing.defaultlaf=javax.swing.plaf.nimbus.NimbusLookAndFeel"
    app = App(["java", nimbus, str(source)], timeout=90.0, env={"HOME": str(tmp_path)})
    worker = OcrWorker(reader)
    try:
        with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:

            def look() -> list[Component]:
                desktop.wait_settled(timeout=10.0)
                seen = Perception(ocr=worker, first_look=60.0).perceive(desktop.screenshot())
                return list(seen.components)

            seen = until(look, _tabs_and_spinner, limit=30.0)
    finally:
        worker.close()
    tabs = sorted((c for c in seen if c.kind == "tab"), key=lambda c: c.box[0])
    assert [t.label for t in tabs] == ["General", "Advanced"], seen
    assert tabs[0].box[0] + tabs[0].box[2] <= tabs[1].box[0] + 2, seen
    _spin_arrows(seen)
